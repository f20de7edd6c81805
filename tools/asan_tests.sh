#!/usr/bin/env bash
# Build every Cython extension with AddressSanitizer and run the test suite against it.
#
# Usage (from anywhere inside a checkout, with the Python environment that has the build
# and test dependencies active -- numpy, scipy, Cython, setuptools, pytest, ...):
#
#     tools/asan_tests.sh [options] [-- pytest arguments]
#
#   --dir DIR        build in DIR (created if missing; a clone of HEAD is made there if it
#                    holds no checkout yet, an existing build there is reused incrementally).
#                    Default: a fresh temporary directory, removed at the end.
#   --keep           keep the temporary copy (its path is printed) for looking at findings.
#   --with-changes   also apply the uncommitted changes to tracked files (git diff HEAD) to
#                    the copy; by default the copy is exactly HEAD.
#   --no-build       reuse the build already in --dir (no build_ext run).
#   --per-file       one pytest process per tests/test_*.py file, so that a crash (SEGV,
#                    a fatal ASan error) loses one file, not the rest of the suite.
#   -j N             parallel compile jobs (default: number of CPUs).
#   -h, --help       this text.
#
# Everything after `--` goes to pytest (default: the whole suite with `-q -rfE`), e.g.
#     tools/asan_tests.sh --keep -- tests/test_sdca.py -k logistic
#     tools/asan_tests.sh -- --deselect 'tests/test_x.py::test_y'
#
# What it does:
#   1. clones HEAD of this checkout into a scratch directory (never touches the checkout's
#      own in-place build or an editable install of it);
#   2. runs `python setup.py build_ext --inplace` there with
#      CFLAGS="-fsanitize=address -fsanitize-recover=address -fno-omit-frame-pointer -g -O1"
#      and LDFLAGS="-fsanitize=address";
#   3. runs pytest in the copy with PYTHONPATH=<copy> (checking that `dualsolve` is imported
#      from the copy), LD_PRELOAD=<gcc's libasan.so> (Python itself is not instrumented, so
#      the runtime must be loaded first; gcc's libstdc++ follows it) and
#      ASAN_OPTIONS=detect_leaks=0:halt_on_error=0:abort_on_error=1:log_path=<dir>/asan
#      (leaks of the interpreter are noise; recoverable errors are logged and the run goes
#      on so that one run counts them all; every process, subprocesses of the tests
#      included, writes its reports to <dir>/asan.<pid>).  PYTHONMALLOC=malloc so that
#      Python objects get red zones too.  Extra ASan options: set ASAN_EXTRA_OPTIONS.
#   4. prints a summary: the number of `ERROR: AddressSanitizer` reports, each one's kind and
#      first frames, and the pytest outcome.
#
# Exit status: 0 clean; 1 ASan reported errors or pytest was killed (crash); 2 no ASan
# report but pytest reported failing tests; 3 build or setup error.
#
# Needs only gcc (with its libasan), git and the project's build/test dependencies.
# Data-dependent tests read $DUALSOLVE_DATA as usual; set it before running.

set -u -o pipefail

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }

DIR=""
KEEP=0
WITH_CHANGES=0
BUILD=1
PER_FILE=0
JOBS="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
PYTEST_ARGS=()

while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR="$2"; shift 2 ;;
        --dir=*) DIR="${1#--dir=}"; shift ;;
        --keep) KEEP=1; shift ;;
        --with-changes) WITH_CHANGES=1; shift ;;
        --no-build) BUILD=0; shift ;;
        --per-file) PER_FILE=1; shift ;;
        -j) JOBS="$2"; shift 2 ;;
        -j*) JOBS="${1#-j}"; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; PYTEST_ARGS=("$@"); break ;;
        *) echo "asan_tests.sh: unknown option $1 (see --help)" >&2; exit 3 ;;
    esac
done

die() { echo "asan_tests.sh: $*" >&2; exit 3; }

