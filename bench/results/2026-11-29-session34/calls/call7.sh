#!/usr/bin/env bash
# Session 34 call 7 (one GPU), bundle fa726d7: bf16 widened by moving bits. The SASS instruction counts of four
# kernels in 6517427's fatbin (old) and this bundle's (new); LayerKernelsGpuTest; `bench kernels` (every layer
# kernel) with 6517427's kernels jar first on the class path (old) and this bundle's (new), A B B A.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
for side in old new; do
  jar=$B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar; [ $side = old ] && jar=$B/old/ubuf-kernels-6517427.jar
  python3 -c "import zipfile,sys; open('/tmp/$side.fatbin','wb').write(zipfile.ZipFile(sys.argv[1]).read('dev/ubuf/kernels/ubuf_kernels.fatbin'))" $jar
  for k in ubuf_layernorm_fwd_words_bf16 ubuf_layernorm_bwd_staged_bf16 ubuf_bias_swiglu_bwd_partial_bf16 ubuf_swiglu_fwd_words_bf16; do
    $cuobj -sass -arch sm_90 -fun $k /tmp/$side.fatbin > /tmp/$side-$k.sass 2>&1
    echo "$side $k instructions $(grep -c '^ */\*[0-9a-f]\{4\}\*/' /tmp/$side-$k.sass) PRMT $(grep -c PRMT /tmp/$side-$k.sass)"
  done
done | tee $O/sass-counts.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite7 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite7/lanes.txt 2>/dev/null
cp /tmp/suite7/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite7/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab7
i=0
for side in old new new old; do
  i=$((i+1))
  cp="$B/lib/*"; [ $side = old ] && cp="$B/old/ubuf-kernels-6517427.jar:$B/lib/*"
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 \
    --out /tmp/ab7/$i-$side.json > /tmp/ab7/$i-$side.log 2>&1
  echo "$i $side rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab7/$i-$side.log | grep -E "layernorm|swiglu|gelu_f|fp8_quantize " | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab7
echo "done t=$((SECONDS-start))"
