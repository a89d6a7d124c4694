/*
 * tools/cmd_bench.c - `onnxz bench read|map|copy|load|decode FILE`: the machine's floors for
 * loading a file, and our loader, timed in-process (bench/bench_load.py and
 * bench/bench_graph.py drive it).
 *
 *   read  malloc a fresh buffer of the file's size and read() the file into it: what any
 *         copying load must at least pay;
 *   map   mmap the file and touch one byte per 4 KiB page: what any in-place load pays
 *         once its bytes are used (--every-byte: read every byte, as load does;
 *         --prefetch, --populate: the mapping read ahead, the two ways a kernel offers);
 *   copy  copy the file's bytes from memory into memory already faulted in, then read
 *         them: what a repeated load into pooled storage pays (memory bandwidth);
 *   load  load the model (a .onnx file with its external data, or an .onnxz archive),
 *         then read every tensor byte once, so that lazily mapped pages are paid for;
 *   decode  decode the file's bytes, read into memory first (not timed), as a ModelProto
 *         (oc_model_load_memory, copying): what protobuf's ParseFromString does; also
 *         reports the memory the decoded model holds (resident set growth).
 * Each run is timed from opening the file (copy: from the first byte copied; decode: from
 * the first byte decoded) to the last byte touched (decode: to the model built); tearing
 * down (free, munmap) is not timed.
 */
#define _DEFAULT_SOURCE /* MAP_POPULATE, madvise */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "load.h"

enum {
    BENCH_OPT_THREADS = 0,
    BENCH_OPT_NO_COPY,
    BENCH_OPT_REPEAT,
    BENCH_OPT_JSON,
    BENCH_OPT_TOUCH_PAGES,
    BENCH_OPT_POOL,
    BENCH_OPT_EVERY_BYTE,
    BENCH_OPT_PREFETCH,
    BENCH_OPT_POPULATE
};

static const cli_option bench_options[] = {
    {'\0', "threads", true},     {'\0', "no-copy", false},     {'\0', "repeat", true},
    {'\0', "json", false},       {'\0', "touch-pages", false}, {'\0', "pool", false},
    {'\0', "every-byte", false}, {'\0', "prefetch", false},    {'\0', "populate", false},
    {'\0', NULL, false},
};

static const char *const bench_arg_names[] = {"MODE (read, map, copy, load or decode)", "FILE"};

#define BENCH_DEFAULT_REPEAT 3
#define BENCH_MAX_REPEAT     1000
#define BENCH_PAGE           4096u
#define BENCH_MAX_THREADS    1024

/* Results are folded into this so that no work can be optimised away. */
static volatile uint64_t bench_sink;

typedef struct bench_run {
    double seconds;
    uint64_t bytes;
    uint64_t rss_kib; /* decode: resident set growth to the peak, in KiB */
    uint64_t arena;   /* decode: bytes the model's arena took from the system */
} bench_run;

static double now_s(void) { return cli_now_ms() / 1000.0; }

/* ---- read ------------------------------------------------------------------------ */

/* The whole file in a fresh malloc'd buffer (*buf, *size); on failure a message and the
 * exit status. */
static int read_file(const char *path, uint8_t **buf, uint64_t *size) {
    struct stat st;
    uint64_t done = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_fail_msg(path, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cli_fail_msg(path, "not a regular file");
    }
    *size = (uint64_t)st.st_size;
    *buf = malloc(*size ? (size_t)*size : 1);
    if (!*buf) {
        close(fd);
        return cli_fail_msg(path, "out of memory for %" PRIu64 " bytes", *size);
    }
    while (done < *size) {
        size_t chunk = *size - done > (1u << 30) ? (1u << 30) : (size_t)(*size - done);
        ssize_t n = read(fd, *buf + done, chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            free(*buf);
            close(fd);
            return cli_fail_msg(path, "read failed: %s", e ? strerror(e) : "file shrank");
        }
        done += (uint64_t)n;
    }
    close(fd);
    return CLI_EXIT_OK;
}

static int run_read(const char *path, bench_run *run) {
    uint8_t *buf;
    uint64_t size;
    double start = now_s();
    int rc = read_file(path, &buf, &size);
    if (rc != CLI_EXIT_OK) return rc;
    run->seconds = now_s() - start;
    run->bytes = size;
    bench_sink += size ? buf[size - 1] : 0;
    free(buf);
    return CLI_EXIT_OK;
}

