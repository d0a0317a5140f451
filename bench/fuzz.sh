#!/usr/bin/env bash
# Runs the libFuzzer targets of test/fuzz (built by the address-sanitizer
# build: scripts/test.sh --sanitizer=address, or ORTC_SANITIZER=address
# scripts/build.sh) and prints, per target, the executions, the edges covered
# and the crashes found, as a markdown table.
#
#   bench/fuzz.sh [--build DIR] [--seconds N | --runs N] [--target NAME]...
#                 [--corpus-only] [--work DIR]
#
#   --build DIR      the sanitizer build (default: build-asan)
#   --seconds N      run each target for N seconds (default 60)
#   --runs N         run each target for N executions instead
#   --target NAME    only this target (repeatable; default: all of them)
#   --corpus-only    start from the checked-in seeds alone and keep nothing
#                    (CI); otherwise the corpus grows in WORK/<target>/corpus
#   --work DIR       where corpora, logs and crash inputs go
#                    (default: bench/out/fuzz)
#
# Exits non-zero when a target crashes, leaks, times out on an input (10 s)
# or runs out of memory (2 GiB); the input is kept as WORK/<target>/crash-*,
# and `build-asan/test/fuzz/<target> FILE` replays it. With --corpus-only the
# work folder is temporary, so a failing input is also copied to
# bench/out/fuzz-crashes/ (or $ORTC_FUZZ_KEEP) and printed in base64: a CI log
# alone is enough to replay it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-asan"
SECONDS_EACH=60
RUNS=""
TARGETS=()
CORPUS_ONLY=0
WORK="$ROOT/bench/out/fuzz"
ALL_TARGETS=(fuzz_import fuzz_compile fuzz_session fuzz_ep_options fuzz_cpu_blob fuzz_npy
             fuzz_tensor_proto fuzz_paths)

while (($#)); do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --target) TARGETS+=("$2"); shift 2 ;;
    --corpus-only) CORPUS_ONLY=1; shift ;;
    --work) WORK="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds needs a number" >&2; exit 2; }
[[ -z "$RUNS" || "$RUNS" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --runs needs a number" >&2; exit 2; }

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:use_sigaltstack=0:allow_user_poisoning=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/scripts/sanitizer/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if ((CORPUS_ONLY)); then
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/ortc-fuzz-XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK"

failed=0
rows=()
for target in "${TARGETS[@]}"; do
  binary="$BUILD/test/fuzz/$target"
  seeds="$ROOT/test/fuzz/corpus/${target#fuzz_}"
  # fuzz_compile compiles what fuzz_import imports: the same model seeds.
  [[ "$target" == fuzz_compile ]] && seeds="$ROOT/test/fuzz/corpus/import"
  if [[ ! -x "$binary" ]]; then
    echo "fuzz.sh: $binary is not built (build with ORTC_SANITIZER=address)" >&2
    exit 1
  fi
  dir="$WORK/$target"
  mkdir -p "$dir/corpus"
  limit=(-max_total_time="$SECONDS_EACH")
  [[ -n "$RUNS" ]] && limit=(-runs="$RUNS")
  log="$dir/log.txt"
  if [[ -n "$RUNS" ]]; then
    echo "fuzz.sh: $target ($RUNS runs) ..."
  else
    echo "fuzz.sh: $target ($SECONDS_EACH s) ..."
  fi
  start=$(date +%s)
  status=0
  # The first folder takes new inputs; the seeds are read from the second.
  "$binary" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/" "$dir/corpus" "$seeds" > "$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  edges=$(grep -oE '(DONE|pulse|NEW|REDUCE|INITED) +cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  crashes=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                                        -o -name 'oom-*' \) | wc -l)
  if ((status != 0)); then
    failed=1
    echo "fuzz.sh: $target FAILED (exit $status); the end of $log:" >&2
    tail -40 "$log" >&2
    keep="${ORTC_FUZZ_KEEP:-$ROOT/bench/out/fuzz-crashes}"
    mkdir -p "$keep"
    while IFS= read -r input; do
      cp "$input" "$keep/$target-$(basename "$input")"
      echo "fuzz.sh: kept $keep/$target-$(basename "$input") ($(stat -c %s "$input") bytes)" >&2
      if (($(stat -c %s "$input") <= 65536)); then
        echo "fuzz.sh: base64 of $(basename "$input") (replay: base64 -d > FILE):" >&2
        base64 -w 0 "$input" >&2
        echo >&2
      fi
    done < <(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                                         -o -name 'oom-*' \))
  fi
  rows+=("| $target | ${runs:-?} | ${edges:-?} | $crashes | ${elapsed} s |")
done

echo
echo "| target | executions | edges covered | crashing inputs | time |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
exit "$failed"
