#!/usr/bin/env bash
# Session 32 call 1 (one GPU), bundle of this commit: GEMM parity on the sweep's 88 GEMMs, plain, 3 alternating
# rounds, ubuf on the tuning that the thirty-first session's call 8 wrote (the current tuner: each candidate confirmed
# in its own steady state, margin 2%); then the lean LayerNorm backward probe (its gamma-as-floats variant has not
# run on a GPU).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/xdg1/ubuf && cp $B/xdg/ubuf/*.tsv /tmp/xdg1/ubuf/
XDG_CACHE_HOME=/tmp/xdg1 ALT_BUDGET_S=290 timeout -k 5 300 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg1/ubuf/*.tsv $O/parity/ 2>/dev/null
cmp -s /tmp/xdg1/ubuf/*.tsv $B/xdg/ubuf/*.tsv && echo "tuning cache unchanged"
timeout -k 5 60 $B/lean > $O/lean-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep "OP \|memcpy\|differing" $O/lean-probe.txt | grep -v " 0$" | cut -c1-130 | head -40
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
