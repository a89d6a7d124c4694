/*
 * crypt/io.c - bytes in and out of the encryption component: pulling from a read
 * callback, readers over memory and file descriptors, a sink into a sized buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto/format.h"
#include "internal/error.h"

oc_status oc__crypt_fill(oc__crypt_source *s, uint8_t *buf, uint64_t want, uint64_t *got,
                         oc_error *err) {
    uint64_t done = 0;
    while (done < want) {
        uint64_t n = 0;
        OC_FORWARD(s->read(s->ctx, buf + done, want - done, &n, err));
        if (n == 0) break;
        if (n > want - done)
            return oc__fail(err, OC_ERR_INVALID_ARG, s->offset + done,
                            "the read callback returned more bytes than asked for");
        done += n;
    }
    s->offset += done;
    *got = done;
    return OC_OK;
}

oc_status oc__crypt_mem_read(void *reader, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    (void)err;
    oc__crypt_mem_reader *m = reader;
    uint64_t n = m->size - m->pos;
    if (n > cap) n = cap;
    if (n) memcpy(buf, m->data + m->pos, (size_t)n);
    m->pos += n;
    *got = n;
    return OC_OK;
}

oc_status oc__crypt_fd_read(void *reader, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    oc__crypt_fd_reader *f = reader;
    size_t n = cap > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)cap;
    for (;;) {
        ssize_t r = read(f->fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return oc_error_file(err, f->path,
                                 oc__fail_errno(err, errno, "cannot read %s", f->path));
        *got = (uint64_t)r;
        return OC_OK;
    }
}

oc_status oc__crypt_buffer_write(void *buffer, const void *data, uint64_t size, oc_error *err) {
    oc__crypt_buffer *m = buffer;
    if (size > m->cap - m->len)
        return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET,
                        "internal error: output larger than its computed size");
    if (size) memcpy(m->buf + m->len, data, (size_t)size);
    m->len += size;
    return OC_OK;
}

oc_status oc__crypt_buffer_open(oc__crypt_buffer *sink, uint64_t cap, oc_error *err) {
    sink->buf = malloc((size_t)cap);
    sink->cap = cap;
    sink->len = 0;
    if (!sink->buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    return OC_OK;
}

oc_status oc__crypt_buffer_finish(oc__crypt_buffer *sink, oc_status st, void **out,
                                  uint64_t *out_size, oc_error *err) {
    if (st == OC_OK && sink->len != sink->cap)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "internal error: output size mismatch");
    if (st != OC_OK) {
        free(sink->buf);
        sink->buf = NULL;
        return st;
    }
    *out = sink->buf;
    *out_size = sink->cap;
    return OC_OK;
}
