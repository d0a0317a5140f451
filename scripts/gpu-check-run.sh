#!/usr/bin/env bash
# run.sh [RESULT_DIR]: the GPU half of scripts/gpu-check.sh. Written into
# OUT_DIR by `gpu-check.sh prepare OUT_DIR`; runs THERE, from OUT_DIR, with
# bash, coreutils, grep, sed and awk and the files beside it (no python, no
# ortc toolchain): every row of rows.tsv is one `bin/ortc-run` under
# `timeout` (args/<id> holds its arguments):
#   conformance  ONNX backend node cases the CUDA EP claims, --check against
#                onnx's expected outputs
#   model        the shared test models at every shape of their manifest,
#                --check against torch's outputs, timed lightly
#   time         the same models at batch 1 and 8, --check against ortc's CPU
#                EP outputs (computed when preparing), timed
#   gemm         small MatMuls per precision (checked), and the GEMM benchmark:
#                TFLOP/s = FLOPs / median latency, and "net" less its baseline
#                model (the benchmark's work but the GEMMs)
#   torch        where python3 has torch and sees the GPU: the same GEMM
#                chain in PyTorch eager (torch_gemm.py), timed the same way
# then prints ONE table (row, status, max abs and rel error, median / p90
# latency, note) and a summary line, and exits 0 whatever the rows say (2
# only when ortc-run cannot start at all). RESULT_DIR, when given, receives
# gpu-check-table.txt and gpu-check-logs.tar.gz (every row's ortc-run output).
#
# Environment:
#   ORTC_GPU_CHECK_DEVICE=gpu|emulation   emulation passes --ep-option
#       cuda:device=emulation: the CUDA partitions run on the host test double
#       (no GPU; the 4096 GEMM benchmark is replaced by a 256 one), to test
#       this script where there is no GPU. Default gpu.
#   ORTC_GPU_CHECK_BUDGET_S   rows not started by then are SKIPPED, and each
#       row's timeout is cut to end by then + 30 s (default 390 on a GPU,
#       7200 on the emulation)
#   ORTC_GPU_CHECK_JOBS       conformance cases run at a time (default 12 on a
#       GPU, 2 on the emulation)
#   ORTC_GPU_CHECK_TIMEOUT_S  one row's limit (default 60 s for a conformance
#       case and 180 s for the others on a GPU; 900 and 1800 on the emulation)
#   ORTC_GPU_CHECK_FILTER     an extended regex: only rows whose label matches
#   ORTC_GPU_CHECK_COMPACT=1  the printed table folds the conformance rows
#       that are ok into one line (the table file always lists every row)
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE" || exit 2
RESULT_DIR="${1:-}"
DEVICE="${ORTC_GPU_CHECK_DEVICE:-gpu}"
case "$DEVICE" in
gpu | emulation) ;;
*)
  echo "run.sh: ORTC_GPU_CHECK_DEVICE must be gpu or emulation, got '$DEVICE'" >&2
  exit 2
  ;;
esac
if [[ ! -f rows.tsv || ! -x bin/ortc-run ]]; then
  echo "run.sh: $HERE has no rows.tsv or bin/ortc-run: run 'scripts/gpu-check.sh prepare' first" >&2
  exit 2
fi
JOBS="${ORTC_GPU_CHECK_JOBS:-2}"
FILTER="${ORTC_GPU_CHECK_FILTER:-}"
COMPACT="${ORTC_GPU_CHECK_COMPACT:-0}"
if [[ "$DEVICE" == gpu ]]; then
  BUDGET="${ORTC_GPU_CHECK_BUDGET_S:-390}"
  JOBS="${ORTC_GPU_CHECK_JOBS:-12}"
  DEVICE_ARGS=()
  # Per-row limits (seconds), and the runs each timing class times.
  LIMIT_CONFORMANCE=60 LIMIT_OTHER=180
  TIME_light=(--iterations 20 --warmup 3)
  TIME_full=(--iterations 100 --warmup 10)
  TIME_bench=(--iterations 20 --warmup 3)
else
  BUDGET="${ORTC_GPU_CHECK_BUDGET_S:-7200}"
  DEVICE_ARGS=(--ep-option cuda:device=emulation)
  LIMIT_CONFORMANCE=900 LIMIT_OTHER=1800
  TIME_light=()
  TIME_full=(--iterations 2 --warmup 0)
  TIME_bench=(--iterations 2 --warmup 0)
