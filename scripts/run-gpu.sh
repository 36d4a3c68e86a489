#!/usr/bin/env bash
# The GPU node's runner, from the folder that holds the bundle (.gpu/, made by scripts/gpu-bundle.sh):
#   OUT=gpu-out bash .gpu/run-gpu.sh STAGE...
# Runs every stage named, in order, even after one fails; records each stage's exit code; ends with a summary and
# exits 1 when any stage failed (an unknown stage is a failure), 2 when none was named.
# Stages:
#   info               ubuf info
#   tests[=REGEX]      the GPU integration tests whose class names match REGEX (default .*Gpu.*Test), with
#                      -Dubuf.requireGpu=true: a test that would skip for want of a GPU fails instead
#                      (UBUF_REQUIRE_GPU=false lets them skip, e.g. the 2-GPU tests on a 1-GPU node)
#   gemm | p2p         ubuf bench gemm|p2p --out $OUT/gemm.json|p2p.json
#   "bench ARGS..."    ubuf bench ARGS, as one quoted word, e.g. "bench ag --out gpu-out/ag.json"
#   torch[=ARGS]       the PyTorch baseline, torchrun --nproc-per-node=2 torch_baseline.py --json $OUT/torch.json ARGS
# In $OUT (default ./gpu-out): log.txt (all output), summary.txt (a line per stage), tests.txt (the JUnit console's
# report), tests-summary.txt (its counts), junit/ (its XML reports) and the results files.
set -uo pipefail
if [ $# -eq 0 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2   # the comment above
  exit 2
fi

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log="$OUT/log.txt"
summary="$OUT/summary.txt"
: > "$summary"
# Multicast stays off for every stage, the PyTorch one included (java.sh sets the same for Java).
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
UBUF_COMMIT=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
export UBUF_COMMIT

java_() { bash "$bundle/java.sh" "$@"; }
ubuf() { java_ -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli "$@"; }
logged() { "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

tests() {
  local regex=${1:-.*Gpu.*Test} console cp
  console=$(ls "$bundle"/lib/junit-platform-console-standalone-*.jar 2>/dev/null | head -1)
  [ -n "$console" ] || { echo "no JUnit console launcher in $bundle/lib"; return 1; }
  cp=$(ls "$bundle"/lib/*.jar | grep -v console-standalone | paste -sd: -)
  java_ -XX:ErrorFile="$OUT/hs_err.log" -Dubuf.requireGpu="${UBUF_REQUIRE_GPU:-true}" -jar "$console" execute -cp "$cp" --select-package dev.ubuf \
    --include-classname "$regex" --fail-if-no-tests --details=testfeed --disable-banner \
    --reports-dir "$OUT/junit" > "$OUT/tests.txt" 2>&1
  local rc=$?
  cat "$OUT/tests.txt" >> "$log"
  grep -E '^\[ *[0-9]+ (containers|tests) ' "$OUT/tests.txt" > "$OUT/tests-summary.txt"
  grep -E ':: (FAILED|ABORTED)' "$OUT/tests.txt" | sed 's/\x1b\[[0-9;]*m//g' | head -40
  cat "$OUT/tests-summary.txt"
  return $rc
}

torch_baseline() {
  command -v torchrun > /dev/null || { echo "torchrun not found: the torch stage needs PyTorch on this node"; return 127; }
  # shellcheck disable=SC2086 # the stage's arguments are meant to split into words
  PYTHONUNBUFFERED=1 torchrun --nproc-per-node=2 "$bundle/torch_baseline.py" --json "$OUT/torch.json" $1
}

failed=0
for stage in "$@"; do
  echo "=== $stage ($(date +%T))" | tee -a "$log"
  started=$SECONDS
  case "$stage" in
    info) logged ubuf info ;;
    tests | tests=*) regex=${stage#tests}; tests "${regex#=}" ;;
    gemm | p2p) logged ubuf bench "$stage" --out "$OUT/$stage.json" ;;
    "bench "*) read -r -a words <<< "$stage"; logged ubuf "${words[@]}" ;;
    torch | torch=*) args=${stage#torch}; logged torch_baseline "${args#=}" ;;
    *) echo "unknown stage '$stage' (stages: info, tests[=REGEX], gemm, p2p, \"bench ARGS\", torch[=ARGS])" \
         | tee -a "$log"; false ;;
  esac
  rc=$?
  [ $rc -eq 0 ] || failed=1
  printf '%-40s exit %3d  %5ds\n' "$stage" "$rc" "$((SECONDS - started))" >> "$summary"
done
echo "=== summary ($([ $failed -eq 0 ] && echo 'all stages passed' || echo 'some stages FAILED'))" | tee -a "$log"
tee -a "$log" < "$summary"
exit $failed