/* Reads n bytes at p and folds them into a word: every byte (a running XOR of the 64-bit
 * words), or with pages_only one byte per 4 KiB page (the work of a page fault, not of
 * memory bandwidth). The map floor and the load's touch share it, so that the two
 * measure the same work. */
static uint64_t touch_bytes(const uint8_t *p, uint64_t n, int pages_only) {
    uint64_t i = 0, x = 0, w;
    if (pages_only) {
        for (; i < n; i += BENCH_PAGE) x += ((const volatile uint8_t *)p)[i];
        return x;
    }
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        x ^= w;
    }
    for (; i < n; i++) x ^= (uint64_t)p[i] << (8 * (i & 7));
    return x;
}

/* ---- map ------------------------------------------------------------------------- */

/* How bench map asks for the mapping's pages: not at all (faults), MADV_WILLNEED on the
 * whole mapping in one call once mapped (oc_parse_options.prefetch gives it in 2 MiB
 * pieces, since Linux reads one readahead window per call), or MAP_POPULATE. */
typedef enum map_ahead { MAP_AHEAD_NONE, MAP_AHEAD_WILLNEED, MAP_AHEAD_POPULATE } map_ahead;

static int run_map(const char *path, int every_byte, map_ahead ahead, bench_run *run) {
    struct stat st;
    void *addr = NULL;
    uint64_t size, sum = 0;
    double start = now_s();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_fail_msg(path, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cli_fail_msg(path, "not a regular file");
    }
    size = (uint64_t)st.st_size;
    if (size) {
        int flags = MAP_PRIVATE | (ahead == MAP_AHEAD_POPULATE ? MAP_POPULATE : 0);
        addr = mmap(NULL, (size_t)size, PROT_READ, flags, fd, 0);
        if (addr == MAP_FAILED) {
            int e = errno;
            close(fd);
            return cli_fail_msg(path, "cannot map: %s", strerror(e));
        }
    }
    close(fd);
    if (size && ahead == MAP_AHEAD_WILLNEED) (void)madvise(addr, (size_t)size, MADV_WILLNEED);
    sum = touch_bytes(addr, size, !every_byte);
    run->seconds = now_s() - start;
    run->bytes = size;
    bench_sink += sum;
    if (size) munmap(addr, (size_t)size);
    return CLI_EXIT_OK;
}

/* ---- copy ------------------------------------------------------------------------ */

typedef struct copy_part {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
} copy_part;

static void *copy_part_run(void *arg) {
    copy_part *p = arg;
    memcpy(p->dst, p->src, p->n);
    return NULL;
}

/* The file read into memory and a second buffer of its size faulted in, both not timed;
 * timed: copying the first into the second, split among `threads` threads, then reading
 * every byte of the copy. What a repeated copying load into storage already faulted in
 * (bench load --pool), then used, costs at least: memory bandwidth. */
static int run_copy(const char *path, int threads, bench_run *run) {
    uint8_t *src, *dst;
    uint64_t size;
    copy_part parts[BENCH_MAX_THREADS];
    pthread_t tids[BENCH_MAX_THREADS];
    int started = 0, rc = read_file(path, &src, &size);
    if (rc != CLI_EXIT_OK) return rc;
    dst = malloc(size ? (size_t)size : 1);
    if (!dst) {
        free(src);
        return cli_fail_msg(path, "out of memory for %" PRIu64 " bytes", size);
    }
    memset(dst, 0xa5, (size_t)size);
    if (threads < 1) threads = 1;
    if ((uint64_t)threads > (size >> 20)) /* at least 1 MiB per thread, as in the loader */
        threads = size >> 20 ? (int)(size >> 20) : 1;
    double start = now_s();
    uint64_t slice = size / (uint64_t)threads;
    for (int i = 0; i < threads; i++) { /* 64-byte-aligned slices, the last takes the rest */
        uint64_t from = slice * (uint64_t)i & ~(uint64_t)63;
        uint64_t to = i + 1 == threads ? size : slice * (uint64_t)(i + 1) & ~(uint64_t)63;
        parts[i] = (copy_part){dst + from, src + from, (size_t)(to - from)};
    }
    for (int i = 1; i < threads; i++, started++)
        if (pthread_create(&tids[started], NULL, copy_part_run, &parts[i]) != 0) break;
    for (int i = 1 + started; i < threads; i++) copy_part_run(&parts[i]); /* not started */
    copy_part_run(&parts[0]);
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    bench_sink += touch_bytes(dst, size, 0);
    run->seconds = now_s() - start;
    run->bytes = size;
    free(dst);
    free(src);
    return CLI_EXIT_OK;
}

