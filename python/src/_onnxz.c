/*
 * python/src/_onnxz.c - the onnxz extension module: the C libraries' load, save, convert
 * and random access, for the Python layer in onnxz/__init__.py.
 *
 *   _load(src, load_external_data, key, data_dir) -> (skeleton, pieces): a serialized
 *                                                  ModelProto, its large initializers'
 *                                                  bytes apart
 *   _save(model_bytes, path, opts[, tensors, sizes]) writes any form, streaming the
 *                                                  weights of tensors when given
 *   _convert(src, dst, opts, key)                  as `onnxz convert`
 *   _Reader(path, key)                             an open file: names, tensors, model
 *   _Span                                          read-only bytes exported through the
 *                                                  buffer protocol, kept alive by the
 *                                                  owner token of the mapping they lie in
 *   Error                                          onnxz.Error (a ValueError)
 *
 * Every long call runs without the GIL. Python objects are never touched then: inputs are
 * copied into C values (paths as UTF-8 char *, bytes held by the caller's reference) first;
 * the one exception, a save streaming a ModelProto's weights, takes the GIL back for each
 * tensor's bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/http.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/onnxz.h>

#include "fault.h" /* fault.c: SIGBUS in our mappings (S-42) */

static PyObject *onnxz_error; /* onnxz.Error */

/* ---- errors -------------------------------------------------------------------- */

/* exc.name = value (a new reference, stolen; NULL: the error already set). */
static int set_attr(PyObject *exc, const char *name, PyObject *value) {
    int r;
    if (!value) return -1;
    r = PyObject_SetAttrString(exc, name, value);
    Py_DECREF(value);
    return r;
}

/* Raises for a failed call on file: OSError (with errno) for a failed system call,
 * MemoryError for OC_ERR_NOMEM, else onnxz.Error with .status (the status name), .code,
 * .file, .offset (None when there is none), .rule (the spec rule broken, err->rule: "A-21";
 * None when none) and the tool's one-line message "FILE: MESSAGE (at offset N)".
 * Returns NULL. */
static PyObject *raise_error(const char *file, const oc_error *err) {
    char buf[OC_ERROR_MESSAGE_MAX + 16], line[OC_ERROR_MESSAGE_MAX * 2 + 4200], shown[4096];
    const char *msg;
    PyObject *exc, *val, *text;
    if (PyErr_Occurred()) return NULL; /* a signal handler's (http_cancelled): it stands */
    /* A signal cut a system call short (a FIFO's open, Ctrl-C): what its handler raises
     * (KeyboardInterrupt) is the error, as in Python's own calls (PEP 475) */
    if (err->sys_errno == EINTR && PyErr_CheckSignals() != 0) return NULL;
    if (file) file = oc_path_shown(file, shown, sizeof shown); /* no password (N-2) */
    msg = oc_error_detail(err, file, buf, sizeof buf);         /* as the tool prints it */
    if (file)
        snprintf(line, sizeof line, "%.4096s: %s", file, msg);
    else
        snprintf(line, sizeof line, "%s", msg);
    if (err->code == OC_ERR_NOMEM) return PyErr_NoMemory();
    if (err->offset != OC_NO_OFFSET) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, " (at offset %llu)", (unsigned long long)err->offset);
    }
    /* What a file or a server says may not be UTF-8 (a path, an ETag): shown escaped */
    text = PyUnicode_DecodeUTF8(line, (Py_ssize_t)strlen(line), "backslashreplace");
    if (!text) return NULL;
    if (err->sys_errno != 0 &&
        (err->code == OC_ERR_IO || err->code == OC_ERR_NOT_FOUND || err->code == OC_ERR_EXISTS)) {
        val = Py_BuildValue("(iNN)", err->sys_errno, text,
                            file ? PyUnicode_DecodeFSDefault(file) : Py_NewRef(Py_None));
        if (val) PyErr_SetObject(PyExc_OSError, val);
        Py_XDECREF(val);
        return NULL;
    }
    exc = PyObject_CallFunctionObjArgs(onnxz_error, text, NULL);
    Py_DECREF(text);
    if (!exc) return NULL;
    if (set_attr(exc, "status", PyUnicode_FromString(oc_status_name(err->code))) < 0 ||
        set_attr(exc, "code", PyLong_FromLong(err->code)) < 0 ||
        set_attr(exc, "file", file ? PyUnicode_DecodeFSDefault(file) : Py_NewRef(Py_None)) < 0 ||
        set_attr(exc, "offset",
                 err->offset == OC_NO_OFFSET ? Py_NewRef(Py_None)
                                             : PyLong_FromUnsignedLongLong(err->offset)) < 0 ||
        set_attr(exc, "rule", err->rule[0] ? PyUnicode_FromString(err->rule) : Py_NewRef(Py_None)) <
            0) {
        Py_DECREF(exc);
        return NULL;
    }
    PyErr_SetObject(onnxz_error, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- arguments ----------------------------------------------------------------- */

/* A path (str, bytes or os.PathLike) as a bytes object holding its file-system encoding. */
static int path_arg(PyObject *obj, PyObject **out) { return PyUnicode_FSConverter(obj, out); }

/* An optional key: None, str (UTF-8) or bytes-like. Fills *view (buf NULL for None);
 * release with PyBuffer_Release when buf is set. */
static int key_arg(PyObject *obj, Py_buffer *view, PyObject **holder) {
    memset(view, 0, sizeof *view);
    *holder = NULL;
    if (obj == Py_None) return 0;
    if (PyUnicode_Check(obj)) {
        *holder = PyUnicode_AsUTF8String(obj);
        if (!*holder) return -1;
        obj = *holder;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        Py_CLEAR(*holder);
        return -1;
    }
    return 0;
}

static void key_release(Py_buffer *view, PyObject **holder) {
    if (view->obj) PyBuffer_Release(view);
    Py_CLEAR(*holder);
}

/* ---- HTTP settings ----------------------------------------------------------------- */

/* The library's cancel (oc_http_options.cancel, oz_unpack_options.cancel), asked on the
 * calling thread while a request or an unpack runs without the GIL: takes the GIL and runs
 * Python's signal handlers, so that Ctrl-C during a long network read or unpack raises
 * KeyboardInterrupt (spec/security.md N-6). The handler's exception stays set; the call
 * then fails and raise_error passes it on. */
static int http_cancelled(void *ctx) {
    PyGILState_STATE g = PyGILState_Ensure();
    /* A handler's exception raised at an earlier poll of this call still stands: a
     * library that went on after that poll (a read it retries another way) stops now. */
    int stop = PyErr_CheckSignals() < 0 || PyErr_Occurred() != NULL;
    (void)ctx;
    PyGILState_Release(g);
    return stop;
}

static const char *env_lookup(void *ctx, const char *name) {
    (void)ctx;
    return getenv(name);
}

#define URL_S3 1
#define URL_HF 2

/* Which of URL_S3 and URL_HF the path p is (0: neither). */
static int url_kind(const char *p) {
    switch (oc_url_scheme_of(p)) {
    case OC_URL_S3:
        return URL_S3;
    case OC_URL_HF:
        return URL_HF;
    default:
        return 0;
    }
}

/* The url_kind of each of the first n items of args that is a path (str, bytes or
 * os.PathLike), or'ed; one that is not is left to the call's own parsing to refuse. */
static int url_kinds(PyObject *args, Py_ssize_t n) {
    int kinds = 0;
    for (Py_ssize_t i = 0; i < n && i < PyTuple_Size(args); i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(args, i), &b)) {
            PyErr_Clear();
            continue;
        }
        kinds |= url_kind(PyBytes_AS_STRING(b));
        Py_DECREF(b);
    }
    return kinds;
}

/* Fills *o with the settings of every load of a URL, from the user's environment as the
 * tool reads it (oc_http_options_parse: onnxz.open's documentation), read at each call so
 * that a change of os.environ counts from the next open; -1 with onnxz.Error set for a bad
 * value. AWS's settings and files are read only when kinds holds URL_S3 (a path of the
 * call is an s3:// URL), the hub's for URL_HF: a broken ~/.aws or token file never
 * touches a call on local files (spec/remote.md R-20). Call with the GIL held (os.environ
 * is changed under it); the strings are the environment's, which setenv and unsetenv
 * never free. */
static int http_settings(oc_http_options *o, int kinds) {
    oc_error err;
    oc_error_clear(&err);
    oc_s3_options *s3 = NULL;
    oc_hf_options *hf = NULL;
    /* s3:// URLs: AWS's settings as its own tools find them (oc_s3_options_load); hf://
     * URLs: the hub's (oc_hf_options_load); copies that http_settings_release frees */
    if (oc_http_options_parse(o, env_lookup, NULL, &err) != OC_OK ||
        ((kinds & URL_S3) && oc_s3_options_load(&s3, env_lookup, NULL, &err) != OC_OK) ||
        ((kinds & URL_HF) && oc_hf_options_load(&hf, env_lookup, NULL, &err) != OC_OK)) {
        oc_s3_options_free(s3);
        raise_error(NULL, &err);
        return -1;
    }
    o->s3 = s3;
    o->hf = hf;
    o->cancel = http_cancelled;
    return 0;
}

/* Frees what http_settings loaded into o (the S3 and hub settings). */
static void http_settings_release(oc_http_options *o) {
    oc_s3_options_free((oc_s3_options *)(uintptr_t)o->s3);
    oc_hf_options_free((oc_hf_options *)(uintptr_t)o->hf);
    o->s3 = NULL;
    o->hf = NULL;
}

/* ---- writing into a bytes object of the size announced --------------------------- */

typedef struct sink {
    char *data;
    uint64_t size, used;
    const char *what; /* who writes, for the message when it breaks its word */
} sink;

static oc_status sink_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    sink *s = ctx;
    if (size > s->size - s->used)
        return oc_error_set(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                            "%s gave more than the %llu bytes announced", s->what,
                            (unsigned long long)s->size);
    memcpy(s->data + s->used, data, size);
    s->used += size;
    return OC_OK;
}

/* st, or the error of a sink left short of the size announced. */
static oc_status sink_end(const sink *s, oc_status st, oc_error *err) {
    if (st == OC_OK && s->used != s->size)
        st = oc_error_set(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                          "%s gave %llu of the %llu bytes announced", s->what,
                          (unsigned long long)s->used, (unsigned long long)s->size);
    return st;
}

/* The model serialized into a new bytes object (one pass to size it, one to write it
 * in place: no second copy). */
