/*
 * onnxcore/status.h - status codes and the error record every fallible call fills.
 *
 * Contract: a fallible function returns an oc_status; on failure it also fills the
 * caller-owned oc_error (if the pointer is not NULL) with the same code, the errno of a
 * failed system call (0 if none), the byte offset in the input where the problem was
 * found (or OC_NO_OFFSET), and a one-line message without a trailing newline.
 * The first error wins: a function never overwrites an error it did not cause.
 */
#ifndef ONNXCORE_STATUS_H
#define ONNXCORE_STATUS_H

#include "export.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed numbers, append-only: programs may store or compare them. */
typedef enum oc_status {
    OC_OK = 0,
    OC_ERR_NOMEM = 1,         /* an allocation failed */
    OC_ERR_IO = 2,            /* a system call failed: see sys_errno */
    OC_ERR_TRUNCATED = 3,     /* input ends inside a field, length or value */
    OC_ERR_MALFORMED = 4,     /* bytes that no valid encoding produces */
    OC_ERR_DEPTH = 5,         /* nesting deeper than the configured limit */
    OC_ERR_LIMIT = 6,         /* a size or count limit was exceeded */
    OC_ERR_INVALID_ARG = 7,   /* the caller passed something unusable */
    OC_ERR_NOT_FOUND = 8,     /* a named file, entry or tensor does not exist */
    OC_ERR_UNSUPPORTED = 9,   /* valid but not supported by this build */
    OC_ERR_UNSAFE_PATH = 10,  /* a path from a file would leave the model's directory */
    OC_ERR_CHECKSUM = 11,     /* stored and computed checksums differ */
    OC_ERR_CRYPTO = 12,       /* the crypto library failed */
    OC_ERR_BAD_KEY = 13,      /* wrong key or tampered ciphertext */
    OC_ERR_EXISTS = 14,       /* output exists and overwriting was not allowed */
    OC_ERR_INCONSISTENT = 15, /* parts of the input contradict each other */
    OC_ERR_BUSY = 16,         /* another process holds a lock the call needs: try again */
    OC_ERR_CANCELLED = 17     /* the caller's cancel callback asked to stop; nothing is at fault */
} oc_status;

#define OC_NO_OFFSET         UINT64_MAX
#define OC_ERROR_MESSAGE_MAX 244
#define OC_ERROR_RULE_MAX    8

/* The record is 272 bytes and its layout up to `message` never changes. rule, file_at and
 * file_len were added later in the last 12 bytes of what was a 256-byte message (reserved
 * fields carved from the end, not appended): a program built against the older header
 * allocates the same size, and still reads a NUL-terminated message there, while this
 * library never writes past the struct such a caller allocated. */
typedef struct oc_error {
    oc_status code;
    int sys_errno;                      /* errno of the failed system call, else 0 */
    uint64_t offset;                    /* input offset of the fault, or OC_NO_OFFSET */
    char message[OC_ERROR_MESSAGE_MAX]; /* one line, no trailing newline, for people */
    /* The spec rule the input breaks ("A-21", "Z-61"), NUL-terminated; "" when none. The
     * message ends with it in parentheses (before ": strerror" for a system call). */
    char rule[OC_ERROR_RULE_MAX];
    /* The file the error is about, as the message names it: message[file_at ..
     * file_at + file_len); file_len 0 when the message names no file. */
    uint16_t file_at;
    uint16_t file_len;
} oc_error;

/* err's message for a caller that prints the file's name itself ("FILE: " then this, as
 * the tool does): when the message names file (file_at, file_len), that name is left
 * out with the separator next to it ("cannot open FILE: why" gives "cannot open: why",
 * "FILE: why" gives "why", "FILE is ..." gives "is ..."); anything else, and any message
 * with file NULL or empty, is given as it is (the status name when the message is
 * empty). buf (at least OC_ERROR_MESSAGE_MAX bytes) receives the result when it has to be
 * assembled; the result points into err, buf or a static name. Never NULL. */
