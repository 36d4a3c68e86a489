#!/usr/bin/env bash
# The whole GPU suite on one 4-GPU node in parallel lanes, from the folder that holds the bundle (.gpu/):
#   OUT=gpu-out bash .gpu/gpu-lanes.sh [1|2|LANE...]
# A lane is DEVICES:REGEX[;REGEX...]: run-gpu-watched.sh's tests stage for each REGEX in turn, with
# CUDA_VISIBLE_DEVICES=DEVICES, into $OUT/<lane number>-<part number>/. Lanes run side by side; within a lane the
# parts run one after another; a lane on all four GPUs given last starts after the others. Without arguments: the
# whole suite's default split (below), which keeps every multi-GPU test on a pair of its own and puts only the
# one-GPU, both-ranks-on-one-GPU test beside a pair. That takes longer than one device call (10 minutes), so `1` and
# `2` run the same split in two halves: half 1 (the thread-rank op and layer tests beside the collective and graph
# tests) took 7.5 minutes on 4 H100s on 2026-11-27; half 2 (the rest) 5.7 minutes the same day, SharedGpuOpsGpuTest's
# batches 1.7 s a case.
# No test times anything it asserts, so sharing the node changes durations, not results; the tests that compare the
# device's free memory before and after are the exception and get GPUs no other lane touches.
# Each part's console feed is $OUT/<lane>-<part>/tests.txt; feeds.tgz holds them all (without the JUnit XML), also
# when a signal (the caller's timeout) stops the script.
# Ends with each part's counts and exits 1 when any part failed.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
t='dev\.ubuf\..*\.'
# UserBuffer, VmmUserBuffer, ProcessMode (register cycles) and Vmm compare the device's free memory before and
# after, so they run on GPUs 0 and 1, which no other lane touches then. Lane 2's one-GPU tests see GPU 2 as their
# device 0; only its two-GPU tests and SharedGpuOps share GPU 3.
ops="${t}(TpLayers|Fp8Overlap|Demo|OverlapOps|RingFusedTail|AtomicOps|TuningBehindAWait|SequenceParallelGrads)GpuTest"
memory="${t}(UserBuffer|VmmUserBuffer|ProcessMode|Vmm)GpuTest"
collectives="${t}(BulkOps|CollectiveClose|GraphCapture|Nccl|VmmUserBufferProcess|Watchdog)GpuTest"
kernels="${t}(AtomicGemm|Fp8Quantize|CublasLtGemm|Fp8Gemm|Fp8ScalePointer|Gemm|GemmTuning|StreamCandidateBench|ReductionKernel|ReportRead|LayerKernels)GpuTest"
shared="${t}SharedGpuOpsGpuTest"
four="${t}(DemoReplicas|StepGraph|FourRankOps)GpuTest"
case "${1:-}" in
  "") set -- "0,1:$ops;$memory" "2,3:$collectives;$kernels" "3:$shared" "0,1,2,3:$four" ;;
  1) set -- "0,1:$ops" "2,3:$collectives" ;;
  2) set -- "0,1:$memory" "2,3:$kernels" "3:$shared" "0,1,2,3:$four" ;;
  *:*) ;;
  *) echo "gpu-lanes: give 1, 2 or lanes DEVICES:REGEX[;REGEX...], got '$1'" >&2; exit 2 ;;
esac
rm -f "$OUT/lanes.txt"   # this run's parts only
# The runtime unpacks on first use: once, here, before the lanes race for it.
bash "$bundle/java.sh" -version > /dev/null 2>&1 || { echo "gpu-lanes: the bundle's java does not start"; exit 1; }

lane() {
  local n=$1 devices=${2%%:*} parts=${2#*:} p=0 regex
  IFS=';' read -ra list <<< "$parts"
  for regex in "${list[@]}"; do
    p=$((p + 1))
    local start=$SECONDS
    CUDA_VISIBLE_DEVICES=$devices OUT="$OUT/$n-$p" bash "$bundle/run-gpu-watched.sh" "tests=$regex"
    echo "lane $n part $p (GPUs $devices) rc=$? $((SECONDS - start))s: $(tr '\n' ' ' < "$OUT/$n-$p/tests-summary.txt" 2>/dev/null | tr -s ' ')" \
      >> "$OUT/lanes.txt"
  done
}

pack() {
  tar czf "$OUT/feeds.tgz" -C "$OUT" $(cd "$OUT" && ls lanes.txt [0-9]*-[0-9]*/tests.txt [0-9]*-[0-9]*/hs_err*.log 2>/dev/null)
}
# Cut short (the caller's timeout): keep what the parts wrote so far, then stop the lanes.
trap 'echo "gpu-lanes: stopped by a signal; feeds so far in feeds.tgz" >> "$OUT/lanes.txt"; pack; for p in ${pids[*]:-}; do pkill -TERM -P "$p"; kill "$p"; done 2>/dev/null; exit 124' TERM INT

# A lane that needs every GPU waits for the others: it starts after them.
pids=()
n=0
last=""
for spec in "$@"; do
  n=$((n + 1))
  if [ "${spec%%:*}" = "0,1,2,3" ] && [ $n -eq $# ]; then last="$n:$spec"; continue; fi
  lane $n "$spec" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
[ -n "$last" ] && lane "${last%%:*}" "${last#*:}"
pack
cat "$OUT/lanes.txt"
! grep -qv ' rc=0 ' "$OUT/lanes.txt"
