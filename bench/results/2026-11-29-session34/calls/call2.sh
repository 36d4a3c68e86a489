#!/usr/bin/env bash
# Session 34 call 2 (one GPU), bundle 4adae00 (41b0787's kernels, comments since): LayerKernelsGpuTest; every layer
# kernel beside its PyTorch twin, 2 alternating rounds (`bench kernels` and bench/torch/torch_kernels.py) for the
# results table; the sm_90 SASS of the LayerNorm kernels and the fused GELU backward (cuobjdump) for offline reading.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite2 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite2/lanes.txt 2>/dev/null
cp /tmp/suite2/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite2/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
OUT=/tmp/kt2 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
grep -h "% of copy" /tmp/kt2/*.log 2>/dev/null | cut -c1-110 | head -80
mkdir -p /tmp/kernels2 && cp /tmp/kt2/*.json /tmp/kt2/summary.txt /tmp/kernels2/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels2
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
jar=$(ls $B/lib/ubuf-kernels-*.jar | head -1)
(cd /tmp && unzip -o -q "$jar" '*ubuf_kernels.fatbin' && f=$(find /tmp/dev -name ubuf_kernels.fatbin | head -1) \
  && for k in ubuf_layernorm_bwd_staged_bf16 ubuf_layernorm_fwd_words_bf16 ubuf_bias_gelu_bwd_partial_bf16 \
       ubuf_col_sums2_f32_to_f32; do
       "$cuobj" -sass -arch sm_90 -fun $k "$f" > $O/sass-$k.txt 2>&1; echo "$k $(grep -c '/\*[0-9a-f]*\*/' $O/sass-$k.txt)"; done)
echo "done t=$((SECONDS-start))"