static PyObject *model_to_bytes(const oc_model *model, const char *file) {
    const onnx_ModelProto *m = oc_model_proto_const(model);
    uint64_t size = 0;
    oc_error err;
    oc_status st;
    PyObject *out;
    sink s;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oc_encoded_size(&onnx_ModelProto_desc, m, &size, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK) return raise_error(file, &err);
    if (size > (uint64_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) return NULL;
    s.data = PyBytes_AS_STRING(out);
    s.size = size;
    s.used = 0;
    s.what = "the model's encoding (did it change meanwhile?)";
    Py_BEGIN_ALLOW_THREADS
        st = oc_encode(&onnx_ModelProto_desc, m, sink_write, &s, &err);
    Py_END_ALLOW_THREADS
    st = sink_end(&s, st, &err);
    if (st != OC_OK) {
        Py_DECREF(out);
        return raise_error(file, &err);
    }
    return out;
}

/* fault.c's error (S-42): the file under a mapping was cut or rewritten in place. */
static int raise_cut(const char *path) {
    oc_error err;
    oc_error_set(&err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                 "the file was cut or rewritten in place while mapped (S-42): arrays from it "
                 "read zeros past its new end; replace files by a rename (as onnxz saves), "
                 "or copy what you keep (numpy.array(f[name]))");
    raise_error(path, &err);
    return -1;
}

/* Leaves a fault scope (fault.h): 1 when a file the call read was cut meanwhile (S-42),
 * the cut then raised in place of whatever the call raised from the zeros it read. */
static int left_cut(onnxz_fault_scope *scope) {
    if (!onnxz_fault_leave(scope)) return 0;
    PyErr_Clear();
    raise_cut(scope->path);
    return 1;
}

/* ---- _load ------------------------------------------------------------------------ */

static PyObject *model_split(oc_model *model, const char *file);

/* _load(path, load_external_data, key, data_dir, max_memory, prefetch) -> (skeleton, pieces)
 * (model_split): the model of a file in any form (oz_open, which reads a .onnx file and
 * its data files under their pair lock, E-25), its external data read in unless
 * load_external_data is false: a .onnx file's tensors then say data_location DEFAULT, as
 * onnx.load leaves them. max_memory: the budget of the decode (M-1, M-2); prefetch:
 * oc_parse_options.prefetch. */
static PyObject *load_with(oc_http_options *http, PyObject *args);

static PyObject *py_load(PyObject *self, PyObject *args) {
    oc_http_options http = OC_HTTP_OPTIONS_INIT;
    (void)self;
    if (http_settings(&http, url_kinds(args, 1)) < 0) return NULL;
    PyObject *out = load_with(&http, args);
    http_settings_release(&http);
    return out;
}

static PyObject *load_with(oc_http_options *http, PyObject *args) {
    PyObject *path_obj, *key_obj, *dir_obj, *path = NULL, *dir = NULL, *key_holder = NULL, *out;
    PyObject *trust_obj = Py_None, *trust = NULL;
    int external, prefetch = 0;
    unsigned long long max_memory = OC_RECOMMENDED_MAX_MEMORY;
    Py_buffer key;
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_model *model = NULL;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    o.parse.http = http;
    if (!PyArg_ParseTuple(args, "OpOO|KpO", &path_obj, &external, &key_obj, &dir_obj, &max_memory,
                          &prefetch, &trust_obj))
        return NULL;
    if (!path_arg(path_obj, &path)) return NULL;
    if ((dir_obj != Py_None && !path_arg(dir_obj, &dir)) ||
        (trust_obj != Py_None && !path_arg(trust_obj, &trust))) {
        Py_DECREF(path);
        Py_XDECREF(dir);
        return NULL;
    }
    if (key_arg(key_obj, &key, &key_holder) < 0) {
        Py_DECREF(path);
        Py_XDECREF(dir);
        Py_XDECREF(trust);
        return NULL;
    }
    o.trust = trust ? PyBytes_AS_STRING(trust) : NULL; /* spec/signing.md G-55 */
    o.parse.no_copy = 1; /* the bytes go from the mapping to the serialized model once */
    o.parse.data_dir = dir ? PyBytes_AS_STRING(dir) : NULL;
    o.parse.max_memory = max_memory;
    o.parse.prefetch = prefetch;
    o.parse.skip_external_data = !external;
    o.key = key.buf;
    o.key_len = (size_t)key.len;
    oc_error_clear(&err);
    onnxz_fault_enter(&scope);
    Py_BEGIN_ALLOW_THREADS
        oz_kind kind = OZ_KIND_MODEL;
        if (oz_detect_path(PyBytes_AS_STRING(path), http, &kind, NULL) != OC_OK)
            kind = OZ_KIND_MODEL;
        o.parse.loaded_location_default = kind == OZ_KIND_MODEL; /* an archive's: as converted */
        st = oz_open(PyBytes_AS_STRING(path), &o, &model, &info, &err);
    Py_END_ALLOW_THREADS
    key_release(&key, &key_holder);
    out = st == OC_OK ? model_split(model, PyBytes_AS_STRING(path))
                      : raise_error(PyBytes_AS_STRING(path), &err);
    if (left_cut(&scope)) Py_CLEAR(out);
    Py_BEGIN_ALLOW_THREADS
        oc_model_free(model);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    Py_XDECREF(dir);
    Py_XDECREF(trust);
    return out;
}

/* _load_memory(data, load_external_data, data_dir, max_memory) -> bytes: a serialized
 * model in memory (re-encoded, so that what comes back is what onnx.load gives), its
 * external data read from data_dir when given and load_external_data (data_location
 * DEFAULT then, as onnx.load leaves it). */
static PyObject *py_load_memory(PyObject *self, PyObject *args) {
    PyObject *dir_obj, *dir = NULL, *out;
    Py_buffer data;
    int external;
    unsigned long long max_memory = OC_RECOMMENDED_MAX_MEMORY;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_model *model = NULL;
    oc_error err;
    oc_status st;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*pO|K", &data, &external, &dir_obj, &max_memory)) return NULL;
    if (dir_obj != Py_None && !path_arg(dir_obj, &dir)) {
        PyBuffer_Release(&data);
        return NULL;
    }
    po.no_copy = 1;
    po.data_dir = dir ? PyBytes_AS_STRING(dir) : NULL;
    po.skip_external_data = !(external && dir);
    po.loaded_location_default = 1;
    po.max_memory = max_memory;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oc_model_load_memory(data.buf, (uint64_t)data.len, &po, &model, &err);
    Py_END_ALLOW_THREADS
    out = st == OC_OK ? model_to_bytes(model, NULL) : raise_error(NULL, &err);
    oc_model_free(model);
    PyBuffer_Release(&data);
    Py_XDECREF(dir);
    return out;
}

/* ---- saving: the library's oz_save, its options from Python's keywords ---------------- */

typedef struct save_opts {
    oz_save_options o;
    unsigned long long max_memory; /* the budget of the decode before the save (M-1) */
    Py_buffer key;
    PyObject *key_holder, *external_holder;
} save_opts;

/* An optional byte count: None (not given) or an int of 0 or more. */
static int size_arg(PyObject *obj, const char *name, bool *given, uint64_t *value) {
    *given = obj != Py_None;
    if (!*given) return 0;
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "onnxz: %s must be an int, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *value = PyLong_AsUnsignedLongLong(obj);
    if (!PyErr_Occurred()) return 0;
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "onnxz: %s must be from 0 to 2**64-1", name);
    return -1;
}

/* opts: (to or None, external_data or None, max_file_size, align, threshold (each None or
 * an int), checksum, deflate_model, key or None, sync, max_memory), as save() and convert()
 * take them;
 * their rules are the library's (oz_save_check). Release with save_opts_release. */
static int save_opts_parse(PyObject *tuple, save_opts *s) {
    PyObject *to, *ext, *mfs, *align, *threshold, *key;
    int checksum, deflate_model, sync;
    memset(s, 0, sizeof *s);
    oz_save_options_init(&s->o);
    s->max_memory = OC_RECOMMENDED_MAX_MEMORY;
    if (!PyArg_ParseTuple(tuple, "OOOOOppOp|K", &to, &ext, &mfs, &align, &threshold, &checksum,
                          &deflate_model, &key, &sync, &s->max_memory))
        return -1;
    s->o.max_memory = s->max_memory; /* the writer's budget too (M-5) */
    if (to != Py_None && (!PyUnicode_Check(to) ||
                          (s->o.form = oz_form_parse(PyUnicode_AsUTF8(to))) == OZ_FORM_AUTO)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "onnxz: to=%R: give 'onnx', 'onnxz' or 'onnxc'", to);
        return -1;
    }
    s->o.no_sync = !sync;
    s->o.checksum = checksum;
    s->o.deflate_model = deflate_model;
    if (size_arg(mfs, "max_file_size", &s->o.has_max_file_size, &s->o.max_file_size) < 0 ||
        size_arg(align, "align", &s->o.has_align, &s->o.align) < 0 ||
        size_arg(threshold, "threshold", &s->o.has_threshold, &s->o.threshold) < 0)
        return -1;
    if (ext != Py_None) {
        if (!path_arg(ext, &s->external_holder)) return -1;
        s->o.external_data = PyBytes_AS_STRING(s->external_holder);
    }
    if (key_arg(key, &s->key, &s->key_holder) < 0) {
        Py_CLEAR(s->external_holder);
        return -1;
    }
    s->o.key = s->key.buf;
    s->o.key_len = (size_t)s->key.len;
    return 0;
}

static void save_opts_release(save_opts *s) {
    key_release(&s->key, &s->key_holder);
    Py_CLEAR(s->external_holder);
}

/* convert's one passphrase is IN's, and OUT's only where OUT's form asks for a key (a
 * .onnxc OUT, as oz_save_check_before_key finds it): elsewhere the library refuses a key,
 * which would not encrypt. The check's verdict is not wanted here: the caller's
 * oz_save_check (or oz_convert_file) gives it, with the key settled. */
static void convert_out_key(const char *out, save_opts *s) {
    oz_form form = OZ_FORM_AUTO;
    const void *key = s->o.key;
    s->o.key = NULL;
    (void)oz_save_check_before_key(out, &s->o, &form, NULL, NULL);
    if (form == OZ_FORM_ONNXC)
        s->o.key = key;
    else
        s->o.key_len = 0;
}

/* _save_check(path, opts[, convert]): raises onnxz.Error as the save (or with convert, the
 * conversion) would for its options, before anything is done: .file is path, or the URL
 * the library refuses to write. */
static PyObject *py_save_check(PyObject *self, PyObject *args) {
    PyObject *path_obj, *opts_obj, *path = NULL, *out = NULL;
    int convert = 0;
    save_opts s;
    oc_error err;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO|p", &path_obj, &opts_obj, &convert) ||
        !path_arg(path_obj, &path))
        return NULL;
    oc_http_options http = OC_HTTP_OPTIONS_INIT; /* an s3:// path: the save will have them */
    if (save_opts_parse(opts_obj, &s) == 0) {
        s.o.http = &http;
        if (convert) convert_out_key(PyBytes_AS_STRING(path), &s);
        oc_error_clear(&err);
        if (oz_save_check(PyBytes_AS_STRING(path), &s.o, NULL, NULL, &err) != OC_OK) {
            char file[OC_ERROR_MESSAGE_MAX];
            snprintf(file, sizeof file, "%.*s", (int)err.file_len, err.message + err.file_at);
            raise_error(err.file_len ? file : PyBytes_AS_STRING(path), &err);
        } else
            out = Py_NewRef(Py_None);
        save_opts_release(&s);
    }
    Py_DECREF(path);
    return out;
}

/* ---- a save that streams the weights out of the ModelProto --------------------------- */

