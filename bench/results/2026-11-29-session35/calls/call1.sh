#!/usr/bin/env bash
# Session 35 call 1 (one GPU), bundle acfe90e: the LayerNorm forward paired (ubuf_layernorm_fwd_words2_<t>, 64-thread
# blocks at 2048 x 4096). LayerKernelsGpuTest; `bench kernels --kernels layernorm_fwd,layernorm_bwd` with 00e3071's
# kernels and layers jars first on the class path (old) and this bundle's (new), A B B A A B, at 8192 tokens, then
# A B at 4096 and 16384 tokens (other row counts: the choice moves with them); the SASS of the staged LayerNorm
# backward and the paired forward.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite1 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite1/lanes.txt 2>/dev/null
cp /tmp/suite1/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite1/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
mkdir -p /tmp/ab1
oldcp="$B/old/ubuf-kernels-00e3071.jar:$B/old/ubuf-layers-00e3071.jar:$B/lib/*"
i=0
for run in old:8192 new:8192 new:8192 old:8192 old:8192 new:8192 old:4096 new:4096 new:16384 old:16384; do
  i=$((i+1)); side=${run%%:*}; tok=${run##*:}
  cp="$B/lib/*"; [ $side = old ] && cp="$oldcp"
  timeout -k 5 100 bash $B/java.sh -cp "$cp" dev.ubuf.cli.UbufCli bench kernels --iters 30 --tokens $tok \
    --kernels layernorm_fwd,layernorm_bwd --out /tmp/ab1/$i-$side-$tok.json > /tmp/ab1/$i-$side-$tok.log 2>&1
  echo "$i $side $tok rc=$? t=$((SECONDS-start))"
  grep -E "tp " /tmp/ab1/$i-$side-$tok.log | cut -c1-110
done
tar czf $O/ab.tgz -C /tmp ab1
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
python3 -c "import zipfile,sys; open('/tmp/new.fatbin','wb').write(zipfile.ZipFile(sys.argv[1]).read('dev/ubuf/kernels/ubuf_kernels.fatbin'))" $B/lib/ubuf-kernels-0.1.0-SNAPSHOT.jar
for k in ubuf_layernorm_bwd_staged_bf16 ubuf_layernorm_fwd_words2_bf16 ubuf_layernorm_fwd_words_bf16 ubuf_col_sums2_f32_to_bf16; do
  $cuobj -sass -arch sm_90 -fun $k /tmp/new.fatbin > $O/sass-$k.txt 2>&1
  echo "$k instructions $(grep -c '^ */\*[0-9a-f]\{4\}\*/' $O/sass-$k.txt)"
done
echo "done t=$((SECONDS-start))"
