// bench/graph_vs_protobuf.cc - onnxz's in-process decode against protobuf C++'s generated
// onnx::ModelProto::ParseFromString, alternated in one process (bench_graph.py --cpp
// builds and runs it).
//
// usage: graph_vs_protobuf FILE [ROUNDS]
// The file is read into memory once (not timed). Each round times one decode of each
// contender: oc_model_load_memory (copying, as `onnxz bench decode`) and ParseFromString
// into a fresh ModelProto, the order swapped every round so that machine noise hits both
// alike; each decoded model is freed before the next, untimed. Every decode is timed by
// the wall clock and by the thread's CPU time (which leaves out the time spent waiting
// for a core on a shared machine), and its minor page faults counted. Prints one JSON
// line: per contender and clock the first round (a fresh process) and the median of the
// rounds after it (in-process repeats), and the faults of those rounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#include "onnx.pb.h"
#include "onnxcore/onnxcore.h"

namespace {

struct sample {
    double wall, cpu;
    long faults;
};

struct clocks {
    double wall, cpu;
    long faults;
    static clocks now() {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        using wall_clock = std::chrono::steady_clock;
        return {std::chrono::duration<double>(wall_clock::now().time_since_epoch()).count(),
                (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, ru.ru_minflt};
    }
    sample since(const clocks &t0) const {
        return {wall - t0.wall, cpu - t0.cpu, faults - t0.faults};
    }
};

sample time_onnxz(const std::string &b) {
    oc_model *m = nullptr;
    oc_error err{};
    clocks t0 = clocks::now();
    oc_status st = oc_model_load_memory(b.data(), b.size(), nullptr, &m, &err);
    sample s = clocks::now().since(t0);
    if (st != OC_OK) {
        std::fprintf(stderr, "graph_vs_protobuf: onnxz decode failed: %s\n", err.message);
        std::exit(1);
    }
    oc_model_free(m);
    return s;
}

sample time_protobuf(const std::string &b) {
    auto *m = new onnx::ModelProto();
    clocks t0 = clocks::now();
    bool ok = m->ParseFromString(b);
    sample s = clocks::now().since(t0);
    if (!ok) {
        std::fprintf(stderr, "graph_vs_protobuf: protobuf parse failed\n");
        std::exit(1);
    }
    delete m;
    return s;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "name": {"first_wall_s": .., "wall_s": .., "first_cpu_s": .., "cpu_s": .., "faults": ..}
void print_contender(const char *name, const std::vector<sample> &v, bool last) {
    std::vector<double> wall, cpu;
    long faults = 0;
    for (size_t i = 1; i < v.size(); i++) {
        wall.push_back(v[i].wall);
        cpu.push_back(v[i].cpu);
        faults += v[i].faults;
    }
    std::printf("\"%s\": {\"first_wall_s\": %.6f, \"wall_s\": %.6f, \"first_cpu_s\": %.6f, "
                "\"cpu_s\": %.6f, \"faults\": %ld}%s",
                name, v[0].wall, median(wall), v[0].cpu, median(cpu), faults, last ? "" : ", ");
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: graph_vs_protobuf FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? std::atoi(argv[2]) : 11;
    if (rounds < 2) rounds = 2;
    std::ifstream in(argv[1], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string b = ss.str();
    if (!in || b.empty()) {
        std::fprintf(stderr, "graph_vs_protobuf: cannot read %s\n", argv[1]);
        return 1;
    }
    std::vector<sample> oz, pb;
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            oz.push_back(time_onnxz(b));
            pb.push_back(time_protobuf(b));
        } else {
            pb.push_back(time_protobuf(b));
            oz.push_back(time_onnxz(b));
        }
    }
    std::printf("{\"rounds\": %d, ", rounds);
    print_contender("onnxz", oz, false);
    print_contender("protobuf", pb, true);
    std::printf("}\n");
    return 0;
}
