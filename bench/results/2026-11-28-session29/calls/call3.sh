#!/usr/bin/env bash
# Session 29 call 3 (one GPU): the staged LayerNorm backward storing its partial rows 512 contiguous bytes a store
# (store_warp_groups): LayerKernelsGpuTest; `bench kernels --kernels layernorm_bwd` on the kernels before it (old:
# .gpu/old/ubuf-kernels.jar first on the class path) and after (new), A B B A A B; the LayerNorm kernels beside
# PyTorch's, 2 alternating rounds. Then GEMM parity: the two shapes above 1.03x in call 2 retuned (one alternating
# round with --retune, into a copy of the bundle's H200 tuning file), then three alternating rounds of every sweep
# GEMM on that copy (returned as gemm-tuning-after.tsv).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite3 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite3/lanes.txt 2>/dev/null
cp /tmp/suite3/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite3/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab3
i=0
for side in old new new old old new; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels.jar:$B/lib/*"
  timeout -k 5 80 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels \
    --kernels layernorm_bwd --iters 30 --out /tmp/ab3/$i-$side.json > /tmp/ab3/$i-$side.log 2>&1
  echo "$i $side rc=$?"
  grep -E "tp " /tmp/ab3/$i-$side.log | cut -c1-110 | head -8
done
echo "ab t=$((SECONDS-start))" >> $O/times.txt
OUT=/tmp/kt3 ALT_BUDGET_S=100 timeout -k 10 120 bash $B/run-gpu.sh \
  "kernels=2 --kernels layernorm_fwd,layernorm_bwd --iters 30 -- --kernels layernorm_fwd,layernorm_bwd --iters 30"
echo "kernels rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
tar czf $O/suite.tgz -C /tmp suite3 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab3
mkdir -p /tmp/kernels3 && cp /tmp/kt3/*.json /tmp/kt3/summary.txt /tmp/kernels3/ 2>/dev/null; tar czf $O/kernels.tgz -C /tmp kernels3
cp $B/xdg/ubuf/gemm-tuning-nvidia-h200-*.tsv /tmp/tune.tsv && cp /tmp/tune.tsv $O/gemm-tuning-before.tsv
export UB_GEMM_TUNING_FILE=/tmp/tune.tsv
CUDA_VISIBLE_DEVICES=0 PARITY_SHAPES="256,2048,4096 512,4096,3072" OUT=/tmp/retune3 ALT_BUDGET_S=90 \
  timeout -k 10 100 bash $B/run-gpu.sh "parity=1 --iters 30 --heat-ms 300 --retune -- --iters 30 --heat-ms 300" \
  > $O/retune.log 2>&1
echo "retune rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
grep -h "ratio\|retuned" $O/retune.log | head -8 | cut -c1-200
cp /tmp/tune.tsv $O/gemm-tuning-after.tsv
left=$((575 - (SECONDS - start)))
CUDA_VISIBLE_DEVICES=0 OUT=/tmp/par3 ALT_BUDGET_S=$left timeout -k 10 $((left + 10)) bash $B/run-gpu.sh \
  "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
echo "parity rc=$? t=$((SECONDS-start))" | tee -a $O/times.txt
tail -4 $O/parity.log | cut -c1-200
tar czf $O/parity.tgz -C /tmp par3 retune3 2>/dev/null