/* onnxz.save of an onnx.ModelProto does not serialize the whole model (a copy of all its
 * weights): the Python layer encodes it without the raw_data of its large initializers,
 * each replaced by a marker reference (EXTERNAL, one external_data entry: location "\0"
 * and its index, which no file name can be), and passes those TensorProtos. The save
 * streams each one's bytes from its raw_data when it reaches it (oc_serialize_options.
 * fetch), taking the GIL for that moment only, so that the bytes of one tensor at a time
 * are copied out of the model. A marker tensor resolves as a loaded reference does (E-16):
 * the files are byte for byte those of the whole model serialized. */
typedef struct weights {
    PyObject *tensors; /* tuple of onnx.TensorProto, by marker index (our own: the
                              * caller's list may change while the GIL is released) */
    uint64_t *sizes;   /* the byte count of each one's raw_data */
    Py_ssize_t count;
    unsigned char *seen; /* markers met in the decoded skeleton */
    PyObject *exc[3];    /* an exception raised taking a tensor's bytes (Ctrl-C's
                              * KeyboardInterrupt, or any other), re-raised after */
} weights;

/* The marker index of an EXTERNAL tensor, or -1 for a reference the model holds itself. */
static Py_ssize_t marker_index(const weights *w, const onnx_TensorProto *t) {
    if (t->external_data.count != 1) return -1;
    const onnx_StringStringEntryProto *e = t->external_data.items[0];
    if (e->key.size != 8 || memcmp(e->key.data, "location", 8) != 0 || e->value.size < 2 ||
        e->value.size > 20 || e->value.data[0] != '\0')
        return -1;
    uint64_t i = 0;
    for (uint64_t k = 1; k < e->value.size; k++) {
        if (e->value.data[k] < '0' || e->value.data[k] > '9') return -1;
        i = i * 10 + (uint64_t)(e->value.data[k] - '0');
    }
    return i < (uint64_t)w->count ? (Py_ssize_t)i : -1;
}

/* oc_msg_visit_tensors: every reference is a marker, met once (else OC_ERR_NOT_FOUND: the
 * model holds references of its own, which a save keeps as they are, so the caller falls
 * back to the serialized model). */
static oc_status check_marker(void *ctx, onnx_TensorProto *t) {
    weights *w = ctx;
    if (!oc_tensor_is_external(t)) return OC_OK;
    Py_ssize_t i = marker_index(w, t);
    if (i < 0 || w->seen[i]) return OC_ERR_NOT_FOUND;
    w->seen[i] = 1;
    return OC_OK;
}

static oc_status not_a_marker(oc_error *err) {
    return oc_error_set(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "internal error: a reference that is not a streamed tensor");
}

static oc_status weights_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *err) {
    Py_ssize_t i = marker_index(ctx, t);
    if (i < 0) return not_a_marker(err);
    *n = ((weights *)ctx)->sizes[i];
    return OC_OK;
}

static oc_status weights_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write,
                                void *write_ctx, oc_error *err) {
    weights *w = ctx;
    Py_ssize_t i = marker_index(w, t);
    PyObject *raw = NULL;
    oc_status st;
    if (i < 0) return not_a_marker(err);
    PyGILState_STATE gil = PyGILState_Ensure();
    if (PyErr_CheckSignals() == 0)
        raw = PyObject_GetAttrString(PyTuple_GET_ITEM(w->tensors, i), "raw_data");
    if (!raw) {
        PyErr_Fetch(&w->exc[0], &w->exc[1], &w->exc[2]);
        PyGILState_Release(gil);
        return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "interrupted");
    }
    if (!PyBytes_Check(raw) || (uint64_t)PyBytes_GET_SIZE(raw) != w->sizes[i]) {
        char name[OC_QUOTE_SIZE];
        Py_DECREF(raw);
        PyGILState_Release(gil);
        return oc_error_set(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                            "tensor '%s' changed while the model was being saved",
                            oc_quote(t->name.data, t->name.size, name, sizeof name));
    }
    PyGILState_Release(gil);
    st = write(write_ctx, PyBytes_AS_STRING(raw), w->sizes[i], err);
    gil = PyGILState_Ensure();
    Py_DECREF(raw);
    PyGILState_Release(gil);
    return st;
}

/* Decodes a serialized model in place (no copy of its tensors) and writes it; with w, the
 * marker tensors' bytes streamed from w (*fell_back set, nothing written, when the model
 * holds references of its own). Call without the GIL. */
static oc_status save_serialized(const Py_buffer *data, const char *path, save_opts *s, weights *w,
                                 int *fell_back, oc_error *err) {
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_tensor_fetch fetch = {weights_size, weights_stream, w};
    oc_model *model = NULL;
    po.no_copy = 1;
    po.skip_external_data = 1; /* references in the ModelProto are written as they are */
    po.max_memory = s->max_memory;
    oc_status st = oc_model_load_memory(data->buf, (uint64_t)data->len, &po, &model, err);
    if (st == OC_OK && w) {
        st = oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), check_marker, w);
        for (Py_ssize_t i = 0; st == OC_OK && i < w->count; i++)
            if (!w->seen[i]) st = OC_ERR_NOT_FOUND;
        if (st != OC_OK) {
            *fell_back = 1;
            oc_model_free(model);
            return OC_OK;
        }
    }
    s->o.no_overwrite = 0; /* Python's save replaces, as onnx.save does */
    s->o.fetch = w ? &fetch : NULL;
    if (st == OC_OK) st = oz_save(model, path, &s->o, err);
    oc_model_free(model);
    return st;
}

/* w over a tuple of tensors, its sizes from a list of ints; -1 with an exception set.
 * Free w->sizes, w->seen (PyMem_Free) and w->tensors either way. */
static int weights_init(weights *w, PyObject *tensors, PyObject *sizes) {
    memset(w, 0, sizeof *w);
    if (!PyList_Check(sizes) || !(w->tensors = PySequence_Tuple(tensors))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_save: sizes must be a list");
        return -1;
    }
    if (PyTuple_GET_SIZE(w->tensors) != PyList_GET_SIZE(sizes)) {
        PyErr_SetString(PyExc_TypeError, "_save: tensors and sizes must be of one length");
        return -1;
    }
    w->count = PyTuple_GET_SIZE(w->tensors);
    w->sizes = PyMem_Calloc((size_t)w->count + 1, sizeof *w->sizes);
    w->seen = PyMem_Calloc((size_t)w->count + 1, 1);
    if (!w->sizes || !w->seen) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < w->count; i++) {
        w->sizes[i] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(sizes, i));
        if (PyErr_Occurred()) return -1;
    }
    return 0;
}

/* _save(model_bytes, path, opts[, tensors, sizes]) -> bool: writes the serialized model;
 * with tensors (a list of TensorProto) and sizes, model_bytes is a skeleton whose marker
 * references stand for their raw_data (above). False, and nothing written, when the
 * skeleton also holds references of the model's own: the caller saves it serialized. */
static PyObject *py_save(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *path_obj, *opts_obj, *tensors = Py_None, *sizes = Py_None, *path = NULL;
    PyObject *result = NULL;
    save_opts s;
    weights w;
    oc_error err;
    oc_status st;
    int fell_back = 0;
    oc_http_options http = OC_HTTP_OPTIONS_INIT;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*OO|OO", &data, &path_obj, &opts_obj, &tensors, &sizes))
        return NULL;
    memset(&w, 0, sizeof w);
    if (!path_arg(path_obj, &path)) goto done;
    if (tensors != Py_None && weights_init(&w, tensors, sizes) < 0) goto done;
    if (save_opts_parse(opts_obj, &s) < 0) goto done;
    /* an s3:// path is written with the environment's S3 settings, as the tool does */
    if (http_settings(&http, url_kind(PyBytes_AS_STRING(path))) < 0) {
        save_opts_release(&s);
        goto done;
    }
    s.o.http = &http;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = save_serialized(&data, PyBytes_AS_STRING(path), &s, tensors != Py_None ? &w : NULL,
                             &fell_back, &err);
    Py_END_ALLOW_THREADS
    save_opts_release(&s);
    http_settings_release(&http);
    if (w.exc[0])
        PyErr_Restore(w.exc[0], w.exc[1], w.exc[2]); /* the save left nothing */
    else if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(path), &err);
    else
        result = PyBool_FromLong(!fell_back);
done:
    PyMem_Free(w.sizes);
    PyMem_Free(w.seen);
    Py_XDECREF(w.tensors);
    Py_XDECREF(path);
    PyBuffer_Release(&data);
    return result;
}

/* _convert(src, dst, opts, src_key, data_dir, trust): `onnxz convert SRC DST` with the
 * same options, overwriting DST (oz_convert_file); returns whether SRC was signed
 * (oz_convert_info.in_signed). */
static PyObject *convert_with(oc_http_options *http, PyObject *args);

static PyObject *py_convert(PyObject *self, PyObject *args) {
    oc_http_options http = OC_HTTP_OPTIONS_INIT;
    (void)self;
    if (http_settings(&http, url_kinds(args, 2)) < 0) return NULL;
    PyObject *out = convert_with(&http, args);
    http_settings_release(&http);
    return out;
}

static PyObject *convert_with(oc_http_options *http, PyObject *args) {
    PyObject *src_obj, *dst_obj, *opts_obj, *key_obj, *dir_obj, *src = NULL, *dst = NULL,
                                                                *dir = NULL, *holder = NULL;
    PyObject *trust_obj = Py_None, *trust = NULL;
    PyObject *out = NULL;
    Py_buffer key;
    save_opts s;
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_convert_info info = OZ_CONVERT_INFO_INIT;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    o.parse.http = http;
    if (!PyArg_ParseTuple(args, "OOOOO|O", &src_obj, &dst_obj, &opts_obj, &key_obj, &dir_obj,
                          &trust_obj))
        return NULL;
    if (!path_arg(src_obj, &src) || !path_arg(dst_obj, &dst) ||
        (dir_obj != Py_None && !path_arg(dir_obj, &dir)) ||
        (trust_obj != Py_None && !path_arg(trust_obj, &trust)))
        goto done;
    o.trust = trust ? PyBytes_AS_STRING(trust) : NULL; /* the input's signature, first */
    if (key_arg(key_obj, &key, &holder) < 0) goto done;
    if (save_opts_parse(opts_obj, &s) < 0) {
        key_release(&key, &holder);
        goto done;
    }
    s.o.no_overwrite = 0; /* as save: OUT is replaced */
    s.o.http = http;      /* an s3:// OUT: a multipart upload (spec/remote.md R-21) */
    convert_out_key(PyBytes_AS_STRING(dst), &s);
    o.parse.data_dir = dir ? PyBytes_AS_STRING(dir) : NULL;
    o.parse.max_memory = s.max_memory;
    o.key = key.buf;
    o.key_len = (size_t)key.len;
    oc_error_clear(&err);
    onnxz_fault_enter(&scope);
    Py_BEGIN_ALLOW_THREADS
        st = oz_convert_file(PyBytes_AS_STRING(src), PyBytes_AS_STRING(dst), &o, &s.o, &info, &err);
    Py_END_ALLOW_THREADS
    save_opts_release(&s);
    key_release(&key, &holder);
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(info.input_failed ? src : dst), &err);
    else /* whether src was signed (dst is not): the package says so */
        out = Py_NewRef(info.in_signed ? Py_True : Py_False);
    if (left_cut(&scope)) Py_CLEAR(out);
