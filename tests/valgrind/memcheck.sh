#!/bin/sh
# memcheck.sh - the test suite under valgrind memcheck (scripts/test.sh, stage "valgrind").
#
#   memcheck.sh LOGDIR PROGRAM [ARG...]
#       runs PROGRAM under memcheck, with its command line in LOGDIR/<id>.cmd and its report
#       in LOGDIR/<id>.<pid>.log (a child it forks: its own pid). This is the test wrapper: configure with
#       -DONNXZ_TEST_WRAPPER="/path/to/memcheck.sh;LOGDIR" and every test executable, those
#       ctest starts and those the Python drivers start (the onnxz tool, the C drivers), runs
#       through it (tests/CMakeLists.txt, onnxz_test_exe). It execs valgrind, so the process
#       keeps its pid: signals and waits of the tests reach the program itself.
#   memcheck.sh --check LOGDIR
#       prints every report with a finding and its command line, deletes the clean ones,
#       counts the runs of each program; exits 1 when there was a finding. A finding makes
#       the program exit 99 as well, but a test that only expects "not 0" would not notice:
#       this check is what makes such tests fail.
#
# What counts: every memcheck error (invalid reads and writes, uses of uninitialised values,
# bad frees, overlapping copies, bad syscall parameters) and definitely or indirectly lost
# memory. Not counted: "possibly lost" and still reachable memory, file descriptors.
# VALGRIND (default: valgrind on PATH) names the binary.
#
# No suppressions. One known valgrind message is not a finding: valgrind 3.19 (Debian 12)
# does not know the openat2 system call (437) and fails it with ENOSYS, with a warning. The
# library then takes its fallback path (one openat per component), the path the
# ONNXZ_FUZZ_NO_OPENAT2 tests cover natively; the openat2 path itself is covered by the
# other builds.
set -u
if [ "${1:-}" = --check ]; then
    [ $# -eq 2 ] || { echo "usage: $0 --check LOGDIR" >&2; exit 2; }
    dir=$2
    runs=$(find "$dir" -maxdepth 1 -name '*.cmd' 2>/dev/null | wc -l)
    if [ "$runs" -eq 0 ]; then
        echo "memcheck: no runs recorded in $dir: did anything run under $0?" >&2
        exit 1
    fi
    per_program=$(for cmd in "$dir"/*.cmd; do sed -n '1{s/ .*//;s|.*/||;p;}' "$cmd"; done |
                  sort | uniq -c | sort -rn | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), $2, $1}')
    found=0
    for log in "$dir"/*.log; do
        [ -f "$log" ] || continue
        if grep -v -E -e '^--[0-9]+-- (WARNING: unhandled amd64-linux syscall: 437$|You may be able to write your own handler\.$|Read the file README_MISSING_SYSCALL_OR_IOCTL\.$|Nevertheless we consider this a bug\.  Please report$|it at http://valgrind\.org/support/bug_reports\.html\.$)' \
            "$log" | grep -q .; then
            found=$((found + 1))
            cmd=${log%.*.log}.cmd
            echo "memcheck: finding in $log"
            [ -f "$cmd" ] && echo "memcheck: command: $(cat "$cmd")"
            cat "$log"
        else
            rm -f "$log"
        fi
    done
    for cmd in "$dir"/*.cmd; do # the command lines of runs without a finding go too
        set -- "${cmd%.cmd}".*.log
        [ -e "$1" ] || rm -f "$cmd"
    done
    echo "memcheck: $runs runs ($per_program), $found reports with findings"
    [ "$found" -eq 0 ]
    exit
fi

[ $# -ge 2 ] || { echo "usage: $0 LOGDIR PROGRAM [ARG...] | --check LOGDIR" >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir" || exit 2
# Not the pid alone: a run of the suite can go through all of them (pid_max may be 32768).
id=$$.$(date +%s%N)
printf '%s\n' "$*" >"$dir/$id.cmd"
# exec: valgrind replaces this shell and keeps its pid, so signals reach the program.
exec "${VALGRIND:-valgrind}" -q --tool=memcheck --error-exitcode=99 \
    --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --track-fds=no --num-callers=40 \
    --log-file="$dir/$id.%p.log" "$@"
