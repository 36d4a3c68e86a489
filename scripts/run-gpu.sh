#!/usr/bin/env bash
# On a GPU node, from the repository root with the bundle in .gpu/: runs the stages named on the command line,
# each logging to $OUT (or ./gpu-out). Stages: info, tests[=PATTERN], gemm, torch, ag, rs, p2p.
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
export UBUF_COMMIT=$(cat "$B/COMMIT" 2>/dev/null || echo unknown)
J() { bash "$B/java.sh" "$B" "$@"; }
UBUF() { J -cp "$B/lib/*" dev.ubuf.cli.UbufCli "$@"; }
for stage in "$@"; do
  echo "=== $stage ($(date +%T))"
  case "$stage" in
    info) UBUF info 2>&1 | tee "$OUT/info.txt" ;;
    tests*) pat=${stage#tests}; pat=${pat#=}
      cp=$(ls "$B"/lib/*.jar | grep -v console-standalone | tr '\n' ':')
      J -jar "$B"/lib/junit-platform-console-standalone-*.jar execute -cp "$cp" \
        --include-classname "${pat:-.*Gpu.*Test}" --select-package dev.ubuf --details=summary --disable-banner \
        --reports-dir "$OUT/junit" 2>&1 | tee "$OUT/tests.txt" | grep -vE "^\s*$" | tail -60 ;;
    gemm) UBUF bench gemm --out "$OUT/gemm.json" 2>&1 | tee "$OUT/gemm.txt" ;;
    torch) PYTHONUNBUFFERED=1 torchrun --nproc-per-node=2 "$B/anchor_torch.py" --json "$OUT/torch.json" 2>&1 \
        | grep -vE "^W[0-9]|OMP_NUM" | tee "$OUT/torch.txt" | tail -12 ;;
    ag) UBUF bench ag --out "$OUT/ag.json" 2>&1 | tee "$OUT/ag.txt" ;;
    rs) UBUF bench rs --out "$OUT/rs.json" 2>&1 | tee "$OUT/rs.txt" ;;
    p2p) UBUF bench p2p --out "$OUT/p2p.json" 2>&1 | tee "$OUT/p2p.txt" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