/* ---- load ------------------------------------------------------------------------ */

typedef struct touch {
    uint64_t x;
    uint64_t bytes;
    int pages_only; /* --touch-pages: one byte per page, like the map floor */
} touch;

/* Every byte of every raw_data span once (--touch-pages: one byte per page). */
static oc_status touch_tensor(void *ctx, onnx_TensorProto *t) {
    touch *tc = ctx;
    tc->x ^= touch_bytes(t->raw_data.data, t->raw_data.size, tc->pages_only);
    tc->bytes += t->raw_data.size;
    return OC_OK;
}

static int run_load(const char *path, const cli_load_options *lo, int pages_only, bench_run *run) {
    oc_model *model = NULL;
    touch tc = {0, 0, pages_only};
    double start = now_s();
    int rc = cli_load_input(path, lo, CLI_NORMAL, &model, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), touch_tensor, &tc);
    run->seconds = now_s() - start;
    run->bytes = tc.bytes;
    bench_sink += tc.x;
    oc_model_free(model);
    return CLI_EXIT_OK;
}

/* ---- decode ---------------------------------------------------------------------- */

/* The resident set in KiB: now (VmRSS) or its peak so far (VmHWM); 0 if unknown. */
static uint64_t rss_kib(int peak) {
    char line[256];
    uint64_t kib = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) {
        struct rusage ru; /* no /proc: the peak is all getrusage knows */
        return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss : 0;
    }
    while (fgets(line, sizeof line, f))
        if (strncmp(line, peak ? "VmHWM:" : "VmRSS:", 6) == 0) {
            kib = strtoull(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

/* Makes VmHWM start again from the resident set of now (Linux 4.0 and later; elsewhere
 * the peak stays the process's own, which only makes the growth read smaller). */
static void reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

/* The file read into memory (not timed), then decoded from there; the model is kept until
 * the peak resident set is read, so rss_kib is what the decoded tree holds (plus what
 * the decode used on the way). */
static int run_decode(const char *path, bench_run *run) {
    uint8_t *buf;
    uint64_t size;
    oc_model *model = NULL;
    oc_error err;
    oc_parse_options po;
    int rc = read_file(path, &buf, &size);
    if (rc != CLI_EXIT_OK) return rc;
    oc_parse_options_init(&po);
    memset(&err, 0, sizeof err);
    reset_peak_rss();
    uint64_t before = rss_kib(0);
    double start = now_s();
    oc_status st = oc_model_load_memory(buf, size, &po, &model, &err);
    run->seconds = now_s() - start;
    if (st != OC_OK) {
        free(buf);
        return cli_fail_msg(path, "decode failed: %s", err.message);
    }
    uint64_t peak = rss_kib(1);
    run->rss_kib = peak > before ? peak - before : 0;
    run->arena = oc_arena_bytes_used(oc_model_arena(model));
    run->bytes = size;
    bench_sink += oc_model_proto(model)->graph != NULL;
    oc_model_free(model);
    free(buf);
    return CLI_EXIT_OK;
}

/* ---- the command ----------------------------------------------------------------- */

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_bench(const cli_args *args) {
    const char *mode = args->positional[0];
    const char *path = args->positional[1];
    cli_load_options lo;
    long repeat = BENCH_DEFAULT_REPEAT, threads = 0;
    double times[BENCH_MAX_REPEAT], sorted[BENCH_MAX_REPEAT], median;
    bench_run run;
    uint64_t bytes = 0;
    int is_load = strcmp(mode, "load") == 0;
    int rc = CLI_EXIT_OK;
    int is_copy = strcmp(mode, "copy") == 0;
    int is_decode = strcmp(mode, "decode") == 0;
    uint64_t rss = 0, arena = 0;
    if (!is_load && !is_copy && !is_decode && strcmp(mode, "read") != 0 && strcmp(mode, "map") != 0)
        return cli_usage_error("bench", "unknown mode '%s' (read, map, copy, load or decode)",
                               mode);
    if (!is_load && (args->seen[BENCH_OPT_NO_COPY] || args->seen[BENCH_OPT_TOUCH_PAGES] ||
                     args->seen[BENCH_OPT_POOL]))
        return cli_usage_error("bench", "--no-copy, --touch-pages and --pool apply to "
                                        "'bench load' only");
    if (!is_load && !is_copy && args->seen[BENCH_OPT_THREADS])
        return cli_usage_error("bench", "--threads applies to 'bench load' and 'bench copy' only");
    if ((args->seen[BENCH_OPT_EVERY_BYTE] || args->seen[BENCH_OPT_POPULATE]) &&
        strcmp(mode, "map") != 0)
        return cli_usage_error("bench", "--every-byte and --populate apply to 'bench map' only");
    if (args->seen[BENCH_OPT_PREFETCH] && !is_load && strcmp(mode, "map") != 0)
        return cli_usage_error("bench", "--prefetch applies to 'bench load' and 'bench map' only");
    if (args->seen[BENCH_OPT_PREFETCH] && args->seen[BENCH_OPT_POPULATE])
        return cli_usage_error("bench", "--prefetch and --populate are two ways: pick one");
    if (args->seen[BENCH_OPT_POOL] && args->seen[BENCH_OPT_NO_COPY])
        return cli_usage_error("bench", "--pool applies to copying loads, not --no-copy");
    if (args->seen[BENCH_OPT_REPEAT])
        rc = cli_parse_int("bench", "repeat", args->value[BENCH_OPT_REPEAT], 1, BENCH_MAX_REPEAT,
                           &repeat);
    if (rc == CLI_EXIT_OK && args->seen[BENCH_OPT_THREADS])
        rc = cli_parse_int("bench", "threads", args->value[BENCH_OPT_THREADS], 1, BENCH_MAX_THREADS,
                           &threads);
    if (rc != CLI_EXIT_OK) return rc;
    memset(&lo, 0, sizeof lo);
    lo.copy = !args->seen[BENCH_OPT_NO_COPY];
    lo.num_threads = (int)threads;
    lo.prefetch = args->seen[BENCH_OPT_PREFETCH];
    if (args->seen[BENCH_OPT_POOL] && !(lo.storage_pool = oc_storage_pool_new(UINT64_MAX)))
        return cli_fail_msg(path, "out of memory");
    for (long i = 0; i < repeat && rc == CLI_EXIT_OK; i++) {
        memset(&run, 0, sizeof run);
        if (is_load)
            rc = run_load(path, &lo, args->seen[BENCH_OPT_TOUCH_PAGES], &run);
        else if (is_copy)
            rc = run_copy(path, (int)threads, &run);
        else if (is_decode)
            rc = run_decode(path, &run);
        else if (mode[0] == 'r')
            rc = run_read(path, &run);
        else
            rc = run_map(path, args->seen[BENCH_OPT_EVERY_BYTE],
                         args->seen[BENCH_OPT_PREFETCH]   ? MAP_AHEAD_WILLNEED
                         : args->seen[BENCH_OPT_POPULATE] ? MAP_AHEAD_POPULATE
                                                          : MAP_AHEAD_NONE,
                         &run);
        if (rc != CLI_EXIT_OK) break;
        times[i] = sorted[i] = run.seconds;
        bytes = run.bytes;
        if (i == 0) { /* later runs reuse memory the first one faulted in */
            rss = run.rss_kib;
            arena = run.arena;
        }
        cli_note(args->verbosity, CLI_VERBOSE, "run %ld: %.6f s", i + 1, run.seconds);
    }
    oc_storage_pool_free(lo.storage_pool);
    if (rc != CLI_EXIT_OK) return rc;
    qsort(sorted, (size_t)repeat, sizeof sorted[0], compare_double);
    median = repeat % 2 ? sorted[repeat / 2] : (sorted[repeat / 2 - 1] + sorted[repeat / 2]) / 2;
    if (args->seen[BENCH_OPT_JSON]) {
        printf("{\"first_s\": %.9f, \"min_s\": %.9f, \"median_s\": %.9f, \"bytes\": %" PRIu64,
               times[0], sorted[0], median, bytes);
        if (is_decode) printf(", \"rss_kib\": %" PRIu64 ", \"arena_bytes\": %" PRIu64, rss, arena);
        printf("}\n");
    } else if (args->verbosity >= CLI_NORMAL) {
        char size[32];
        const char *what = !is_load                     ? mode
                           : !lo.copy                   ? "load (no-copy)"
                           : args->seen[BENCH_OPT_POOL] ? "load (copy, pooled storage)"
                                                        : "load (copy)";
        cli_format_size(bytes, size, sizeof size);
        const char *shown = cli_shown(path); /* N-2: a URL's user:password@ is not shown */
        printf("%s ", what);
        cli_put_text(stdout, shown, strlen(shown));
        printf(": %ld run%s, %" PRIu64 " bytes (%s) per run\n", repeat, repeat == 1 ? "" : "s",
               bytes, size);
        printf("  first   %.6f s\n  min     %.6f s\n  median  %.6f s", times[0], sorted[0], median);
        if (median > 0 && bytes) printf("  (%.2f GB/s)", (double)bytes / median / 1e9);
        putchar('\n');
        if (is_decode)
            printf("  memory  %" PRIu64 " KiB resident after the first decode, %" PRIu64
                   " bytes of arena\n",
                   rss, arena);
    }
    return CLI_EXIT_OK;
}

static const char bench_help[] =
    "Time loading FILE in this process, against the machine's own floors:\n"
    "  read  malloc a fresh buffer of the file's size and read() the file into it: the\n"
    "        least a load that copies the bytes can cost;\n"
    "  map   mmap the file and touch one byte per 4 KiB page (summing them): the least a\n"
    "        load that uses the bytes in place can cost; with --every-byte, read every\n"
    "        byte as load does: the least such a load costs once every byte is used;\n"
    "  copy  copy the file's bytes (read into memory first, not timed) into a buffer\n"
    "        already faulted in, with --threads N threads, then read every byte of the\n"
    "        copy: the least a repeated copying load into pooled storage can cost;\n"
    "  load  load the model (.onnx with its external data, or .onnxz, told by content),\n"
    "        then read every tensor byte once (a running XOR of 64-bit words over each\n"
    "        raw_data), so that lazily mapped pages are paid for too;\n"
    "  decode  decode the file's bytes, read into memory first (not timed), as a\n"
    "        ModelProto, copying (what protobuf's ParseFromString does); also reports\n"
    "        how much the resident set grew during the first decode and its arena.\n"
    "Each run is timed from opening the file (copy: from the first byte copied; decode:\n"
    "from the first byte decoded) to the last byte touched (decode: to the model built);\n"
    "freeing and unmapping afterwards are not timed. Prints the first run (a cold\n"
    "process), the fastest and the median, in seconds; \"bytes\" is the file's size for\n"
    "read, map, copy and decode, and the tensor bytes touched for load.\n"
    "Run it on a warm page cache (cat FILE >/dev/null) to measure the loader rather\n"
    "than the disk; on a cold one (bench/bench_prefetch.py) to measure --prefetch.\n"
    "\n"
    "Options:\n"
    "      --repeat N    runs to time (default 3, at most 1000)\n"
    "      --threads N   load: parse options' num_threads (copies in parallel); copy:\n"
    "                    the threads sharing the copy, one per MiB at most (default 1)\n"
    "      --touch-pages load only: after each load touch one byte per 4 KiB page of each\n"
    "                    tensor instead of every byte (the same work as the map floor)\n"
    "      --no-copy     load only: tensors share the file's mapping instead of being\n"
    "                    copied (the mode every other onnxz command uses)\n"
    "      --every-byte  map only: read every byte of the mapping, not one per page\n"
    "      --prefetch    load: ask the kernel to read the mapped files ahead\n"
    "                    (oc_parse_options.prefetch; with --no-copy); map:\n"
    "                    MADV_WILLNEED on the whole mapping in one call\n"
    "      --populate    map only: map with MAP_POPULATE (the file read before mmap\n"
    "                    returns), the other way to read a mapping ahead\n"
    "      --pool        load only, copying: take tensor storage from one storage pool\n"
    "                    kept across the runs (oc_parse_options.storage_pool), so runs\n"
    "                    after the first copy into memory already faulted in\n"
    "      --json        print one line: {\"first_s\": .., \"min_s\": .., \"median_s\": ..,\n"
    "                    \"bytes\": ..} (decode: also \"rss_kib\", \"arena_bytes\")\n"
    "  -q, --quiet       print nothing but errors (except with --json)\n"
    "  -v, --verbose     also print each run's time to stderr\n"
    "  -h, --help        show this help\n"
    "\n"
    "Examples:\n"
    "  onnxz bench read model.onnx\n"
    "  onnxz bench load --no-copy --repeat 10 model.onnxz\n"
    "  onnxz bench decode --repeat 5 model.onnx\n"
    "  onnxz bench load --pool --threads 2 --repeat 10 model.onnx\n"
    "  /usr/bin/python3 bench/bench_load.py build/tools/onnxz --rounds 3\n"
    "  /usr/bin/python3 bench/bench_graph.py build/tools/onnxz\n";

const cli_command cmd_bench = {
    "bench",
    "time loading a file: read, map and copy floors, and our loader",
    "onnxz bench [options] read|map|copy|load|decode FILE",
    bench_help,
    bench_options,
    bench_arg_names,
    2,
    2,
    run_bench,
};
