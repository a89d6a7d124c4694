/*
 * slice.c - oz_slice (onnxz/slice.h): a slice of a tensor planned as runs of contiguous
 * bytes. Positions are counted in elements until the end, where they become bytes: a
 * sub-byte type's runs must then fall on byte boundaries.
 */
#include <stdlib.h>
#include <string.h>

#include <onnxcore/tensor.h>

#include "onnxz/slice.h"
#include "internal/error.h"
#include "internal/slice.h"

/* A dimension whose positions make separate runs: how many, and the elements between
 * two of them. */
typedef struct outer_dim {
    uint64_t count, stride;
} outer_dim;

struct oz_slice {
    const onnx_TensorProto *t;
    unsigned bits;    /* an element's */
    size_t rank;      /* the result's dims */
    int64_t *dims;    /* [rank] */
    uint64_t base;    /* the first run's first element */
    uint64_t block;   /* elements in each run */
    size_t nouter;    /* the dimensions that make runs, outermost first */
    outer_dim *outer; /* [nouter] */
    uint64_t runs;    /* the product of their counts; 0: an empty slice */
    uint64_t size;    /* the result's bytes */
    uint64_t count;   /* the tensor's elements */
    uint64_t whole;   /* the tensor's bytes (W-40) */
};

/* A dimension's part: its first position, count and step, in the dimension. */
typedef struct part {
    uint64_t start, count, step;
    bool dropped;
} part;

/* The bytes of elements from a byte boundary on: a sub-byte type's last byte may be part
 * full (W-40). */
static uint64_t to_bytes(unsigned bits, uint64_t elements) {
    if (bits >= 8) return elements * (bits / 8);
    uint64_t per = 8 / bits;
    return elements / per + (elements % per != 0);
}

/* Python's slice.indices for a step > 0: start and stop from the end when negative,
 * both clamped to [0, dim]. */
static uint64_t clamp(int64_t v, uint64_t dim) {
    if (v < 0) {
        uint64_t back = (uint64_t) - (v + 1) + 1; /* |v|, also for INT64_MIN */
        return back >= dim ? 0 : dim - back;
    }
    return (uint64_t)v > dim ? dim : (uint64_t)v;
}

/* Dimension d (of size dim) of tensor `name` cut by rg into *p. */
static oc_status part_of(const oz_slice_range *rg, uint64_t dim, size_t d, const char *name,
                         part *p, oc_error *err) {
    if (rg->index) {
        uint64_t i = rg->start < 0 ? clamp(rg->start, dim) : (uint64_t)rg->start;
        bool inside = rg->start < 0 ? (uint64_t) - (rg->start + 1) < dim : i < dim;
        if (!inside)
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "tensor '%s': index %lld is outside dimension %zu (of size %llu)", name,
                            (long long)rg->start, d, (unsigned long long)dim);
        *p = (part){i, 1, 1, true};
        return OC_OK;
    }
    if (rg->step <= 0)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "tensor '%s': dimension %zu: step %lld (a slice's step must be 1 or "
                        "more)",
                        name, d, (long long)rg->step);
    uint64_t start = clamp(rg->start, dim), stop = clamp(rg->stop, dim);
    uint64_t step = (uint64_t)rg->step;
    uint64_t count = stop > start ? (stop - start - 1) / step + 1 : 0;
    *p = (part){start, count, step, false};
    return OC_OK;
}

/* The runs the parts make: from the innermost dimension out, each taken with step 1
 * while the run so far covers whole rows of it widens the run (a single position just
 * moves it); the first that cannot, and every one outside it with more than one
 * position, makes runs of its own. */
static void plan_runs(oz_slice *s, const part *parts, const int64_t *dims, size_t n) {
    uint64_t stride = 1; /* elements between two positions of dimension d */
    bool widening = true;
    s->block = 1;
    s->runs = 1;
    for (size_t d = n; d-- > 0;) {
        const part *p = &parts[d];
        s->base += p->start * stride;
        if (p->count == 0) s->runs = 0;
        if (widening && s->block == stride && (p->step == 1 || p->count == 1))
            s->block = p->count * stride;
        else if (p->count > 1) {
            widening = false;
            s->outer[s->nouter++] = (outer_dim){p->count, p->step * stride};
            s->runs *= p->count; /* fits: the runs are at most the tensor's elements */
        }
        stride *= (uint64_t)dims[d];
    }
    s->count = stride;
    s->whole = to_bytes(s->bits, stride);
    /* outermost first */
    for (size_t i = 0; i < s->nouter / 2; i++) {
        outer_dim tmp = s->outer[i];
        s->outer[i] = s->outer[s->nouter - 1 - i];
        s->outer[s->nouter - 1 - i] = tmp;
    }
    if (s->runs == 0) s->block = 0;
}