done:
    Py_XDECREF(src);
    Py_XDECREF(dst);
    Py_XDECREF(dir);
    Py_XDECREF(trust);
    return out;
}

/* _stub(archive, out, force, sync, max_memory): oz_stub_file (onnxz/stub.h). */
static PyObject *py_stub(PyObject *self, PyObject *args) {
    PyObject *archive_obj, *out_obj, *archive = NULL, *out = NULL, *result = NULL;
    int force, sync;
    unsigned long long max_memory;
    oz_stub_options o = OZ_STUB_OPTIONS_INIT;
    oz_stub_info info = OZ_STUB_INFO_INIT;
    oc_error err;
    oc_status st;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOppK", &archive_obj, &out_obj, &force, &sync, &max_memory))
        return NULL;
    if (!path_arg(archive_obj, &archive) || !path_arg(out_obj, &out)) goto done;
    o.no_overwrite = !force;
    o.no_sync = !sync;
    o.max_memory = max_memory;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_stub_file(PyBytes_AS_STRING(archive), PyBytes_AS_STRING(out), &o, &info, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(info.input_failed ? archive : out), &err);
    else
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(archive);
    Py_XDECREF(out);
    return result;
}

/* The report of oz_sign / oz_signature_verify as a dict. */
static PyObject *signature_report(const oz_signature_report *r) {
    return Py_BuildValue("{s:O,s:s,s:s,s:s,s:K,s:K,s:s}", "in_archive",
                         r->in_archive ? Py_True : Py_False, "location", r->location, "key_type",
                         r->key_type, "key_fingerprint", r->key_fingerprint, "parts",
                         (unsigned long long)r->parts, "bytes", (unsigned long long)r->bytes,
                         "model_digest", r->model_digest);
}

/* _sign(path, key_path, passphrase or None, signature_path or None, verify): oz_sign, or
 * with verify oz_signature_verify (key_path: the trusted public key); returns the report. */
static PyObject *py_sign(PyObject *self, PyObject *args) {
    PyObject *path_obj, *key_obj, *pass_obj, *sig_obj, *path = NULL, *key = NULL, *sig = NULL,
                                                       *holder = NULL, *result = NULL;
    int verify;
    Py_buffer pass;
    oz_sign_options o = OZ_SIGN_OPTIONS_INIT;
    oz_signature_report *r = NULL;
    oc_error err;
    oc_status st;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOp", &path_obj, &key_obj, &pass_obj, &sig_obj, &verify))
        return NULL;
    if (key_arg(pass_obj, &pass, &holder) < 0) return NULL;
    if (!path_arg(path_obj, &path) || !path_arg(key_obj, &key)) goto done;
    if (sig_obj != Py_None && !path_arg(sig_obj, &sig)) goto done;
    o.passphrase = pass.buf;
    o.passphrase_len = (size_t)pass.len;
    o.signature_path = sig ? PyBytes_AS_STRING(sig) : NULL;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = verify ? oz_signature_verify(PyBytes_AS_STRING(path), PyBytes_AS_STRING(key), &o, &r,
                                          &err)
                    : oz_sign(PyBytes_AS_STRING(path), PyBytes_AS_STRING(key), &o, &r, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(NULL, &err);
    else
        result = signature_report(r);
done:
    oz_signature_report_free(r);
    key_release(&pass, &holder);
    Py_XDECREF(path);
    Py_XDECREF(key);
    Py_XDECREF(sig);
    return result;
}

/* _unpack(archive, dir, force, sync, max_memory): oz_unpack_file (onnxz/unpack.h); Ctrl-C
 * ends it between files with KeyboardInterrupt, what it wrote removed. */
static PyObject *py_unpack(PyObject *self, PyObject *args) {
    PyObject *archive_obj, *dir_obj, *archive = NULL, *dir = NULL, *result = NULL;
    int force, sync;
    unsigned long long max_memory;
    oz_unpack_options o = OZ_UNPACK_OPTIONS_INIT;
    oz_unpack_info info = OZ_UNPACK_INFO_INIT;
    oc_error err;
    oc_status st;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOppK", &archive_obj, &dir_obj, &force, &sync, &max_memory))
        return NULL;
    if (!path_arg(archive_obj, &archive) || !path_arg(dir_obj, &dir)) goto done;
    o.no_overwrite = !force;
    o.no_sync = !sync;
    o.max_memory = max_memory;
    o.cancel = http_cancelled;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_unpack_file(PyBytes_AS_STRING(archive), PyBytes_AS_STRING(dir), &o, &info, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(info.input_failed ? archive : dir), &err);
    else
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(archive);
    Py_XDECREF(dir);
    return result;
}

/* A string field of a model as Python text (not UTF-8: its bytes as surrogates), or None. */
static PyObject *model_text(int has, const oc_str *s) {
    if (!has) return Py_NewRef(Py_None);
    return PyUnicode_DecodeUTF8(s->data, (Py_ssize_t)s->size, "surrogateescape");
}

/* The fields onnxz.meta gives: (producer_name, producer_version, doc_string,
 * [(key, value)...]). */
static PyObject *metadata_fields(const onnx_ModelProto *m) {
    PyObject *props = PyList_New((Py_ssize_t)m->metadata_props.count);
    for (uint64_t i = 0; props && i < m->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        PyObject *pair = Py_BuildValue("(NN)", model_text(1, &e->key), model_text(1, &e->value));
        if (!pair)
            Py_CLEAR(props);
        else
            PyList_SET_ITEM(props, (Py_ssize_t)i, pair);
    }
    if (!props) return NULL;
    return Py_BuildValue("(NNNN)",
                         model_text(OC_HAS(ModelProto, m, producer_name), &m->producer_name),
                         model_text(OC_HAS(ModelProto, m, producer_version), &m->producer_version),
                         model_text(OC_HAS(ModelProto, m, doc_string), &m->doc_string), props);
}

/* The edits of _meta in their order: the three fields (NULL: not edited), then each
 * (key, value) of set, then each key of remove. The strings are the lists' own. */
static int metadata_edits(const char *const fields[3], PyObject *set, PyObject *remove,
                          oz_metadata_edit **out, size_t *n) {
    static const oz_metadata_op field_ops[3] = {OZ_METADATA_PRODUCER, OZ_METADATA_PRODUCER_VERSION,
                                                OZ_METADATA_DOC_STRING};
    Py_ssize_t nset = PyList_GET_SIZE(set), nremove = PyList_GET_SIZE(remove);
    oz_metadata_edit *e = PyMem_Calloc((size_t)(3 + nset + nremove), sizeof *e);
    *out = e;
    *n = 0;
    if (!e) return PyErr_NoMemory(), -1;
    for (int i = 0; i < 3; i++)
        if (fields[i]) e[(*n)++] = (oz_metadata_edit){field_ops[i], NULL, fields[i]};
    for (Py_ssize_t i = 0; i < nset; i++, (*n)++) {
        e[*n].op = OZ_METADATA_SET;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(set, i), "ss", &e[*n].key, &e[*n].value)) return -1;
    }
    for (Py_ssize_t i = 0; i < nremove; i++, (*n)++) {
        e[*n].op = OZ_METADATA_REMOVE;
        if (!(e[*n].key = PyUnicode_AsUTF8(PyList_GET_ITEM(remove, i)))) return -1;
    }
    return 0;
}

/* _meta(path, producer, producer_version, doc_string, set, remove, append_only,
 * max_memory, sign_key or None, passphrase or None, unsign) -> (is_archive, fields):
 * oz_edit_metadata with metadata_edits' edits; the fields (metadata_fields) as they now
 * are. */
static PyObject *py_meta(PyObject *self, PyObject *args) {
    PyObject *path_obj, *path = NULL, *set, *remove, *fields = NULL, *result = NULL;
    PyObject *skey_obj, *pass_obj, *skey = NULL, *holder = NULL;
    Py_buffer pass;
    const char *field[3];
    int append_only, unsign;
    unsigned long long max_memory;
    oz_metadata_options o = OZ_METADATA_OPTIONS_INIT;
    oz_metadata_info info = OZ_METADATA_INFO_INIT;
    oz_metadata_edit *edits = NULL;
    oc_model *model = NULL;
    size_t n;
    oc_error err;
    oc_status st;
    (void)self;
    if (!PyArg_ParseTuple(args, "OzzzO!O!pKOOp", &path_obj, &field[0], &field[1], &field[2],
                          &PyList_Type, &set, &PyList_Type, &remove, &append_only, &max_memory,
                          &skey_obj, &pass_obj, &unsign))
        return NULL;
    if (key_arg(pass_obj, &pass, &holder) < 0) return NULL;
    if (!path_arg(path_obj, &path) || metadata_edits(field, set, remove, &edits, &n) < 0) goto done;
    if (skey_obj != Py_None && !path_arg(skey_obj, &skey)) goto done;
    o.append_only = append_only;
    o.max_memory = max_memory;
    o.sign_key = skey ? PyBytes_AS_STRING(skey) : NULL;
    o.passphrase = pass.buf;
    o.passphrase_len = (size_t)pass.len;
    o.unsign = unsign;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_edit_metadata(PyBytes_AS_STRING(path), edits, n, &o, &model, &info, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(path), &err);
    else if ((fields = metadata_fields(oc_model_proto(model))) != NULL)
        result = Py_BuildValue("(ONO)", info.is_archive ? Py_True : Py_False, fields,
                               info.was_signed ? Py_True : Py_False);
    oc_model_free(model);
done:
    PyMem_Free(edits);
    key_release(&pass, &holder);
    Py_XDECREF(skey);
    Py_XDECREF(path);
    return result;
}

/* ---- _Span: read-only bytes kept alive by an owner token ------------------------------ */

typedef struct {
    PyObject_HEAD oc_bytes bytes; /* SHARED (an owner reference) or OWNED (a copy of its own) */
    PyObject *keep;               /* BORROWED bytes: the object that keeps them alive, else NULL */
} SpanObject;