OC_API const char *oc_error_detail(const oc_error *err, const char *file, char *buf, size_t size);

/* A short stable name for a status ("truncated", "malformed", ...). Never NULL. */
OC_API const char *oc_status_name(oc_status status);

/* Resets an error record to OC_OK with an empty message. NULL is accepted. */
OC_API void oc_error_clear(oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Fills err (NULL is accepted) with code, offset (or OC_NO_OFFSET) and a printf-style
 * message kept to one line (line breaks become spaces); returns code. For libraries built
 * on this one (libonnxz) and for callers' own errors. */
OC_API oc_status oc_error_set(oc_error *err, oc_status code, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Records that err's message names file (the text the message holds, e.g. a path
 * or its quoted form; a URL as every message shows it, oc_path_shown): err->file_at and file_len point at its first occurrence that
 * stands as a word of its own (at the start or after a space, and followed by the end,
 * a space or ':'); nothing when the message does not hold it whole. Returns status, so
 * that a failing call can end `return oc_error_file(err, path, oc_error_set(err, ...))`.
 * err NULL is accepted. */
OC_API oc_status oc_error_file(oc_error *err, const char *file, oc_status status);

/* As oc_error_set for a failed system call: records errnum, appends ": strerror(errnum)",
 * and picks the code from errnum (ENOENT: OC_ERR_NOT_FOUND, EEXIST: OC_ERR_EXISTS,
 * ENOMEM: OC_ERR_NOMEM, else OC_ERR_IO). */
OC_API oc_status oc_error_set_errno(oc_error *err, int errnum, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The length of the well-formed UTF-8 sequence at data (n bytes available): 1 for ASCII,
 * 2 to 4 for a multi-byte one; 0 when it is not well formed (a stray continuation byte,
 * an overlong form, a surrogate, a value past U+10FFFF, or cut short by n). */
OC_API size_t oc_utf8_len(const void *data, uint64_t n);

/* The same for a multi-byte sequence that is safe to show as it is: 0 also for ASCII and
 * for the code points that act on the line around them (the C1 controls U+0080..U+009F,
 * the bidirectional controls U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069, and
 * the separators U+2028, U+2029), which oc_quote escapes. */
OC_API size_t oc_utf8_printable_len(const void *data, uint64_t n);
#endif

/* A buffer size for oc_quote that keeps a quoted string short: about 64 bytes of text, so
 * that a message of OC_ERROR_MESSAGE_MAX bytes holding one or two of them always has room
 * for the reason (the part a reader needs most). */
#define OC_QUOTE_SIZE 72

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Renders `size` bytes of untrusted text (a tensor name, a location, an entry name, a key
 * or value read from a file) for a message or a line of output, and returns out: printable
 * ASCII is kept, except `\`; well-formed UTF-8 sequences are kept, except those that act
 * on the line around them: the C1 controls U+0080..U+009F, the bidirectional controls
 * (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and U+2028, U+2029; every
 * other byte (control bytes, NUL, DEL, `\`, bytes that are not well-formed UTF-8, and
 * each byte of those sequences) becomes `\xNN` (lower-case hex). So the rendering is one line, holds
 * no byte a terminal acts on, is never cut by a NUL, and tells every input apart.
 *
 * out receives at most out_size bytes including the terminating NUL; when the whole
 * rendering does not fit, it ends with "..." after the longest prefix that fits (an
 * escape or a UTF-8 sequence is never split). out_size < 4 gives "" (or NULL out: nothing
 * written, NULL returned). data may be NULL when size is 0. Uses no allocation; safe to
 * call from any thread. OC_QUOTE_SIZE is the size every message of these libraries uses. */
OC_API const char *oc_quote(const void *data, uint64_t size, char *out, size_t out_size);
#endif

#ifdef __cplusplus
}
#endif

#endif