fi
TIME_none=()
# (TIME_* are read through a nameref in run_row.)
if [[ -n "${ORTC_GPU_CHECK_TIMEOUT_S:-}" ]]; then
  LIMIT_CONFORMANCE=$ORTC_GPU_CHECK_TIMEOUT_S LIMIT_OTHER=$ORTC_GPU_CHECK_TIMEOUT_S
fi
START=$(date +%s)
DEADLINE=$((START + BUDGET))
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ortc-gpu-check.XXXXXX")" || exit 2
mkdir -p "$WORK/results" "$WORK/logs"

# --- the machine ------------------------------------------------------------
SYSTEM_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH="$HERE/lib${SYSTEM_LD_LIBRARY_PATH:+:$SYSTEM_LD_LIBRARY_PATH}"
if ! version="$(bin/ortc-run --version 2>&1)"; then
  # The machine's C++ runtime is missing or older than the build machine's.
  export LD_LIBRARY_PATH="$HERE/lib:$HERE/lib/compat${SYSTEM_LD_LIBRARY_PATH:+:$SYSTEM_LD_LIBRARY_PATH}"
  if ! version="$(bin/ortc-run --version 2>&1)"; then
    echo "run.sh: bin/ortc-run does not start: $version" >&2
    exit 2
  fi
  version="$version (with lib/compat's C++ runtime)"
fi

HEADER=()
if command -v nvidia-smi > /dev/null 2>&1; then
  gpu="$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  HEADER+=("GPU: ${gpu:-nvidia-smi printed nothing}")
else
  HEADER+=("GPU: nvidia-smi not found")
fi
if [[ "$DEVICE" == emulation ]]; then
  HEADER+=("device: emulation (--ep-option cuda:device=emulation: the CUDA partitions on the host test double, not a GPU; GEMM benchmark at 256)")
  HEADER+=("cuBLAS: not used (the emulation's host GEMM)")
