/*
 * cleanup.c - the registry of paths to remove when the process is interrupted.
 *
 * Slots in chunks of CHUNK_SLOTS, the first static, the next ones allocated and never
 * freed (a process registers at most as many paths as it has files in flight, and the
 * slots are reused). A slot holds NULL or a string owned by the registry: a kind byte
 * ('f' file, 'd' directory) and the path. Registering claims a NULL slot with a
 * compare-and-swap; forgetting swaps NULL in and frees the string, unless a cleanup has
 * started: then the string may be in use by the handler (on another thread) and is left
 * to the dying process. Sequentially consistent atomics order the two: either the
 * forgetter sees `running` raised and keeps the string, or the handler sees the NULL.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/cleanup.h"

#define CHUNK_SLOTS 64

typedef struct chunk {
    _Atomic(char *) slot[CHUNK_SLOTS];
    _Atomic(struct chunk *) next;
} chunk;

static chunk first;
static atomic_int running;

/* Claims a free slot for s in the chunk list, growing it when every slot is taken. */
static _Atomic(char *) *claim(char *s) {
    for (chunk *c = &first;;) {
        for (int i = 0; i < CHUNK_SLOTS; i++) {
            char *expected = NULL;
            if (atomic_compare_exchange_strong(&c->slot[i], &expected, s)) return &c->slot[i];
        }
        chunk *next = atomic_load(&c->next);
        if (!next) {
            chunk *fresh = calloc(1, sizeof *fresh);
            if (!fresh) return NULL;
            chunk *none = NULL;
            if (atomic_compare_exchange_strong(&c->next, &none, fresh))
                next = fresh;
            else { /* another thread appended one first: use it */
                free(fresh);
                next = none;
            }
        }
        c = next;
    }
}

oc_cleanup_entry *oc_cleanup_register(const char *path, int is_dir) {
    size_t n = strlen(path);
    char *s = malloc(n + 2);
    if (!s) return NULL;
    s[0] = is_dir ? 'd' : 'f';
    memcpy(s + 1, path, n + 1);
    _Atomic(char *) *slot = claim(s);
    if (!slot) free(s);
    return (oc_cleanup_entry *)slot;
}

void oc_cleanup_forget(oc_cleanup_entry *entry) {
    if (!entry) return;
    char *s = atomic_exchange((_Atomic(char *) *)entry, NULL);
    if (!atomic_load(&running)) free(s);
}

/* One pass over the registry for paths of the given kind; the number removed. */
static unsigned remove_kind(char kind) {
    unsigned removed = 0;
    for (chunk *c = &first; c; c = atomic_load(&c->next))
        for (int i = 0; i < CHUNK_SLOTS; i++) {
            const char *s = atomic_load(&c->slot[i]);
            if (s && s[0] == kind && (kind == 'd' ? rmdir(s + 1) : unlink(s + 1)) == 0) removed++;
        }
    return removed;
}

void oc_cleanup_run(void) {
    int saved = errno;
    atomic_fetch_add(&running, 1);
    remove_kind('f');
    while (remove_kind('d') > 0) {
        /* a directory empties when the one below it goes: again until nothing moves */
    }
    errno = saved;
}
