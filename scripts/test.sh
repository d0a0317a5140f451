#!/usr/bin/env bash
# README command 2: set up, build, and run every test (lit + GoogleTest via ctest).
#
#   scripts/test.sh                        the plain build (build/) and every test
#   scripts/test.sh --sanitizer=address    ASan + LeakSanitizer + UBSan (build-asan/):
#                                          every test (conformance on a sample), then
#                                          each fuzz target for ORTC_FUZZ_SECONDS (30)
#                                          over its checked-in corpus
#   scripts/test.sh --sanitizer=thread     TSan (build-tsan/): the concurrency tests
#
# A finding of any sanitizer fails the test it happens in. ORTC_BUILD_DIR
# overrides the build folder.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

SANITIZER=""
for arg in "$@"; do
  case "$arg" in
    --sanitizer=*) SANITIZER="${arg#--sanitizer=}" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
case "$SANITIZER" in
  "") DEFAULT_BUILD="$ROOT/build" ;;
  address) DEFAULT_BUILD="$ROOT/build-asan" ;;
  thread) DEFAULT_BUILD="$ROOT/build-tsan" ;;
  *) echo "test.sh: --sanitizer must be address or thread, not '$SANITIZER'" >&2; exit 2 ;;
esac
export ORTC_BUILD_DIR="${ORTC_BUILD_DIR:-$DEFAULT_BUILD}"
BUILD="$ORTC_BUILD_DIR"

"$ROOT/scripts/setup.sh"
# The generated dialect must match the pinned onnx schemas.
"$ROOT/.venv/bin/python" "$ROOT/utils/gen_onnx_dialect.py" --check

JOBS="${ORTC_JOBS:-$(nproc)}"
if [[ -z "$SANITIZER" ]]; then
  "$ROOT/scripts/build.sh"
  cd "$BUILD"
  exec ctest --output-on-failure -j"$JOBS"
fi

# Sanitizer builds use clang (setup.sh installs clang-22 and its runtimes).
export ORTC_SANITIZER="$SANITIZER"
# Findings abort the process: a test can only pass clean. LeakSanitizer runs
# with ASan; its suppressions name leaks inside libraries we do not build.
# A failed allocation returns NULL as it would without ASan: the runtime
# refuses the run rather than the sanitizer aborting. LLVM's signal handling
# installs its own alternate signal stacks, which ASan's must not manage.
# LLVM's allocator headers poison the slabs they start when compiled with
# ASan, and libLLVM/libMLIR (built without it) then allocate from the same
# slabs without unpoisoning: user poisoning is off, or every MLIR type made
# after one of ours could be reported as a use-after-poison.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allocator_may_return_null=1:use_sigaltstack=0:allow_user_poisoning=0"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$ROOT/scripts/sanitizer/tsan.supp"
for var in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
  echo "test.sh: $var=${!var}"
done
if [[ "$SANITIZER" == thread ]]; then
  # TSan checks the runtime: only the concurrency tests' binaries are built
  # under it, and their fixture models are compiled by the plain build's
  # ortc (built first if missing; in .ci/run the first stage built it).
  ORTC_SANITIZER="" ORTC_BUILD_DIR="$ROOT/build" "$ROOT/scripts/build.sh"
  export ORTC_CMAKE_ARGS="-DORTC_FIXTURE_COMPILER=$ROOT/build/tools/ortc/ortc"
  ORTC_BUILD_TARGETS="ortc-session-tests ortc-capi-tests ortc-concurrency-tests
                      ortc-thread-pool-tests" "$ROOT/scripts/build.sh"
  cd "$BUILD"
  ctest --output-on-failure -j"$JOBS" -L concurrency
  exit
fi
"$ROOT/scripts/build.sh"
cd "$BUILD"
ctest --output-on-failure -j"$JOBS"
"$ROOT/bench/fuzz.sh" --build "$BUILD" --seconds "${ORTC_FUZZ_SECONDS:-30}" --corpus-only