else
  HEADER+=("device: gpu (GPU 0 through libcuda.so.1)")
  # cuBLAS is loaded with dlopen (libcublas.so.13): the loader's cache, the
  # CUDA toolkit, or PyTorch's pip package.
  cublas=""
  if ldconfig -p 2> /dev/null | grep -q 'libcublas\.so\.13 '; then
    cublas="the loader's cache"
  else
    for dir in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
      if [[ -e "$dir/libcublas.so.13" ]]; then
        cublas="$dir"
        break
      fi
    done
    if [[ -z "$cublas" ]]; then
      found="$(timeout 30 find /opt /usr/local /usr/lib /root -maxdepth 10 -name libcublas.so.13 2> /dev/null | head -1)"
      [[ -n "$found" ]] && cublas="$(dirname "$found")"
    fi
    [[ -n "$cublas" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cublas"
  fi
  HEADER+=("cuBLAS: ${cublas:-libcublas.so.13 not found (the GEMM rows will fail)}")
fi
# PyTorch eager: the GEMM benchmark's equivalent (torch_gemm.py) where torch
# and a GPU are there. The shared models are ONNX exports whose torch sources
# are not shipped: they are not timed in torch.
TORCH=0
torch_line="PyTorch eager: not available on the device machine"
if [[ "$DEVICE" == emulation ]]; then
  torch_line="PyTorch eager: not run on the emulation"
elif command -v python3 > /dev/null 2>&1 &&
  torch_version="$(timeout 120 python3 -c 'import torch; print(torch.__version__, "with CUDA" if torch.cuda.is_available() else "without a CUDA device")' 2> /dev/null)"; then
  if [[ "$torch_version" == *"with CUDA" && -f torch_gemm.py ]]; then
    TORCH=1
    torch_line="PyTorch eager: torch $torch_version: the GEMM benchmark (torch rows); the shared models are not timed in torch (ONNX exports; their torch sources are not shipped)"
  else
    torch_line="PyTorch eager: torch $torch_version: not timed"
  fi
fi
HEADER+=("$torch_line")
HEADER+=("runner: $version; $(cat prepared.txt 2> /dev/null)")

# --- the rows ---------------------------------------------------------------
# rows.tsv: id, phase, modes, timing, flops, pair, label, note.
declare -a IDS=() PHASE=() TIMING=() FLOPS=() PAIR=() LABEL=() NOTE=()
while IFS=$'\t' read -r id phase modes timing flops pair label note; do
  [[ "$id" == \#* || -z "$id" ]] && continue
  [[ "$modes" == both || "$modes" == "$DEVICE" ]] || continue
  if [[ -n "$FILTER" && ! "$label" =~ $FILTER ]]; then continue; fi
  IDS+=("$id")
  PHASE[10#$id]="$phase" TIMING[10#$id]="$timing" FLOPS[10#$id]="$flops"
  PAIR[10#$id]="$pair" LABEL[10#$id]="$label" NOTE[10#$id]="$note"
done < rows.tsv

# One row: writes $WORK/results/<id> as status, max abs, max rel, latency,
# median ms, note (tab separated).
run_row() {
  local id=$1 n=$((10#$1))
  local result="$WORK/results/$id" log="$WORK/logs/$id.log"
  local now limit
  now=$(date +%s)
  if ((now >= DEADLINE)); then
    printf 'SKIPPED\t-\t-\t-\t-\tthe time budget (%s s) was spent\n' "$BUDGET" > "$result"
    return
  fi
  local -a args=()
  mapfile -t args < "args/$id"
  if ((${#args[@]} == 0)); then
    printf 'FAIL\t-\t-\t-\t-\tnot prepared\n' > "$result"
    return
  fi
  limit=$LIMIT_OTHER
  [[ "${PHASE[n]}" == conformance ]] && limit=$LIMIT_CONFORMANCE
  ((limit > DEADLINE + 30 - now)) && limit=$((DEADLINE + 30 - now))
  local -n timing_args="TIME_${TIMING[n]}"
  timeout -k 5 "$limit" bin/ortc-run "${args[@]}" "${DEVICE_ARGS[@]}" "${timing_args[@]}" > "$log" 2>&1
  local rc=$?
  local status maxabs=- maxrel=- latency=- median=- note=""
  local check
  check="$(grep -E '^check: (ok|MISMATCH)' "$log" | tail -1)"
  if [[ -n "$check" ]]; then
    maxabs="$(sed -n 's/.*max abs \([^,]*\), max rel \([^)]*\)).*/\1/p' <<< "$check")"
    maxrel="$(sed -n 's/.*max abs \([^,]*\), max rel \([^)]*\)).*/\2/p' <<< "$check")"
  fi
  local timed
  timed="$(grep -E '^latency: median' "$log" | tail -1)"
  if [[ -n "$timed" ]]; then
    median="$(sed -n 's/^latency: median \([^ ]*\) ms, p90 \([^ ]*\) ms.*/\1/p' <<< "$timed")"
    latency="$median / $(sed -n 's/^latency: median \([^ ]*\) ms, p90 \([^ ]*\) ms.*/\2/p' <<< "$timed") ms"
  fi
  if ((rc == 124 || rc == 137)); then
    status=TIMEOUT note="killed after ${limit} s"
  elif [[ "$check" == "check: MISMATCH"* ]]; then
    status=MISMATCH
    note="$(grep -m1 'MISMATCH: ' "$log" | sed 's/^ *//; s/  */ /g' | cut -c1-150)"
  elif ((rc != 0)); then
    status=FAIL
    if ((rc > 128)); then
      note="crashed (signal $((rc - 128)))"
    else
      note="$(grep -E '^ortc-run: ' "$log" | tail -1 | cut -c11-170)"
      [[ -z "$note" ]] && note="exit status $rc: $(tail -1 "$log" | cut -c1-150)"
    fi
  elif [[ -n "$check" ]]; then
    status=ok
  else
    status=ran
  fi
  if [[ "$status" != FAIL && "$status" != TIMEOUT && "${FLOPS[n]}" != 0 && "$median" != - ]]; then
    note="$(awk -v f="${FLOPS[n]}" -v ms="$median" 'BEGIN { printf "%.4g TFLOP/s", f / (ms * 1e-3) / 1e12 }')"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$status" "$maxabs" "$maxrel" "$latency" "$median" "$note" > "$result"
}

for phase in model time gemm; do
  count=0
  for id in "${IDS[@]}"; do
    [[ "${PHASE[10#$id]}" == "$phase" ]] || continue
    run_row "$id"
    count=$((count + 1))
  done
  ((count)) && echo "run.sh: $phase: $count row(s) done ($(($(date +%s) - START)) s)"
done
if ((TORCH)); then
  limit=$((DEADLINE + 30 - $(date +%s)))
  ((limit > 180)) && limit=180
  if ((limit > 10)); then
    timeout -k 5 "$limit" python3 torch_gemm.py 4096 4 20 3 > "$WORK/logs/torch.log" 2>&1
    echo "run.sh: torch: exit status $? ($(($(date +%s) - START)) s)"
  else
    echo "torch: skipped: the time budget was spent" > "$WORK/logs/torch.log"
  fi
fi
# The conformance cases are small: JOBS at a time.
count=0 running=0
for id in "${IDS[@]}"; do
  [[ "${PHASE[10#$id]}" == conformance ]] || continue
  run_row "$id" &
  count=$((count + 1)) running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n
    running=$((running - 1))
  fi
done
wait
((count)) && echo "run.sh: conformance: $count case(s) done, $JOBS at a time ($(($(date +%s) - START)) s)"

# --- the table --------------------------------------------------------------
declare -A BASELINE=()
for id in "${IDS[@]}"; do
  n=$((10#$id))
  if [[ "${PHASE[n]}" == gemm && "${FLOPS[n]}" == 0 && "${PAIR[n]}" != - && -f "$WORK/results/$id" ]]; then
    IFS=$'\t' read -r _ _ _ _ median _ < "$WORK/results/$id"
    [[ "$median" != - ]] && BASELINE["${PAIR[n]}"]="$median"
  fi
done

declare -A COUNT=()
declare -a T_ROW=() T_STATUS=() T_ABS=() T_REL=() T_LAT=() T_NOTE=()
best_tflops="" best_label=""
for phase in conformance model time gemm; do
  for id in "${IDS[@]}"; do
    n=$((10#$id))
    [[ "${PHASE[n]}" == "$phase" ]] || continue
    status=FAIL maxabs=- maxrel=- latency=- median=- note="no result"
    [[ -f "$WORK/results/$id" ]] && IFS=$'\t' read -r status maxabs maxrel latency median note < "$WORK/results/$id"
    COUNT["$status"]=$((${COUNT["$status"]:-0} + 1))
    COUNT["$phase $status"]=$((${COUNT["$phase $status"]:-0} + 1))
    COUNT["$phase"]=$((${COUNT["$phase"]:-0} + 1))
    if [[ "${FLOPS[n]}" != 0 && "$median" != - && "$status" == ran ]]; then
      base="${BASELINE[${PAIR[n]}]:-}"
      if [[ -n "$base" ]]; then
        net="$(awk -v f="${FLOPS[n]}" -v ms="$median" -v b="$base" 'BEGIN { if (ms > b) printf "%.4g", f / ((ms - b) * 1e-3) / 1e12; else printf "-" }')"
        note="$note, net $net TFLOP/s (less the baseline's $base ms)"
      fi
      tflops="${note%% TFLOP/s*}"
      if [[ -z "$best_tflops" ]] || awk -v a="$tflops" -v b="$best_tflops" 'BEGIN { exit !(a > b) }'; then
        best_tflops="$tflops" best_label="${LABEL[n]}"
      fi
    fi
    static="${NOTE[n]}"
    [[ "$static" == - ]] && static=""
    if [[ -n "$static" && -n "$note" ]]; then
      note="$note; $static"
    elif [[ -n "$static" ]]; then
      note="$static"
    fi
    T_ROW+=("$phase: ${LABEL[n]}") T_STATUS+=("$status") T_ABS+=("$maxabs") T_REL+=("$maxrel")
    T_LAT+=("$latency") T_NOTE+=("$note")
  done
done
# torch_gemm.py's lines: "torch: LABEL: median X ms, p90 Y ms, Z TFLOP/s", or
# "torch: LABEL: failed: ..." (its first line names torch and the GPU).
if ((TORCH)); then
  rows_before=${#T_ROW[@]}
  while IFS= read -r line; do
    if [[ "$line" =~ ^torch:\ (.*):\ median\ ([^ ]+)\ ms,\ p90\ ([^ ]+)\ ms,\ ([^ ]+)\ TFLOP/s$ ]]; then
      T_ROW+=("torch: ${BASH_REMATCH[1]}") T_STATUS+=(ran) T_ABS+=(-) T_REL+=(-)
      T_LAT+=("${BASH_REMATCH[2]} / ${BASH_REMATCH[3]} ms") T_NOTE+=("${BASH_REMATCH[4]} TFLOP/s (PyTorch eager)")
      COUNT[ran]=$((${COUNT[ran]:-0} + 1)) COUNT["torch ran"]=$((${COUNT["torch ran"]:-0} + 1))
    elif [[ "$line" =~ ^torch:\ (.*):\ failed:\ (.*)$ ]]; then
      T_ROW+=("torch: ${BASH_REMATCH[1]}") T_STATUS+=(FAIL) T_ABS+=(-) T_REL+=(-) T_LAT+=(-)
      T_NOTE+=("${BASH_REMATCH[2]}")
      COUNT[FAIL]=$((${COUNT[FAIL]:-0} + 1))
    fi
  done < "$WORK/logs/torch.log"
  if ((${#T_ROW[@]} == rows_before)); then
    T_ROW+=("torch: gemm 4096^3 x4") T_STATUS+=(FAIL) T_ABS+=(-) T_REL+=(-) T_LAT+=(-)
    T_NOTE+=("$(grep -v '^torch: [0-9]' "$WORK/logs/torch.log" | tail -1 | cut -c1-150)")
    COUNT[FAIL]=$((${COUNT[FAIL]:-0} + 1))
  fi
  COUNT[torch]=$((${#T_ROW[@]} - rows_before))
fi

elapsed=$(($(date +%s) - START))
summary="summary: ${#T_ROW[@]} rows: ${COUNT[ok]:-0} ok, ${COUNT[ran]:-0} timed, ${COUNT[MISMATCH]:-0} MISMATCH, ${COUNT[FAIL]:-0} FAIL, ${COUNT[TIMEOUT]:-0} TIMEOUT, ${COUNT[SKIPPED]:-0} SKIPPED"
for phase in conformance model time gemm torch; do
  total=${COUNT[$phase]:-0}
  ((total)) || continue
  good=$((${COUNT["$phase ok"]:-0} + ${COUNT["$phase ran"]:-0}))
  summary+="; $phase $good/$total ok"
done
[[ -n "$best_tflops" ]] && summary+="; best GEMM $best_tflops TFLOP/s ($best_label)"
summary+="; device $DEVICE; ${elapsed} s"

# print_table COMPACT: the header, the table, the summary.
print_table() {
  local compact=$1 i w0=3 w1=6 w2=7 w3=7 w4=22
  local -a keep=()
  local folded_ok=0
  for i in "${!T_ROW[@]}"; do
    if ((compact)) && [[ "${T_ROW[i]}" == conformance:* && "${T_STATUS[i]}" == ok ]]; then
      folded_ok=$((folded_ok + 1))
      continue
    fi
    keep+=("$i")
    ((${#T_ROW[i]} > w0)) && w0=${#T_ROW[i]}
    ((${#T_STATUS[i]} > w1)) && w1=${#T_STATUS[i]}
    ((${#T_ABS[i]} > w2)) && w2=${#T_ABS[i]}
    ((${#T_REL[i]} > w3)) && w3=${#T_REL[i]}
    ((${#T_LAT[i]} > w4)) && w4=${#T_LAT[i]}
  done
  printf '%s\n' "${HEADER[@]}"
  echo
  printf "%-${w0}s  %-${w1}s  %-${w2}s  %-${w3}s  %-${w4}s  %s\n" row status "max abs" "max rel" "latency (median / p90)" note
  if ((folded_ok)); then
    printf "%-${w0}s  %-${w1}s  %-${w2}s  %-${w3}s  %-${w4}s  %s\n" "conformance: $folded_ok cases" ok - - - "folded (ORTC_GPU_CHECK_COMPACT=1)"
  fi
  for i in "${keep[@]}"; do
    printf "%-${w0}s  %-${w1}s  %-${w2}s  %-${w3}s  %-${w4}s  %s\n" "${T_ROW[i]}" "${T_STATUS[i]}" \
      "${T_ABS[i]}" "${T_REL[i]}" "${T_LAT[i]}" "${T_NOTE[i]}" | sed 's/ *$//'
  done
  echo "$summary"
}

print_table "$COMPACT"
if [[ -n "$RESULT_DIR" ]]; then
  mkdir -p "$RESULT_DIR"
  print_table 0 > "$RESULT_DIR/gpu-check-table.txt"
  tar -czf "$RESULT_DIR/gpu-check-logs.tar.gz" -C "$WORK" logs 2> /dev/null ||
    echo "run.sh: could not write $RESULT_DIR/gpu-check-logs.tar.gz" >&2
fi
rm -rf "$WORK"
exit 0
