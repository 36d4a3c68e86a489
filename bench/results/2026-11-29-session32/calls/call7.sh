#!/usr/bin/env bash
# Session 32 call 7 (one GPU), probe built here: kernels/probes/layernorm_fwd_lean_probe.cu, the LayerNorm forward's
# word kernel with fewer instructions an element (fma output, x unpacked once) and at 8 groups a thread, beside the
# product's; and the sm_90 SASS instruction counts of the probe's kernels.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 120 $B/fwdlean > $O/fwdlean-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep -v "^ *$" $O/fwdlean-probe.txt | cut -c1-150
cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
$cuobjdump -sass $B/fwdlean > /tmp/fwdlean.sass 2>&1
gzip -c /tmp/fwdlean.sass > $O/fwdlean.sass.gz
awk '/Function :/ {f=$3} /^ +\/\*[0-9a-f]+\*\/ / {n[f]++} END {for (k in n) print n[k], k}' /tmp/fwdlean.sass | sort -k2 | cut -c1-120