PYTHON="${PYTHON:-python}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
command -v "$PYTHON" >/dev/null || die "no python on PATH (activate the project's environment)"
command -v git >/dev/null || die "git not found"
CC="${CC:-gcc}"
command -v "$CC" >/dev/null || die "$CC not found (ASan builds need gcc)"

SRC="$(git rev-parse --show-toplevel 2>/dev/null)" || die "run this from inside a dualsolve checkout"
[ -f "$SRC/setup.py" ] && [ -d "$SRC/dualsolve" ] || die "$SRC is not a dualsolve checkout"

LIBASAN="$("$CC" -print-file-name=libasan.so)"
case "$LIBASAN" in
    /*) [ -e "$LIBASAN" ] || die "libasan.so not found ($LIBASAN); install gcc's libasan" ;;
    *) die "$CC has no libasan.so (install the libasan package matching $CC)" ;;
esac
LIBASAN="$(readlink -f "$LIBASAN")"
# libstdc++ right after the ASan runtime: Python does not link it, so without it ASan's
# __cxa_throw interceptor finds no real function and a C++ extension that throws (e.g.
# atheris, pybind11) dies with "AddressSanitizer: CHECK failed ... real___cxa_throw"
PRELOAD="$LIBASAN"
LIBSTDCXX="$("$CC" -print-file-name=libstdc++.so)"
case "$LIBSTDCXX" in /*) [ -e "$LIBSTDCXX" ] && PRELOAD="$PRELOAD:$(readlink -f "$LIBSTDCXX")" ;; esac

# ---------------------------------------------------------------------------- the copy
CLEANUP=0
if [ -z "$DIR" ]; then
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/dualsolve-asan.XXXXXX")" || die "mktemp failed"
    [ "$KEEP" = 1 ] || CLEANUP=1
fi
mkdir -p "$DIR" || die "cannot create $DIR"
DIR="$(cd "$DIR" && pwd -P)"
cleanup() { [ "$CLEANUP" = 1 ] && rm -rf "$DIR"; }
trap cleanup EXIT

COPY="$DIR/src"
REV="$(git -C "$SRC" rev-parse HEAD)"
if [ ! -d "$COPY/.git" ]; then
    [ "$BUILD" = 1 ] || die "--no-build needs an existing build in --dir"
    echo "== cloning $SRC at ${REV:0:12} into $COPY"
    git clone --quiet --no-checkout "$SRC" "$COPY" || die "git clone failed"
    git -C "$COPY" checkout --quiet --detach "$REV" || die "checkout failed"
elif [ "$BUILD" = 1 ]; then
    echo "== updating the copy in $COPY to ${REV:0:12}"
    git -C "$COPY" fetch --quiet "$SRC" HEAD || die "git fetch failed"
    git -C "$COPY" checkout --quiet --force --detach "$REV" || die "checkout failed"
fi
if [ "$WITH_CHANGES" = 1 ] && [ "$BUILD" = 1 ]; then
    if ! git -C "$SRC" diff --quiet HEAD; then
        echo "== applying the checkout's uncommitted changes to tracked files"
        git -C "$SRC" diff --binary HEAD | git -C "$COPY" apply --whitespace=nowarn \
            || die "could not apply the uncommitted changes"
    fi
fi

REV="$(git -C "$COPY" rev-parse HEAD)"   # what is built (with --no-build: the copy's commit)

# ---------------------------------------------------------------------------- build
SAN_CFLAGS="-fsanitize=address -fsanitize-recover=address -fno-omit-frame-pointer -g -O1"
SAN_LDFLAGS="-fsanitize=address"
BUILD_SECONDS=0
if [ "$BUILD" = 1 ]; then
    echo "== building the extensions with ASan ($SAN_CFLAGS), -j $JOBS; log: $DIR/build.log"
    t0=$(date +%s)
    # our flags come last on the compiler line, so -O1 overrides Python's -O3
    ( cd "$COPY" && DUALSOLVE_BUILD_JOBS="$JOBS" CC="$CC" CFLAGS="${CFLAGS:-} $SAN_CFLAGS" LDFLAGS="${LDFLAGS:-} $SAN_LDFLAGS" \
        "$PYTHON" setup.py build_ext --inplace -j "$JOBS" ) >"$DIR/build.log" 2>&1 \
        || { tail -n 40 "$DIR/build.log"; die "the ASan build failed (see $DIR/build.log)"; }
    BUILD_SECONDS=$(( $(date +%s) - t0 ))
    echo "   built in ${BUILD_SECONDS}s"
fi

# every extension module must be an instrumented one
n_ext=0
while IFS= read -r pyx; do
    n_ext=$((n_ext + 1))
    base="$COPY/${pyx%.pyx}"
    so="$(ls "$base".*.so 2>/dev/null | head -n 1)"
    [ -n "$so" ] || die "no built module for $pyx"
    grep -q __asan_init "$so" || die "$so is not built with ASan"
done < <(cd "$COPY" && find dualsolve -name '*.pyx' | sort)
echo "   $n_ext extension modules, all instrumented"

# ---------------------------------------------------------------------------- run
rm -f "$DIR"/asan.*
export PYTHONPATH="$COPY${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONMALLOC=malloc
export PYTHONDONTWRITEBYTECODE=1
export DUALSOLVE_ASAN=1    # lets a test skip what cannot run under ASan (e.g. RLIMIT_AS)
RUN_ENV=(env LD_PRELOAD="$PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
         ASAN_OPTIONS="detect_leaks=0:halt_on_error=0:abort_on_error=1:log_path=$DIR/asan${ASAN_EXTRA_OPTIONS:+:$ASAN_EXTRA_OPTIONS}")

where="$(cd "$DIR" && "${RUN_ENV[@]}" "$PYTHON" -c \
    'import dualsolve, dualsolve.sdca._sdca as m; print(dualsolve.__file__); print(m.__file__)')" \
    || die "importing the ASan build failed: $(cat "$DIR"/asan.* 2>/dev/null | head -n 20)"
case "$where" in
    "$COPY/dualsolve/__init__.py"*"$COPY/dualsolve/"*) ;;
    *) die "dualsolve is not imported from the copy: $where" ;;
esac
echo "== dualsolve imported from $COPY/dualsolve (with $LIBASAN preloaded)"

[ ${#PYTEST_ARGS[@]} -gt 0 ] || PYTEST_ARGS=(-q -rfE)
PYTEST_RCS=()
CRASHED=()
t0=$(date +%s)
run_pytest() {  # args: pytest arguments; appends to PYTEST_RCS / CRASHED
    ( cd "$COPY" && "${RUN_ENV[@]}" "$PYTHON" -m pytest -p no:cacheprovider "$@" ) 2>&1 \
        | tee -a "$DIR/pytest.log"
    local rc=${PIPESTATUS[0]}
    PYTEST_RCS+=("$rc")
    # pytest's own exit codes are 0-5; anything else (or >= 128) is a signal or a fatal ASan
    # exit of the pytest process itself
    if [ "$rc" -gt 5 ]; then CRASHED+=("$* (exit $rc)"); fi
}
: >"$DIR/pytest.log"
echo "== running pytest under ASan in $COPY; log: $DIR/pytest.log"
if [ "$PER_FILE" = 1 ]; then
    for f in $(cd "$COPY" && ls tests/test_*.py); do
        echo "-- $f"
        run_pytest "$f" "${PYTEST_ARGS[@]}"
    done
else
    run_pytest "${PYTEST_ARGS[@]}"
fi
TEST_SECONDS=$(( $(date +%s) - t0 ))

# ---------------------------------------------------------------------------- summary
shopt -s nullglob
logs=("$DIR"/asan.*)
n_reports=0
n_other=0
if [ ${#logs[@]} -gt 0 ]; then
    n_reports=$(cat "${logs[@]}" | grep -c 'ERROR: AddressSanitizer')
    n_other=$(cat "${logs[@]}" | grep 'ERROR: \|AddressSanitizer: CHECK failed' | grep -vc 'ERROR: AddressSanitizer')
fi
n_fail=0
for rc in "${PYTEST_RCS[@]}"; do [ "$rc" = 0 ] || [ "$rc" = 5 ] || n_fail=$((n_fail + 1)); done

echo
echo "================================ ASan summary ================================"
echo "commit:        $REV$([ "$WITH_CHANGES" = 1 ] && echo ' + uncommitted changes')"
echo "copy:          $COPY$([ "$CLEANUP" = 1 ] && echo ' (removed on exit; --keep keeps it)')"
[ "$BUILD" = 1 ] && echo "build time:    ${BUILD_SECONDS}s"
echo "test time:     ${TEST_SECONDS}s"
[ ${#CRASHED[@]} -eq 0 ] || printf 'CRASHED:       pytest %s\n' "${CRASHED[@]}"
# pytest totals (summed over files with --per-file), then each report with its first
# frames, C lines mapped back to the .pyx/.pxd line through Cython's source comments
"$PYTHON" - "$DIR" "$COPY" "${logs[@]}" <<'EOF'
import collections, os, re, sys
dirname, copy, logs = sys.argv[1], sys.argv[2], sys.argv[3:]
totals = collections.Counter()
with open(os.path.join(dirname, "pytest.log"), errors="replace") as f:
    for line in f:
        if re.match(r"^=*\s*\d+ \w+.* in [\d.]+s", line):
            for k, what in re.findall(r"(\d+) (\w+)", line.split(" in ")[0]):
                totals[what] += int(k)
print("pytest:        " + (", ".join(f"{v} {k}" for k, v in totals.items()) or "no summary line"))
cache = {}
def pyx_line(cfile, lineno):
    if cfile not in cache:
        try:
            with open(os.path.join(copy, cfile), errors="replace") as f:
                cache[cfile] = f.readlines()
        except OSError:
            cache[cfile] = []
    lines = cache[cfile]
    for i in range(min(lineno, len(lines)) - 1, -1, -1):
        m = re.match(r'\s*/\* "([^"]+\.(?:pyx|pxd|pxi))":(\d+)', lines[i])
        if m:
            return f"{m.group(1)}:{m.group(2)}"
    return None
