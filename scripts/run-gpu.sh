#!/usr/bin/env bash
# On a GPU node, from the repository root with the bundle in .gpu/: runs the stages named on the command line.
# Stages: info, tests[=CLASS_REGEX], gemm, p2p, torch, and "bench ARGS..." passed to `ubuf bench` (quote it).
# tests demands GPUs (ubuf.requireGpu=true): a GPU test that would skip here fails instead, with the reason;
# UBUF_REQUIRE_GPU=false lets them skip (e.g. the 2-GPU tests on a 1-GPU node).
# Everything a stage prints goes to $OUT/log.txt (default ./gpu-out); results JSON to $OUT/*.json.
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
LOG="$OUT/log.txt"
export UBUF_COMMIT=$(cat "$B/COMMIT" 2>/dev/null || echo unknown)
J() { bash "$B/java.sh" "$B" "$@"; }
UBUF() { J -cp "$B/lib/*" dev.ubuf.cli.UbufCli "$@"; }
for stage in "$@"; do
  echo "=== $stage ($(date +%T))" | tee -a "$LOG"
  case "$stage" in
    info) UBUF info 2>&1 | tee -a "$LOG" ;;
    tests*) pat=${stage#tests}; pat=${pat#=}
      cp=$(ls "$B"/lib/*.jar | grep -v console-standalone | tr '\n' ':')
      J -jar "$B"/lib/junit-platform-console-standalone-*.jar execute -cp "$cp" \
        --include-classname "${pat:-.*Gpu.*Test}" --select-package dev.ubuf --details=tree --disable-banner \
        --config=ubuf.requireGpu="${UBUF_REQUIRE_GPU:-true}" \
        >> "$LOG" 2>&1
      grep -E "✘|tests (successful|failed|found)" "$LOG" | tail -40 ;;
    gemm) UBUF bench gemm --out "$OUT/gemm.json" 2>&1 | tee -a "$LOG" ;;
    p2p) UBUF bench p2p --out "$OUT/p2p.json" 2>&1 | tee -a "$LOG" ;;
    torch) PYTHONUNBUFFERED=1 torchrun --nproc-per-node=2 "$B/anchor_torch.py" --json "$OUT/torch.json" 2>&1 \
        | grep -vE "^W[0-9]|OMP_NUM|warn|return func" | tee -a "$LOG" | tail -10 ;;
    bench\ *) UBUF $stage 2>&1 | tee -a "$LOG" ;;
    *) echo "unknown stage $stage" | tee -a "$LOG" ;;
  esac
done
