#!/usr/bin/env bash
# Session 31 call 3 (one GPU), bundle 2f6db7e: the staged LayerNorm backward with each row's statistics loaded a row
# ahead and its copies issued from shared addresses converted once. LayerKernelsGpuTest; the lean probe again (the
# product now has both; the probe's own copy of the old kernel, the column sums with float4 loads); `bench kernels
# --kernels layernorm_bwd` on the kernels before (old: .gpu/old/ubuf-kernels.jar first on the class path) and after
# (new), A B B A A B; then Nsight Compute's launch statistics for torch.matmul's kernel and ubuf's first choice (the
# same kernel name) on the two shapes where ubuf's first ran slower than torch.matmul in parity.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite3 STALL_S=90 timeout -k 10 150 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite3/lanes.txt 2>/dev/null
cp /tmp/suite3/lanes.txt $O/lanes.txt 2>/dev/null
for f in /tmp/suite3/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
timeout -k 5 150 $B/lean > $O/lean-probe.txt 2>&1
echo "probe rc=$? t=$((SECONDS-start))"
grep "OP \|memcpy\|differing" $O/lean-probe.txt | grep -v " 0$" | cut -c1-130 | head -60
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
echo "ab t=$((SECONDS-start))"
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for s in 2048,2048,4096 16384,13824,5120; do
  IFS=, read m k n <<< "$s"
  timeout -k 5 60 $ncu -k regex:nvjet --launch-skip 2 --launch-count 1 --section LaunchStats --section SpeedOfLight \
    python3 $B/names.py $s > /tmp/ncu3-$m-$k-$n-torch.txt 2>&1
  UB_GEMM_TUNING=0 timeout -k 5 60 $ncu --target-processes all -k regex:nvjet --launch-skip 1 --launch-count 1 \
    --section LaunchStats --section SpeedOfLight bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench gemm \
    --m $m --k $k --n $n --iters 1 --warmup 1 --heat-ms 0 > /tmp/ncu3-$m-$k-$n-ubuf.txt 2>&1
  for side in torch ubuf; do
    echo "== $s $side"; grep -E "nvjet|Duration|Grid Size|Block Size|Cluster|Shared Memory|Registers|Waves|SM Frequency" \
      /tmp/ncu3-$m-$k-$n-$side.txt | grep -v PROF | cut -c1-110
  done
done
echo "t=$((SECONDS-start))"
tar czf $O/suite.tgz -C /tmp suite3 2>/dev/null
tar czf $O/ab.tgz -C /tmp ab3
tar czf $O/ncu.tgz -C /tmp $(cd /tmp && ls ncu3-*.txt)
