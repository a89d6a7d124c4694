/*
 * onnxcore/limits.h - every limit the library enforces on input, in one place.
 */
#ifndef ONNXCORE_LIMITS_H
#define ONNXCORE_LIMITS_H

#include <stdint.h>

/* Message nesting accepted by default when decoding (protobuf's default as well). The
 * root message is level 1. Raise it with oc_parse_options.max_depth. */
#define OC_DEFAULT_MAX_DEPTH 100u

/* Nesting is never accepted beyond this, whatever the options say: the decoder, encoder,
 * copier and tensor walk recurse on the C stack, and 1000 levels stay within 1 MiB of it
 * even in sanitizer builds. Real models nest a few dozen levels (subgraphs in subgraphs). */
#define OC_MAX_DEPTH_HARD 1000u

/* The largest size a struct that begins with its size (the options and infos of both
 * libraries: onnxcore/options.h, "Extending") may claim. A larger one is refused with
 * OC_ERR_INVALID_ARG before any byte past its size field is read: the bytes a caller's
 * struct has past what the library knows are checked to be zeros, and a size never set
 * (stack garbage) must not send that check reading far past the caller's struct. Today's
 * largest such struct is a few hundred bytes. */
#define OC_OPTIONS_MAX_SIZE 4096u

/* Sizes a load accepts, each adjustable in oc_parse_options (0 there means the default
 * here). By default there is no cap beyond the format's own: models of any size load, and
 * the memory a load takes follows from the sizes of the files it is given (a copying load
 * about the model's size plus its external data; a no_copy load little more than the
 * graph). A service loading models from strangers sets them to what it can afford;
 * exceeding one is OC_ERR_LIMIT, naming the option. */
/* The serialized model: the file, the buffer, or an archive's __MODEL_PROTO
 * (oc_parse_options.max_model_bytes). */
#define OC_DEFAULT_MAX_MODEL_BYTES UINT64_MAX
/* One tensor's payload: its raw_data, or its external data (max_tensor_bytes). */
#define OC_DEFAULT_MAX_TENSOR_BYTES UINT64_MAX
/* All the external data one load reads (max_external_bytes). */
#define OC_DEFAULT_MAX_EXTERNAL_BYTES UINT64_MAX

/* The memory a decode may take for what it builds (oc_parse_options.max_memory, spec
 * security.md M-1): the bytes the model's arena takes from the system for messages,
 * strings and repeated fields, plus an archive's __MODEL_PROTO when it has to be inflated
 * into memory. This is what the serialized size does not bound: a 2-byte empty tensor
 * decodes into a TensorProto of about 400 bytes, and deflate multiplies the input up to
 * 1,032 times. Tensor payloads are not counted (their bytes come from the file: mapped
 * with no_copy, else copied once; max_tensor_bytes and max_external_bytes bound them).
 * By default there is no cap, as for the sizes above: the library cannot know what the
 * process can afford; a service decoding models from strangers sets one (the onnxz tool
 * does: 1 GiB unless --max-memory says otherwise). Exceeding it is OC_ERR_LIMIT. */
#define OC_DEFAULT_MAX_MEMORY UINT64_MAX
/* The budget the faces of the libraries apply by default for max_memory (spec
 * security.md M-3): the onnxz tool (--max-memory) and the Python package (max_memory=)
 * decode and hold no more than this unless told otherwise. Defined here, once, so that
 * both refuse the same input: 1 GiB. */
#define OC_RECOMMENDED_MAX_MEMORY (UINT64_C(1) << 30)
/* The most a decode builds for each byte of its input (M-1), with room to spare: an empty
 * initializer, 2 bytes on the wire, decodes into a TensorProto of about 400. An input of
 * no more than max_memory / OC_DECODE_AMPLIFICATION bytes cannot pass the budget; a
 * caller that builds the model a second way (the Python package: protobuf, M-4) waits
 * for the budgeted decode's verdict first only for larger inputs. */
#define OC_DECODE_AMPLIFICATION 256

#endif
