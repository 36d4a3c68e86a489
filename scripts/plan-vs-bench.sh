#!/usr/bin/env bash
# Does the planner measure what the benchmark measures? From the folder that holds the bundle (.gpu/):
#   OUT=DIR bash .gpu/plan-vs-bench.sh ag|rs TP SHAPE...
# For each SHAPE (M,K,N): `ubuf plan` (every candidate, the planner's own rounds and budget) into
# $OUT/plan-<op>-tp<TP>-<shape>.txt, then `ubuf bench <op>` on the same shape with exactly those candidates
# (PLAN_BENCH_ITERS rounds, default 20) into $OUT/bench-<op>-tp<TP>-<shape>.{json,txt}. Compare them with
# scripts/plan-vs-bench.py. Tuning caches are left as they are: the plan command tunes the GEMMs first.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 3 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
op=$1; tp=$2; shift 2
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
ubuf() { timeout -k 10 "${PLAN_BENCH_TIMEOUT_S:-240}" bash "$bundle/java.sh" -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli "$@"; }
rc=0
for shape in "$@"; do
  tag="$op-tp$tp-${shape//,/x}"
  ubuf plan --op "$op" --tp "$tp" --shape "$shape" > "$OUT/plan-$tag.txt" 2>&1 || { echo "plan $tag failed"; rc=1; continue; }
  # The table's rows: two leading spaces, a label, a number; the header and the footer do not match.
  methods=$(awk '/^  [a-z]/ && $2 ~ /^[0-9.]+$/ { print $1 }' "$OUT/plan-$tag.txt" | paste -sd';' -)
  [ -n "$methods" ] || { echo "plan $tag: no candidate table"; rc=1; continue; }
  ubuf bench "$op" --tp "$tp" --shapes "$shape" --methods "$methods" --iters "${PLAN_BENCH_ITERS:-20}" \
    --out "$OUT/bench-$tag.json" > "$OUT/bench-$tag.txt" 2>&1 || { echo "bench $tag failed"; rc=1; }
  echo "$tag: $(tr ';' '\n' <<< "$methods" | wc -l) candidates"
done
exit $rc