static void span_dealloc(SpanObject *self) {
    oc_bytes_release(&self->bytes);
    Py_XDECREF(self->keep);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int span_getbuffer(SpanObject *self, Py_buffer *view, int flags) {
    static char empty;
    const void *p = self->bytes.size ? (const void *)self->bytes.data : (const void *)&empty;
    return PyBuffer_FillInfo(view, (PyObject *)self, (void *)p, (Py_ssize_t)self->bytes.size, 1,
                             flags);
}

static PyBufferProcs span_as_buffer = {(getbufferproc)span_getbuffer, NULL};

static PyObject *span_address(SpanObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromVoidPtr((void *)self->bytes.data);
}

static PyObject *span_is_shared(SpanObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(self->bytes.mode != OC_BYTES_OWNED);
}

static PyMethodDef span_methods[] = {
    {"address", (PyCFunction)span_address, METH_NOARGS, "The address of the first byte."},
    {"is_shared", (PyCFunction)span_is_shared, METH_NOARGS,
     "True when the bytes lie in a mapping or buffer shared with the file (zero copy)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SpanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "onnxz._onnxz._Span",
    .tp_basicsize = sizeof(SpanObject),
    .tp_dealloc = (destructor)span_dealloc,
    .tp_as_buffer = &span_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only tensor bytes; the buffer they lie in lives as long as this object.",
    .tp_methods = span_methods,
};

/* A span object taking over *bytes (left empty), or holding keep when they are borrowed. */
static PyObject *span_new(oc_bytes *bytes, PyObject *keep) {
    SpanObject *s = PyObject_New(SpanObject, &SpanType);
    if (!s) return NULL;
    memset(&s->bytes, 0, sizeof s->bytes);
    s->keep = NULL;
    oc_bytes_move(&s->bytes, bytes);
    if (s->bytes.mode == OC_BYTES_BORROWED) {
        Py_XINCREF(keep);
        s->keep = keep;
    }
    return (PyObject *)s;
}

/* ---- a load that hands the large initializers' bytes over apart ------------------------ */

/* Initializers of at least this many raw_data bytes are handed over apart by model_split. */
#define SPLIT_MIN ((uint64_t)1 << 16)
/* S-45: what protobuf is handed stays well under its 2 GiB limit: when the initializers
 * below SPLIT_MIN would pass this many bytes, every initializer is handed over apart. */
#define SKELETON_MAX ((uint64_t)1 << 30)

/* The raw_data bytes of the initializers model_split would leave in the skeleton. */
static uint64_t small_raw_bytes(const onnx_GraphProto *g) {
    uint64_t sum = 0;
    for (uint64_t i = 0; g && i < g->initializer.count; i++) {
        const onnx_TensorProto *t = g->initializer.items[i];
        if (OC_HAS(TensorProto, t, raw_data) && t->raw_data.size < SPLIT_MIN)
            sum += t->raw_data.size;
    }
    return sum;
}

/* (skeleton, [(index, span), ...]) for onnxz._from_split: the model serialized without the
 * raw_data of its initializers of SPLIT_MIN bytes or more, and those bytes as spans (over
 * the file's mapping, or the buffer they were decrypted into) by initializer index. The
 * Python layer parses the skeleton and sets each one's raw_data, so that the model is
 * never serialized whole: that took memory the size of all its weights besides the
 * ModelProto, where onnx.load holds one tensor's at a time. Moves the bytes out of model
 * (free it after). */
static PyObject *model_split(oc_model *model, const char *file) {
    onnx_GraphProto *g = oc_model_proto(model)->graph;
    uint64_t n = g ? g->initializer.count : 0, moved = 0, k;
    oc_bytes *held = PyMem_Calloc((size_t)n + 1, sizeof *held);
    uint64_t *index = PyMem_Calloc((size_t)n + 1, sizeof *index);
    PyObject *skeleton = NULL, *pieces = NULL, *out = NULL;
    if (!held || !index) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t min = small_raw_bytes(g) > SKELETON_MAX ? 1 : SPLIT_MIN;
    for (uint64_t i = 0; i < n; i++) {
        onnx_TensorProto *t = g->initializer.items[i];
        /* borrowed bytes live in the model's own memory, which is freed after this */
        if (!OC_HAS(TensorProto, t, raw_data) || t->raw_data.size < min ||
            t->raw_data.mode == OC_BYTES_BORROWED)
            continue;
        oc_bytes_move(&held[moved], &t->raw_data);
        OC_CLEAR_HAS(TensorProto, t, raw_data);
        index[moved++] = i;
    }
    skeleton = model_to_bytes(model, file);
    if (skeleton) pieces = PyList_New((Py_ssize_t)moved);
    for (k = 0; pieces && k < moved; k++) {
        PyObject *span = span_new(&held[k], NULL);
        PyObject *item = span ? Py_BuildValue("(KN)", (unsigned long long)index[k], span) : NULL;
        if (!item) break;
        PyList_SET_ITEM(pieces, (Py_ssize_t)k, item);
    }
    if (pieces && k == moved) out = PyTuple_Pack(2, skeleton, pieces);
done:
    for (k = 0; held && k < moved; k++) oc_bytes_release(&held[k]); /* those not handed over */
    PyMem_Free(held);
    PyMem_Free(index);
    Py_XDECREF(skeleton);
    Py_XDECREF(pieces);
    return out;
}

/* ---- _Reader: an open file ------------------------------------------------------------- */

/* An open file (onnxz/reader.h), freed when the reader and every span borrowing from it
 * are gone (a Python object, so that spans can hold it). */
typedef struct {
    PyObject_HEAD oz_reader *reader;
    oc_http_options http; /* a URL's settings: the reader's copy points into them */
} HoldObject;

static void hold_dealloc(HoldObject *self) {
    oz_reader_close(self->reader);
    http_settings_release(&self->http); /* after the reader, which borrowed it */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject HoldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "onnxz._onnxz._Hold",
    .tp_basicsize = sizeof(HoldObject),
    .tp_dealloc = (destructor)hold_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

typedef struct {
    PyObject_HEAD PyObject *path; /* bytes */
    HoldObject *hold;             /* NULL once closed */
    int busy;                     /* calls running without the GIL: close waits for none */
    oz_open_info info;            /* the file's kind, form inside and size, as opened */
    unsigned long cuts_seen;      /* fault.c's count of cuts, as last found none of ours */
} ReaderObject;

static void reader_release(ReaderObject *self) { Py_CLEAR(self->hold); }

static void reader_dealloc(ReaderObject *self) {
    reader_release(self);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A fault scope (fault.h) of a call on the reader hold: the mappings it makes are hold's. */
static void reader_scope(HoldObject *hold, onnxz_fault_scope *scope) {
    onnxz_fault_enter(scope);
    onnxz_fault_own(hold);
}

static int reader_init(ReaderObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path", "key", "max_memory", "prefetch", "trust", NULL};
    PyObject *path_obj, *key_obj = Py_None, *path = NULL, *holder = NULL;
    PyObject *trust_obj = Py_None, *trust = NULL;
    unsigned long long max_memory = OC_RECOMMENDED_MAX_MEMORY;
    int prefetch = 0;
    Py_buffer key;
    HoldObject *hold;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OKpO", kwlist, &path_obj, &key_obj, &max_memory,
                                     &prefetch, &trust_obj))
        return -1;
    if (self->path) {
        PyErr_SetString(PyExc_RuntimeError, "already initialised");
        return -1;
    }
    if (!path_arg(path_obj, &path)) return -1;
    if (trust_obj != Py_None && !path_arg(trust_obj, &trust)) {
        Py_DECREF(path);
        return -1;
    }
    if (key_arg(key_obj, &key, &holder) < 0) {
        Py_DECREF(path);
        Py_XDECREF(trust);
        return -1;
    }
    hold = PyObject_New(HoldObject, &HoldType);
    if (hold) {
        hold->reader = NULL;
        hold->http = (oc_http_options)OC_HTTP_OPTIONS_INIT;
    }
    if (!hold || http_settings(&hold->http, url_kind(PyBytes_AS_STRING(path))) < 0) {
        key_release(&key, &holder);
        Py_XDECREF(hold);
        Py_DECREF(path);
        Py_XDECREF(trust);
        return -1;
    }
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    o.max_memory = max_memory;
    o.prefetch = prefetch;
    o.http = &hold->http;
    o.key = key.buf;
    o.key_len = (size_t)key.len;
    o.trust = trust ? PyBytes_AS_STRING(trust) : NULL; /* spec/signing.md G-50..G-54 */
    oz_open_info_init(&self->info);
    oc_error_clear(&err);
    reader_scope(hold, &scope);
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_open(PyBytes_AS_STRING(path), &o, &hold->reader, &self->info, &err);
    Py_END_ALLOW_THREADS
    key_release(&key, &holder);
    Py_XDECREF(trust); /* read at open only */
    if (st != OC_OK) raise_error(PyBytes_AS_STRING(path), &err);
    /* S-42: a fault in the mappings (a file cut in place) fails the open, never kills;
     * faults in them later are raised at the next bytecode */
    if (left_cut(&scope) || PyErr_Occurred()) {
        Py_DECREF(hold);
        Py_DECREF(path);
        return -1;
    }
    self->path = path;
    self->hold = hold;
    return 0;
}

/* On entry to every call: the reader is open, and none of its mappings was cut (S-42). A
 * cut mapping reads zeros from then on, so once one was, every call raises the cut. */
static int reader_check(ReaderObject *self) {
    char path[ONNXZ_FAULT_PATH_MAX];
    if (!self->hold) {
        PyErr_SetString(PyExc_ValueError, "onnxz: the file is closed");
        return -1;
    }
    if (!onnxz_fault_cut(self->hold, &self->cuts_seen, path)) return 0;
    raise_cut(path);
    return -1;
}

/* check(): raises what every call would (a closed reader, a cut file). */
static PyObject *reader_check_py(ReaderObject *self, PyObject *unused) {
    (void)unused;
    if (reader_check(self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* names() -> [str]: the model's tensor names, each once, in the index's order (bytes that
 * are not UTF-8 as surrogates, which tensor() turns back into them). */
static PyObject *reader_names(ReaderObject *self, PyObject *unused) {
    const oz_reader *r;
    PyObject *list;
    onnxz_fault_scope scope;
    uint64_t n;
    (void)unused;
    if (reader_check(self) < 0) return NULL;
    r = self->hold->reader; /* nothing below lets the GIL go: close() cannot run */
    n = oz_reader_count(r);
    if (n > (uint64_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    reader_scope(self->hold, &scope); /* S-42: the names may lie in the file's mapping */
    list = PyList_New((Py_ssize_t)n);
    for (uint64_t i = 0; list && i < n; i++) {
        const onnx_TensorProto *t = oz_reader_at(r, i);
        PyObject *name =
            PyUnicode_DecodeUTF8(t->name.data, (Py_ssize_t)t->name.size, "surrogateescape");
        if (!name)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    }
    if (left_cut(&scope)) Py_CLEAR(list);
    return list;
}

/* A STRING tensor's values (oc_tensor_strings, counts checked), as a tuple of bytes. */
static PyObject *tensor_strings(const onnx_TensorProto *t, oc_error *err) {
    const oc_str *items;
    uint64_t n;
    if (oc_tensor_strings(t, &items, &n, err) != OC_OK) return NULL;
    if (n > (uint64_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    PyObject *tuple = PyTuple_New((Py_ssize_t)n);
    for (uint64_t i = 0; tuple && i < n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(items[i].data, (Py_ssize_t)items[i].size);
        if (!b)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, b);
    }
    return tuple;
}

/* The tensor name_obj names (a str, or bytes: the name's bytes) in self's file, with
 * *hold a new reference to what holds it: t lives in hold's model, held from here to the
 * last use of t, since a close() from another thread can run whenever the GIL is let go.
 * NULL with an exception (KeyError for an unknown name), *hold then NULL. */
static const onnx_TensorProto *reader_find(ReaderObject *self, PyObject *name_obj,
                                           HoldObject **hold) {
    PyObject *name_bytes = NULL;
    const onnx_TensorProto *t = NULL;
    *hold = NULL;
    if (PyUnicode_Check(name_obj)) /* names() gives bytes that are not UTF-8 as surrogates */
        name_bytes = PyUnicode_AsEncodedString(name_obj, "utf-8", "surrogateescape");
    else if (PyBytes_Check(name_obj))
        name_bytes = Py_NewRef(name_obj);
    else
        PyErr_Format(PyExc_TypeError, "a tensor name is a str, not %.100s",
                     Py_TYPE(name_obj)->tp_name);
    if (!name_bytes || reader_check(self) < 0) {
        Py_XDECREF(name_bytes);
        return NULL;
    }
    t = oz_reader_find(self->hold->reader, PyBytes_AS_STRING(name_bytes),
                       (size_t)PyBytes_GET_SIZE(name_bytes));
    if (t)
        *hold = (HoldObject *)Py_NewRef(self->hold);
    else
        PyErr_SetObject(PyExc_KeyError, name_obj);
    Py_DECREF(name_bytes);
    return t;
}

/* dims as a tuple of ints. */
static PyObject *dims_tuple(const int64_t *dims, size_t n) {
    PyObject *tuple = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; tuple && i < n; i++) {
        PyObject *d = PyLong_FromLongLong(dims[i]);
        if (!d)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, d);
    }
    return tuple;
}

/* tensor(name) -> (span or strings, data_type, dims): the tensor's bytes in place (a URL's
 * archive entry or data file: fetched, a bytes object; typed fields: the bytes raw_data
 * would hold), or, for STRING values in typed fields, a tuple of their bytes. */
static PyObject *reader_tensor(ReaderObject *self, PyObject *args) {
    PyObject *name_obj, *dims = NULL, *span = NULL, *out = NULL;
    const onnx_TensorProto *t;
    oc_bytes bytes = {0};
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st = OC_OK;
    HoldObject *hold;
    if (!PyArg_ParseTuple(args, "O", &name_obj)) return NULL;
    reader_scope(self->hold, &scope); /* S-42: the name, the tensor and its bytes lie in mappings */
    if (!(t = reader_find(self, name_obj, &hold))) {
        left_cut(&scope);
        return NULL;
    }
    dims = dims_tuple(t->dims.items, (size_t)t->dims.count);
    if (!dims) goto done;
    oc_error_clear(&err);
    if (oc_tensor_is_typed(t) && t->data_type == 8) { /* STRING: W-40, W-42 checked */
        span = tensor_strings(t, &err);
        if (!span && !PyErr_Occurred()) goto fail;
        if (span) out = Py_BuildValue("(OiO)", span, (int)t->data_type, dims);
        goto done;
    }
    /* raw bytes (typed fields: theirs), W-40 checked first */
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_read(hold->reader, t, &bytes, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK) goto fail;
    span = span_new(&bytes, (PyObject *)hold);
    if (span) out = Py_BuildValue("(OiO)", span, (int)t->data_type, dims);
    goto done;
fail:
    raise_error(PyBytes_AS_STRING(self->path), &err);
done:
    if (left_cut(&scope)) Py_CLEAR(out);
    oc_bytes_release(&bytes);
    Py_XDECREF(span);
    Py_XDECREF(dims);
    Py_DECREF(hold);
    return out;
}

/* describe(name) -> (data_type, dims), nothing read. */
static PyObject *reader_describe(ReaderObject *self, PyObject *args) {
    PyObject *name_obj, *dims, *out = NULL;
    HoldObject *hold;
    const onnx_TensorProto *t;
    onnxz_fault_scope scope;
    if (!PyArg_ParseTuple(args, "O", &name_obj)) return NULL;
    reader_scope(self->hold, &scope); /* S-42: the name and the tensor lie in mappings */
    if ((t = reader_find(self, name_obj, &hold)) != NULL) {
        if ((dims = dims_tuple(t->dims.items, (size_t)t->dims.count)) != NULL)
            out = Py_BuildValue("(iN)", (int)t->data_type, dims);
        Py_DECREF(hold);
    }
    if (left_cut(&scope)) Py_CLEAR(out);
    return out;
}

/* ranges (a sequence of (start, stop, step, is_index) tuples) as oz_slice_range[]: a new
 * array (PyMem_Free it), NULL with an exception. */
static oz_slice_range *slice_ranges(PyObject *ranges, Py_ssize_t *count) {
    PyObject *seq = PySequence_Fast(ranges, "slice ranges are a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    oz_slice_range *rs = PyMem_Calloc((size_t)n + 1, sizeof *rs);
    for (Py_ssize_t i = 0; rs && i < n; i++) {
        long long start, stop, step;
        int index;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LLLp", &start, &stop, &step,
                              &index)) {
            PyMem_Free(rs);
            rs = NULL;
            break;
        }
        rs[i] = (oz_slice_range){start, stop, step, index != 0};
    }
    if (!rs && !PyErr_Occurred()) PyErr_NoMemory();
    Py_DECREF(seq);
    *count = n;
    return rs;
}

/* The slice of tensor name_obj that ranges give, planned into *s, with *hold a new
 * reference to what holds the tensor (as reader_find); -1 with an exception. In a fault
 * scope (S-42: the name and the tensor lie in mappings). */
static int slice_plan(ReaderObject *self, PyObject *name_obj, PyObject *ranges, HoldObject **hold,
                      oz_slice **s) {
    Py_ssize_t count = 0;
    oc_error err;
    *s = NULL;
    *hold = NULL;
    oz_slice_range *rs = slice_ranges(ranges, &count);
    if (!rs) return -1;
    const onnx_TensorProto *t = reader_find(self, name_obj, hold);
    oc_error_clear(&err);
    if (t && oz_slice_new(t, rs, (size_t)count, s, &err) != OC_OK)
        raise_error(PyBytes_AS_STRING(self->path), &err);
    PyMem_Free(rs);
    return *s ? 0 : -1;
}

/* slice(name, ranges) -> (span, dims): the part of the tensor ranges give (onnxz/slice.h),
 * a span of the file's mapping where it is one run of it, else its own bytes. */
static PyObject *reader_slice(ReaderObject *self, PyObject *args) {
    PyObject *name_obj, *ranges, *span = NULL, *out = NULL;
    HoldObject *hold;
    oz_slice *s;
    oc_bytes bytes = {0};
    oc_error err;
    oc_status st;
    onnxz_fault_scope scope;
    if (!PyArg_ParseTuple(args, "OO", &name_obj, &ranges)) return NULL;
    reader_scope(self->hold, &scope); /* S-42: the name, the tensor and its runs lie in mappings */
    if (slice_plan(self, name_obj, ranges, &hold, &s) < 0) goto done;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_read_slice(hold->reader, s, &bytes, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK) {
        raise_error(PyBytes_AS_STRING(self->path), &err);
        goto done;
    }
    span = span_new(&bytes, (PyObject *)hold);
    if (span) out = Py_BuildValue("(NN)", span, dims_tuple(oz_slice_dims(s), oz_slice_rank(s)));
done:
    if (left_cut(&scope)) Py_CLEAR(out);
    oc_bytes_release(&bytes);
    oz_slice_free(s);
    Py_XDECREF(hold);
    return out;
}

/* read_into(name, ranges, buffer) -> int: the part of the tensor ranges give (all of it
 * for no ranges) into a writable C-contiguous buffer of at least its bytes; their count. */
static PyObject *reader_read_into(ReaderObject *self, PyObject *args) {
    PyObject *name_obj, *ranges, *target, *out = NULL;
    HoldObject *hold;
    oz_slice *s;
    Py_buffer view;
    oc_error err;
    oc_status st;
    onnxz_fault_scope scope;
    if (!PyArg_ParseTuple(args, "OOO", &name_obj, &ranges, &target)) return NULL;
    if (PyObject_GetBuffer(target, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    reader_scope(self->hold, &scope); /* S-42: the name, the tensor and its runs lie in mappings */
    if (slice_plan(self, name_obj, ranges, &hold, &s) < 0) goto done;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_read_slice_into(hold->reader, s, view.buf, (uint64_t)view.len, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(self->path), &err);
    else
        out = PyLong_FromUnsignedLongLong(oz_slice_size(s));
done:
    if (left_cut(&scope)) Py_CLEAR(out);
    oz_slice_free(s);
    Py_XDECREF(hold);
    PyBuffer_Release(&view);
    return out;
}

/* read_many(items, num_threads) -> int: each (name, ranges or None, buffer) of the list
 * items read into its buffer (writable, C-contiguous, exactly the bytes of the tensor or
 * of the part ranges give) by one oz_reader_read_many on num_threads threads, the GIL
 * released; the count of bytes read. Ctrl-C stops it (the cancel asks Python's signal
 * handlers on this thread) and raises KeyboardInterrupt. */
static PyObject *reader_read_many(ReaderObject *self, PyObject *args) {
    PyObject *items, *seq = NULL, *out = NULL;
    HoldObject *hold = NULL;
    int num_threads = 1;
    Py_ssize_t n = 0, got = 0;
    oz_read_request *reqs = NULL;
    oz_slice **slices = NULL;
    Py_buffer *views = NULL;
    oc_error err;
    oc_status st;
    onnxz_fault_scope scope;
    if (!PyArg_ParseTuple(args, "Oi", &items, &num_threads) || reader_check(self) < 0) return NULL;
    if (!(seq = PySequence_Fast(items, "read_many takes a list of (name, ranges, buffer)")))
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    reqs = PyMem_Calloc((size_t)n + 1, sizeof *reqs);
    slices = PyMem_Calloc((size_t)n + 1, sizeof *slices);
    views = PyMem_Calloc((size_t)n + 1, sizeof *views);
    reader_scope(self->hold, &scope); /* S-42: names, tensors and runs lie in mappings */
    if (!reqs || !slices || !views) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++) {
        PyObject *name_obj, *ranges, *target;
        HoldObject *h = NULL;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, got), "OOO", &name_obj, &ranges,
                              &target) ||
            PyObject_GetBuffer(target, &views[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        reqs[got].dst = views[got].buf;
        reqs[got].size = (uint64_t)views[got].len;
        if (ranges == Py_None) {
            reqs[got].tensor = reader_find(self, name_obj, &h);
        } else if (slice_plan(self, name_obj, ranges, &h, &slices[got]) == 0) {
            reqs[got].slice = slices[got];
        }
        if (!h) {
            PyBuffer_Release(&views[got]);
            goto done;
        }
        if (!hold)
            hold = h; /* one reader: one hold */
        else
            Py_DECREF(h);
        if (!reqs[got].tensor && !reqs[got].slice) {
            PyBuffer_Release(&views[got]);
            goto done;
        }
    }
    if (!hold) { /* no item */
        out = PyLong_FromLong(0);
        goto done;
    }
    oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
    o.num_threads = num_threads;
    o.cancel = http_cancelled;
    uint64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += reqs[i].size;
    oc_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_read_many(hold ? hold->reader : NULL, reqs, (size_t)n, &o, &err);
    Py_END_ALLOW_THREADS
    if (st != OC_OK)
        raise_error(PyBytes_AS_STRING(self->path), &err);
    else
        out = PyLong_FromUnsignedLongLong(total);
done:
    if (left_cut(&scope)) Py_CLEAR(out);
    for (Py_ssize_t i = 0; i < got; i++) {
        PyBuffer_Release(&views[i]);
        oz_slice_free(slices[i]);
    }
    PyMem_Free(reqs);
    PyMem_Free(slices);
    PyMem_Free(views);
    Py_XDECREF(hold);
    Py_DECREF(seq);
    return out;
}

static PyObject *reader_close(ReaderObject *self, PyObject *unused) {
    (void)unused;
    reader_release(self);
    Py_RETURN_NONE;
}

static PyObject *reader_file_size(ReaderObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromUnsignedLongLong(self->info.file_size);
}

static PyObject *reader_keeps_references(ReaderObject *self, PyObject *unused) {
    (void)unused;
    if (reader_check(self) < 0) return NULL;
    return PyBool_FromLong(!oz_kind_is_encrypted(self->info.kind, NULL));
}

static PyObject *reader_is_archive(ReaderObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(oz_kind_is_archive(self->info.kind));
}

/* kind() -> (the file's kind as oz_kind_name says it, whether the model came from an
 * archive: true for an encrypted archive too). */
static PyObject *reader_kind(ReaderObject *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("(sO)", oz_kind_name(self->info.kind),
                         self->info.is_archive ? Py_True : Py_False);
}

/* What info(key) and verify(key) begin with: the key's bytes (key_release them) and the
 * open file's hold, a new reference (a close() from another thread meanwhile leaves it).
 * NULL with an exception set. */
static HoldObject *reader_enter(ReaderObject *self, PyObject *args, Py_buffer *key,
                                PyObject **holder) {
    PyObject *key_obj = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &key_obj) || reader_check(self) < 0 ||
        key_arg(key_obj, key, holder) < 0)
        return NULL;
    Py_INCREF(self->hold);
    return self->hold;
}

/* The report of `onnxz info --json` (oz_info_write_json) into *json, a new buffer of
 * *len bytes for free(), of what the reader opened (oz_info_collect_reader): its model as
 * the file holds it, references kept, nothing read again. Call without the GIL. */
static oc_status info_json(const HoldObject *hold, char **json, size_t *len, oc_error *err) {
    oz_info *info = NULL;
    FILE *out;
    bool written = false;
    oc_status st = oz_info_collect_reader(hold->reader, &info, err);
    if (st == OC_OK && (out = open_memstream(json, len)) != NULL) {
        oz_info_write_json(info, out);
        written = !ferror(out);
        written = fclose(out) == 0 && written; /* a memory stream fails for want of memory */
    }
    if (st == OC_OK && !written)
        st = oc_error_set(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oz_info_free(info);
    return st;
}

/* info() -> str: the report of `onnxz info --json`, as the tool prints it. */
static PyObject *reader_info(ReaderObject *self, PyObject *unused) {
    PyObject *out;
    char *json = NULL;
    size_t len = 0;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    (void)unused;
    if (reader_check(self) < 0) return NULL;
    HoldObject *hold = self->hold; /* a close() from another thread while it is written */
    Py_INCREF(hold);
    oc_error_clear(&err);
    reader_scope(self->hold, &scope);
    Py_BEGIN_ALLOW_THREADS
        st = info_json(hold, &json, &len, &err);
    Py_END_ALLOW_THREADS
    out = st == OC_OK ? PyUnicode_DecodeUTF8(json, (Py_ssize_t)len, "strict")
                      : raise_error(PyBytes_AS_STRING(self->path), &err);
    if (left_cut(&scope)) Py_CLEAR(out);
    free(json);
    Py_DECREF(hold);
    return out;
}

/* verify(key, trust=None): the checks of `onnxz verify` (with a trusted public key's path,
 * `--trust`: the signature first), on the open file (oz_reader_verify). Returns the
 * signature's report (a dict) when trust is given, else None. */
static PyObject *reader_verify(ReaderObject *self, PyObject *args) {
    PyObject *holder = NULL, *key_obj = Py_None, *trust_obj = Py_None, *trust = NULL,
             *result = NULL;
    Py_buffer key;
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_verify_report *report = NULL;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    HoldObject *hold;
    if (!PyArg_ParseTuple(args, "|OO", &key_obj, &trust_obj) || reader_check(self) < 0) return NULL;
    if (trust_obj != Py_None && !path_arg(trust_obj, &trust)) return NULL;
    if (key_arg(key_obj, &key, &holder) < 0) {
        Py_XDECREF(trust);
        return NULL;
    }
    hold = self->hold;
    Py_INCREF(hold);
    o.key = key.buf;
    o.key_len = (size_t)key.len;
    o.trust = trust ? PyBytes_AS_STRING(trust) : NULL;
    oc_error_clear(&err);
    reader_scope(self->hold, &scope);
    Py_BEGIN_ALLOW_THREADS
        st = oz_reader_verify(hold->reader, &o, &report, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(hold);
    key_release(&key, &holder);
    Py_XDECREF(trust);
    if (left_cut(&scope)) { /* the cut, whatever the zeros made the checks say */
        oz_verify_report_free(report);
        return NULL;
    }
    if (st != OC_OK) {
        oz_verify_report_free(report);
        return raise_error(PyBytes_AS_STRING(self->path), &err);
    }
    result = report->signature ? signature_report(report->signature) : Py_NewRef(Py_None);
    oz_verify_report_free(report);
    return result;
}

/* model_split() -> (skeleton, pieces) as _load gives them: when keeps_references(), the
 * model as opened (L-2), its tensors' references to entries or data files kept; the
 * bytes of its large initializers shared, not copied (a copy of the model is split). */
static PyObject *reader_model_split(ReaderObject *self, PyObject *unused) {
    HoldObject *hold;
    PyObject *out = NULL;
    oc_model *copy = NULL;
    onnxz_fault_scope scope;
    oc_error err;
    oc_status st;
    (void)unused;
    if (reader_check(self) < 0) return NULL;
    hold = self->hold; /* a close() from another thread while the model is encoded */
    Py_INCREF(hold);
    oc_error_clear(&err);
    reader_scope(self->hold, &scope); /* S-42: the model's bytes may lie in mappings */
    Py_BEGIN_ALLOW_THREADS
        st = oc_model_clone(oz_reader_model(hold->reader), &copy, &err);
    Py_END_ALLOW_THREADS
    if (st == OC_OK)
        out = model_split(copy, PyBytes_AS_STRING(self->path));
    else
        raise_error(PyBytes_AS_STRING(self->path), &err);
    if (left_cut(&scope)) Py_CLEAR(out);
    oc_model_free(copy);
    Py_DECREF(hold);
    return out;
}

static PyMethodDef reader_methods[] = {
    {"names", (PyCFunction)reader_names, METH_NOARGS, "Names of the model's tensors."},
    {"tensor", (PyCFunction)reader_tensor, METH_VARARGS, "(span or None, data_type, dims)."},
    {"describe", (PyCFunction)reader_describe, METH_VARARGS, "(data_type, dims), nothing read."},
    {"slice", (PyCFunction)reader_slice, METH_VARARGS,
     "(name, [(start, stop, step, is_index)...]) -> (span, dims): a part of a tensor."},
    {"read_into", (PyCFunction)reader_read_into, METH_VARARGS,
     "(name, ranges, buffer) -> bytes written: a tensor or a part of it into a buffer."},
    {"read_many", (PyCFunction)reader_read_many, METH_VARARGS,
     "read_many(items, num_threads) -> int: (name, ranges or None, buffer) each into its buffer"},
    {"close", (PyCFunction)reader_close, METH_NOARGS, "Drops the file (live spans keep it)."},
    {"check", (PyCFunction)reader_check_py, METH_NOARGS,
     "Raises what every call would: the file closed, or cut while open (S-42)."},
    {"is_archive", (PyCFunction)reader_is_archive, METH_NOARGS, "True for an .onnxz archive."},
    {"kind", (PyCFunction)reader_kind, METH_NOARGS, "(kind name, payload is an archive)."},
    {"keeps_references", (PyCFunction)reader_keeps_references, METH_NOARGS,
     "True when model_split() gives the model as opened (all but encrypted files)."},
    {"file_size", (PyCFunction)reader_file_size, METH_NOARGS,
     "Bytes of the file or of the object at a URL, as opened; 0 when not known."},
    {"verify", (PyCFunction)reader_verify, METH_VARARGS, "Every check onnxz verify makes."},
    {"info", (PyCFunction)reader_info, METH_NOARGS, "The report of onnxz info --json."},
    {"model_split", (PyCFunction)reader_model_split, METH_NOARGS,
     "(skeleton, pieces) of the model as opened."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "onnxz._onnxz._Reader",
    .tp_basicsize = sizeof(ReaderObject),
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open model file (see onnxz.open).",
    .tp_methods = reader_methods,
    .tp_init = (initproc)reader_init,
    .tp_new = PyType_GenericNew,
};

/* ---- module ---------------------------------------------------------------------------- */

/* _error(file, code, message) raises onnxz.Error as the C calls raise it (status, code,
 * file, no offset, "FILE: MESSAGE"), for what the Python side refuses. */
static PyObject *py_error(PyObject *self, PyObject *args) {
    PyObject *file_obj, *file = NULL;
    const char *message;
    int code;
    oc_error err;
    (void)self;
    if (!PyArg_ParseTuple(args, "Ois", &file_obj, &code, &message)) return NULL;
    if (file_obj != Py_None && !path_arg(file_obj, &file)) return NULL;
    oc_error_clear(&err);
    oc_error_set(&err, (oc_status)code, OC_NO_OFFSET, "%s", message);
    raise_error(file ? PyBytes_AS_STRING(file) : NULL, &err);
    Py_XDECREF(file);
    return NULL;
}

static PyObject *py_http_supported(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(oc_http_supported());
}

static PyObject *py_is_url(PyObject *self, PyObject *arg) {
    PyObject *path;
    bool url;
    (void)self;
    if (!path_arg(arg, &path)) return NULL;
    url = oc_is_url(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    return PyBool_FromLong(url);
}

/* _path_shown(path) -> str: the path as it may be shown (oc_path_shown: a URL without
 * user:password@). */
static PyObject *py_path_shown(PyObject *self, PyObject *arg) {
    PyObject *path, *out;
    char shown[4096];
    (void)self;
    if (!path_arg(arg, &path)) return NULL;
    oc_path_shown(PyBytes_AS_STRING(path), shown, sizeof shown);
    Py_DECREF(path);
    out = PyUnicode_DecodeFSDefault(shown);
    return out;
}

/* _numpy_descr(data_type) -> (descr, packed): the numpy dtype string of an array over a
 * tensor's raw bytes (oc_tensor_numpy_descr; None: there is none) and whether that array
 * holds packed sub-byte elements, one dimension of bytes. */
static PyObject *py_numpy_descr(PyObject *self, PyObject *arg) {
    long type = PyLong_AsLong(arg);
    const char *descr;
    (void)self;
    if (type == -1 && PyErr_Occurred()) return NULL;
    descr = type >= INT32_MIN && type <= INT32_MAX ? oc_tensor_numpy_descr((int32_t)type) : NULL;
    return Py_BuildValue("(zN)", descr,
                         PyBool_FromLong(descr && oc_tensor_element_bits((int32_t)type) < 8));
}

static PyObject *py_detect(PyObject *self, PyObject *arg) {
    Py_buffer b;
    oz_kind k;
    (void)self;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    k = oz_detect(b.buf, (size_t)b.len, (uint64_t)b.len);
    PyBuffer_Release(&b);
    return PyUnicode_FromString(oz_kind_name(k));
}

static oc_status note_external(void *ctx, onnx_TensorProto *t) {
    if (oc_tensor_is_external(t)) *(int *)ctx = 1;
    return OC_OK;
}

/* ---- _Watch: the Python layer's own mapping, watched for cuts (S-42) ----------------- */

/* _Watch(buffer, name): a mapping of a plain .onnx that onnxz.load parses in place
 * (_load_mapped), watched while protobuf and the check read it, in whatever thread: a
 * fault in it is mended (zeros are read) and close() raises onnxz.Error for the cut. The
 * buffer is held until close(), so that the mapping cannot go while it is watched. */
typedef struct {
    PyObject_HEAD Py_buffer view; /* view.obj NULL once closed */
    void *token;                  /* fault.c's slot */
    PyObject *name;               /* bytes, for the message */
} WatchObject;

/* Stops watching; 1 when a fault was mended meanwhile. */
static int watch_end(WatchObject *w) {
    if (!w->view.obj) return 0;
    int cut = onnxz_fault_unwatch(w->token);
    PyBuffer_Release(&w->view);
    return cut;
}

static void watch_dealloc(WatchObject *self) {
    watch_end(self);
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *watch_close(WatchObject *self, PyObject *unused) {
    (void)unused;
    if (watch_end(self)) {
        raise_cut(PyBytes_AS_STRING(self->name));
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef watch_methods[] = {
    {"close", (PyCFunction)watch_close, METH_NOARGS,
     "Stops watching; raises onnxz.Error when the file was cut meanwhile (S-42)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "onnxz._onnxz._Watch",
    .tp_basicsize = sizeof(WatchObject),
    .tp_dealloc = (destructor)watch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = watch_methods,
};

static PyObject *py_watch(PyObject *self, PyObject *args) {
    PyObject *data_obj, *name_obj;
    WatchObject *w;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &data_obj, &name_obj)) return NULL;
    w = PyObject_New(WatchObject, &WatchType);
    if (!w) return NULL;
    memset(&w->view, 0, sizeof w->view);
    w->token = NULL;
    w->name = NULL;
    if (!path_arg(name_obj, &w->name) || PyObject_GetBuffer(data_obj, &w->view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(w);
        return NULL;
    }
    w->token = onnxz_fault_watch(w->view.buf, (size_t)w->view.len, PyBytes_AS_STRING(w->name));
    if (!w->token) {
        Py_DECREF(w);
        return PyErr_NoMemory();
    }
    return (PyObject *)w;
}

/* ---- _Check: onnxz's decoder over a buffer, on a thread of its own ------------------ */

/* The check load() runs while protobuf parses the same buffer (onnxz/__init__.py,
 * _parse_checked): it decodes the serialized model in place (nothing copied, external
 * data not read) as onnxz.load would, and notes whether a tensor refers to external
 * data. The object holds the buffer until the thread is joined, and its wait releases the
 * GIL and cannot be interrupted: whatever interrupts the caller (Ctrl-C in protobuf's
 * parse, or right after _check_start returns), the buffer is not let go while the thread
 * reads it, since dropping the object joins the thread first. */
typedef struct {
    PyObject_HEAD Py_buffer data;
    PyObject *name; /* bytes (file-system encoding) or None: bytes given, no file */
    pthread_t thread;
    int running; /* started and not joined yet */
    oc_status st;
    oc_error err;
    int external;
    unsigned long long max_memory; /* the decode's budget (M-1) */
} CheckObject;

static void check_run(CheckObject *c) {
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_model *model = NULL;
    po.no_copy = 1;
    po.skip_external_data = 1;
    po.max_memory = c->max_memory;
    c->st = oc_model_load_memory(c->data.buf, (uint64_t)c->data.len, &po, &model, &c->err);
    if (c->st == OC_OK)
        oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), note_external,
                             &c->external);
    oc_model_free(model);
}

static void *check_thread(void *arg) {
    check_run(arg);
    return NULL;
}

/* Joins the thread (the GIL released; nothing interrupts it) and lets the buffer go. */
static void check_join(CheckObject *c) {
    if (c->running) {
        Py_BEGIN_ALLOW_THREADS
            pthread_join(c->thread, NULL);
        Py_END_ALLOW_THREADS
        c->running = 0;
    }
    if (c->data.obj) PyBuffer_Release(&c->data);
}

static void check_dealloc(CheckObject *self) {
    check_join(self);
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* wait(): joins the check, its verdict dropped (the caller is raising something else). */
static PyObject *check_wait(CheckObject *self, PyObject *unused) {
    (void)unused;
    check_join(self);
    Py_RETURN_NONE;
}

/* verdict() -> bool: joins the check; True when a tensor refers to external data, or
 * onnxz.Error naming the file where the decoder refuses the model. */
static PyObject *check_verdict(CheckObject *self, PyObject *unused) {
    (void)unused;
    check_join(self);
    if (self->st != OC_OK)
        return raise_error(self->name != Py_None ? PyBytes_AS_STRING(self->name) : NULL,
                           &self->err);
    return PyBool_FromLong(self->external);
}

static PyMethodDef check_methods[] = {
    {"verdict", (PyCFunction)check_verdict, METH_NOARGS, "Joins; refers to external data."},
    {"wait", (PyCFunction)check_wait, METH_NOARGS, "Joins, the verdict dropped."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CheckType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "onnxz._onnxz._Check",
    .tp_basicsize = sizeof(CheckObject),
    .tp_dealloc = (destructor)check_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = check_methods,
};

/* _check_start(data, name, max_memory) -> _Check: the check of data started on its own
 * thread (run here, the GIL released, if no thread can be started); name (a path, or
 * None) is the file errors name; max_memory the decode's budget (M-1). */
static PyObject *py_check_start(PyObject *self, PyObject *args) {
    PyObject *data_obj, *name_obj;
    CheckObject *c;
    (void)self;
    unsigned long long max_memory = OC_RECOMMENDED_MAX_MEMORY;
    if (!PyArg_ParseTuple(args, "OO|K", &data_obj, &name_obj, &max_memory)) return NULL;
    c = PyObject_New(CheckObject, &CheckType);
    if (!c) return NULL;
    c->max_memory = max_memory;
    memset(&c->data, 0, sizeof c->data);
    c->name = NULL;
    c->running = 0;
    c->st = OC_OK;
    c->external = 0;
    oc_error_clear(&c->err);
    if (name_obj == Py_None)
        c->name = Py_NewRef(Py_None);
    else if (!path_arg(name_obj, &c->name)) {
        Py_DECREF(c);
        return NULL;
    }
    if (PyObject_GetBuffer(data_obj, &c->data, PyBUF_SIMPLE) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    if (pthread_create(&c->thread, NULL, check_thread, c) == 0) {
        c->running = 1;
    } else {
        Py_BEGIN_ALLOW_THREADS
            check_run(c);
        Py_END_ALLOW_THREADS
    }
    return (PyObject *)c;
}

static PyMethodDef module_methods[] = {
    {"_load", py_load, METH_VARARGS,
     "(path, load_external_data, key, data_dir, max_memory) -> (skeleton, [(index, span)])"},
    {"_load_memory", py_load_memory, METH_VARARGS,
     "(data, load_external_data, data_dir, max_memory) -> bytes"},
    {"_check_start", py_check_start, METH_VARARGS, "(data, name, max_memory) -> _Check."},
    {"_watch", py_watch, METH_VARARGS, "(mapped buffer, name) -> _Watch (S-42)."},
    {"_save", py_save, METH_VARARGS, "(model_bytes, path, opts[, tensors, sizes]) -> bool"},
    {"_convert", py_convert, METH_VARARGS, "(src, dst, opts, key, data_dir)"},
    {"_meta", py_meta, METH_VARARGS,
     "(path, producer, producer_version, doc_string, set, "
     "remove, append_only, max_memory): oz_edit_metadata"},
    {"_unpack", py_unpack, METH_VARARGS, "(archive, dir, force, sync, max_memory): oz_unpack_file"},
    {"_stub", py_stub, METH_VARARGS, "(archive, out, force, sync, max_memory): oz_stub_file"},
    {"_sign", py_sign, METH_VARARGS,
     "(path, key, passphrase, signature, verify): oz_sign or oz_signature_verify -> report"},
    {"_save_check", py_save_check, METH_VARARGS,
     "(path, opts[, convert]): raises what a save (a conversion) would"},
    {"_numpy_descr", py_numpy_descr, METH_O,
     "(data_type) -> (numpy dtype string or None, packed)."},
    {"_detect", py_detect, METH_O, "The kind of data the bytes begin (oz_kind_name)."},
    {"_is_url", py_is_url, METH_O,
     "True for an http://, https://, s3:// or hf:// URL (oc_is_url)."},
    {"_path_shown", py_path_shown, METH_O, "The path as shown: a URL without user:password@."},
    {"_error", py_error, METH_VARARGS, "(file, code, message): raises onnxz.Error."},
    {"_http_supported", py_http_supported, METH_NOARGS, "True when URLs can be read."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "onnxz._onnxz",
    "The C part of onnxz.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__onnxz(void);
PyMODINIT_FUNC PyInit__onnxz(void) {
    PyObject *m;
    if (PyType_Ready(&SpanType) < 0 || PyType_Ready(&HoldType) < 0 ||
        PyType_Ready(&ReaderType) < 0 || PyType_Ready(&CheckType) < 0 ||
        PyType_Ready(&WatchType) < 0 || onnxz_fault_init(raise_cut) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (!m) return NULL;
    onnxz_error = PyErr_NewExceptionWithDoc(
        "onnxz.Error",
        "A model file onnxz refuses: .status (the status name, e.g. 'truncated'), .code (its "
        "number), .file, .offset (the input offset of the fault, or None), .rule (the spec "
        "rule the file breaks, e.g. 'A-21', or None); str() is the one-line message the onnxz "
        "tool prints.",
        PyExc_ValueError, NULL);
    if (!onnxz_error || PyModule_AddObjectRef(m, "Error", onnxz_error) < 0 ||
        PyModule_AddObjectRef(m, "_Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObjectRef(m, "_Span", (PyObject *)&SpanType) < 0 ||
        PyModule_AddIntConstant(m, "_crypto", oc_crypt_available()) < 0 ||
        PyModule_AddIntConstant(m, "_ERR_UNSUPPORTED", OC_ERR_UNSUPPORTED) < 0 ||
        PyModule_AddObject(m, "_DEFAULT_MAX_MEMORY",
                           PyLong_FromUnsignedLongLong(OC_RECOMMENDED_MAX_MEMORY)) < 0 ||
        PyModule_AddIntConstant(m, "_DECODE_AMPLIFICATION", OC_DECODE_AMPLIFICATION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