/* A sub-byte type: every run starts and ends on a byte boundary. The tensor's end is
 * one (its last byte is padded, W-40), so a single run may end there. */
static oc_status check_bytes(const oz_slice *s, const char *name, oc_error *err) {
    uint64_t per = s->bits < 8 ? 8 / s->bits : 1;
    bool ends = s->block % per == 0 || (s->runs == 1 && s->base + s->block == s->count);
    bool aligned = s->runs == 0 || (s->base % per == 0 && ends);
    for (size_t i = 0; aligned && s->runs && i < s->nouter; i++)
        aligned = s->outer[i].stride % per == 0;
    if (aligned) return OC_OK;
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "tensor '%s': this slice of %s splits bytes (%llu elements a byte): only "
                    "slices whose parts start and end on byte boundaries are read",
                    name, oc_tensor_type_name(s->t->data_type), (unsigned long long)per);
}

static oc_status plan(oz_slice *s, const oz_slice_range *ranges, size_t count, const char *name,
                      oc_error *err) {
    const onnx_TensorProto *t = s->t;
    size_t n = (size_t)t->dims.count;
    part *parts = calloc(n ? n : 1, sizeof *parts);
    if (!parts) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = OC_OK;
    for (size_t d = 0; d < n && st == OC_OK; d++) {
        static const oz_slice_range all = OZ_SLICE_ALL;
        st = part_of(d < count ? &ranges[d] : &all, (uint64_t)t->dims.items[d], d, name, &parts[d],
                     err);
        if (st == OC_OK && !parts[d].dropped) s->dims[s->rank++] = (int64_t)parts[d].count;
    }
    if (st == OC_OK) plan_runs(s, parts, t->dims.items, n);
    free(parts);
    OC_FORWARD(st);
    OC_FORWARD(check_bytes(s, name, err));
    s->size = to_bytes(s->bits, s->runs * s->block);
    return OC_OK;
}

oc_status oz_slice_new(const onnx_TensorProto *t, const oz_slice_range *ranges, size_t count,
                       oz_slice **out, oc_error *err) {
    char name[OC_QUOTE_SIZE];
    if (out) *out = NULL;
    if (!t || !out || (count && !ranges))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_slice_new: missing argument");
    oc_quote(t->name.data, t->name.size, name, sizeof name);
    OC_FORWARD(oc_tensor_check_size(t, err)); /* W-40: the dims, their product, the bytes */
    unsigned bits = oc_tensor_element_bits(t->data_type);
    if (!bits)
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "tensor '%s' is %s, whose elements have no fixed size: it is not sliced",
                        name, oc_tensor_type_name(t->data_type));
    if (count > t->dims.count)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "tensor '%s': %zu indices for its %llu dimensions", name, count,
                        (unsigned long long)t->dims.count);
    size_t n = (size_t)t->dims.count;
    oz_slice *s = calloc(1, sizeof *s);
    if (s) s->dims = calloc(n ? n : 1, sizeof *s->dims);
    if (s) s->outer = calloc(n ? n : 1, sizeof *s->outer);
    if (!s || !s->dims || !s->outer) {
        oz_slice_free(s);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    s->t = t;
    s->bits = bits;
    oc_status st = plan(s, ranges, count, name, err);
    if (st != OC_OK) {
        oz_slice_free(s);
        return st;
    }
    *out = s;
    return OC_OK;
}

void oz_slice_free(oz_slice *s) {
    if (!s) return;
    free(s->dims);
    free(s->outer);
    free(s);
}

size_t oz_slice_rank(const oz_slice *s) { return s ? s->rank : 0; }

const int64_t *oz_slice_dims(const oz_slice *s) { return s ? s->dims : NULL; }

uint64_t oz_slice_size(const oz_slice *s) { return s ? s->size : 0; }

uint64_t oz_slice_runs(const oz_slice *s) { return s ? s->runs : 0; }

void oz_slice_run(const oz_slice *s, uint64_t i, uint64_t *at, uint64_t *size) {
    uint64_t first = s->base;
    for (size_t d = s->nouter; d-- > 0;) { /* i in the mixed radix of the counts */
        first += (i % s->outer[d].count) * s->outer[d].stride;
        i /= s->outer[d].count;
    }
    *at = to_bytes(s->bits, first);
    *size = to_bytes(s->bits, s->block);
}

const onnx_TensorProto *oz__slice_tensor(const oz_slice *s) { return s->t; }

uint64_t oz__slice_whole(const oz_slice *s) { return s->whole; }