n = sum(open(log, errors="replace").read().count("ERROR: AddressSanitizer") for log in logs)
print(f"ASan reports:  {n}" + (f" (logs: {dirname}/asan.<pid>)" if logs else ""))
for log in logs:
    with open(log, errors="replace") as f:
        text = f.read().splitlines()
    frames, inreport = 0, False
    for line in text:
        if "ERROR: " in line or "AddressSanitizer: CHECK failed" in line:
            kind = re.sub(r"^=+\d+=+", "", line)
            if "ERROR: AddressSanitizer" not in line:
                kind += "  [an ASan runtime failure, not a memory error" + \
                    ("; the process limited its address space (RLIMIT_AS), which ASan " \
                     "cannot run under" if "mmap" in kind else "") + "]"
            print(f"  {os.path.basename(log)}: {kind}")
            frames, inreport = 0, True
        elif inreport and re.match(r"\s*#\d+ ", line) and frames < 6:
            m = re.search(r"(\S+\.c):(\d+)", line)
            src = pyx_line(m.group(1), int(m.group(2))) if m else None
            print("      " + line.strip() + (f"   [{src}]" if src else ""))
            frames += 1
        elif inreport and frames and not line.strip():
            inreport = False
EOF
[ "$n_other" -eq 0 ] || echo "other ASan runtime errors: $n_other (listed above; not memory errors)"
echo "=============================================================================="

if [ "$n_reports" -gt 0 ] || [ ${#CRASHED[@]} -gt 0 ]; then
    [ "$CLEANUP" = 1 ] && echo "(rerun with --keep to look at the logs and the build)"
    exit 1
fi
[ "$n_fail" -eq 0 ] || exit 2
exit 0
