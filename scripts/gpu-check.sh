#!/usr/bin/env bash
# The CUDA EP on a real GPU, in two phases (issue 14):
#
#   scripts/gpu-check.sh prepare OUT_DIR [--conformance all|N|REGEX] [--size-cap MIB]
#                                        [--no-build]
#       HERE, on the build machine: builds ortc and ortc-run if needed
#       (scripts/build.sh on a fresh checkout, else ninja for the two tools;
#       --no-build uses what build/ has), then scripts/gpu_check_prepare.py
#       compiles with --ep=cuda,cpu the shared test models (../shared/models),
#       the ONNX backend cases the CUDA EP passes (test/conformance/
#       cuda.expected; all by default, or N spread over the list, or those
#       matching REGEX; beyond --size-cap, 50 MiB by default, cases are left
#       out round robin over the ops they test) and GEMM models (checks per
#       precision, the 4096x4096x4096 benchmark), computes the CPU
#       references with --ep=cpu, and writes OUT_DIR:
#         run.sh         the GPU phase (scripts/gpu-check-run.sh)
#         rows.tsv       one row per ortc-run invocation; args/<id> its arguments
#         bin/ortc-run   the runtime-only runner; lib/ the shared libraries it
#                        needs beyond glibc (lib/compat: the C++ runtime, used
#                        only where the machine's is missing or too old)
#         models/ cases/ data/   compiled models, inputs, references
#       and prints its size (the device tool carries at most 64 MiB).
#
#   OUT_DIR/run.sh [RESULT_DIR]
#       THERE, on the GPU machine, from OUT_DIR, with bash and the files
#       above only: runs every row with ortc-run under timeout, prints one
#       table and a summary line, exits 0 (see run.sh for its environment:
#       ORTC_GPU_CHECK_DEVICE=emulation runs the CUDA partitions on the host
#       test double, to try it here; ORTC_GPU_CHECK_BUDGET_S, _JOBS,
#       _FILTER, _COMPACT).
#
#   scripts/gpu-check.sh run OUT_DIR [RESULT_DIR]   is OUT_DIR/run.sh.
#
# Through the device tool: prepare into build/gpu-check (ignored, so name it
# in carry; with the repository it stays under the tool's 64 MiB), then run
#   cd build/gpu-check && ORTC_GPU_CHECK_COMPACT=1 ./run.sh "$OUT"
# with carry ["build/gpu-check"] and timeout_s 480: the reply's output tail
# ends with the models, GEMM and torch rows and the summary; $OUT brings back
# gpu-check-table.txt (every row) and gpu-check-logs.tar.gz. run.sh stops
# starting rows after ORTC_GPU_CHECK_BUDGET_S (390 s) and cuts each row's
# timeout to end by then, so it ends within about 7 minutes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ORTC_BUILD_DIR:-$ROOT/build}"
PYTHON="${ORTC_PYTHON:-$ROOT/.venv/bin/python}"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 2
}

[[ $# -ge 2 ]] || usage
phase=$1 out=$2
shift 2
case "$phase" in
prepare)
  build=1
  prepare_args=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
    --no-build) build=0 ;;
    --conformance)
      [[ $# -ge 2 ]] || usage
      prepare_args+=(--conformance "$2")
      shift
      ;;
    --conformance=*) prepare_args+=(--conformance "${1#*=}") ;;
    --size-cap)
      [[ $# -ge 2 ]] || usage
      prepare_args+=(--size-cap "$2")
      shift
      ;;
    --size-cap=*) prepare_args+=(--size-cap "${1#*=}") ;;
    *) usage ;;
    esac
    shift
  done
  if ((build)); then
    if [[ ! -f "$BUILD/build.ninja" ]]; then
      "$ROOT/scripts/build.sh"
    else
      ninja -C "$BUILD" ortc ortc-run
    fi
  fi
  for tool in "$BUILD/tools/ortc/ortc" "$BUILD/tools/ortc-run/ortc-run"; do
    [[ -x "$tool" ]] || {
      echo "gpu-check.sh: $tool is not built (drop --no-build, or run scripts/build.sh)" >&2
      exit 1
    }
  done
  [[ -x "$PYTHON" ]] || {
    echo "gpu-check.sh: no $PYTHON (scripts/setup.sh makes the .venv with onnx and numpy)" >&2
    exit 1
  }
  exec "$PYTHON" "$ROOT/scripts/gpu_check_prepare.py" --ortc "$BUILD/tools/ortc/ortc" \
    --ortc-run "$BUILD/tools/ortc-run/ortc-run" --out "$out" "${prepare_args[@]}"
  ;;
run)
  exec "$out/run.sh" "$@"
  ;;
*) usage ;;
esac
