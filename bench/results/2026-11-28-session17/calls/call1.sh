#!/usr/bin/env bash
# Session 17 call 1 (2 GPUs): the LayerNorm and GELU probes (seconds), then the first GPU run of fe263c6's traced
# graph replay (StepGraphGpuTest) and 92dd07f's apply_vector (LayerKernelsGpuTest), then the 8B tp 2 demo traced as a
# graph replay, bf16 and FP8 (where the hidden share is lost), then 70B tp 2 bf16 (not run in session 16).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/probes
CUDA_VISIBLE_DEVICES=0 timeout -k 5 40 $B/layernorm_probe > $O/probes/layernorm.txt 2>&1; echo "ln probe rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0 timeout -k 5 30 $B/gelu_probe > $O/probes/gelu.txt 2>&1; echo "gelu probe rc=$? t=$((SECONDS-start))" >> $O/times.txt
t='dev\.ubuf\..*\.'
OUT=$O/suite STALL_S=90 timeout -k 10 260 bash $B/gpu-lanes.sh "0,1:${t}(StepGraph|LayerKernels)GpuTest" > $O/suite.log 2>&1
echo "suite rc=$? t=$((SECONDS-start))" >> $O/times.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
M70="--hidden 8192 --ffn 28672 --swiglu --tokens 16384"
mkdir -p $O/demo
run_demo() {  # name dims extra
  left=$((570 - (SECONDS - start)))
  [ $left -lt 45 ] && { echo "demo $1 skipped, $left s left" >> $O/times.txt; return; }
  CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 $((left < 110 ? left : 110)) bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli \
    demo --tp 2 $2 --iters 20 --config $B/auto.yaml --cuda-graph $3 --out $O/demo/$1.json > $O/demo/$1.log 2>&1
  echo "demo $1 rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
run_demo demo-8b-tp2-bf16 "$M8" "--trace $O/demo/trace-8b-tp2-bf16.json"
run_demo demo-8b-tp2-fp8 "$M8" "--fp8 --trace $O/demo/trace-8b-tp2-fp8.json"
run_demo demo-70b-tp2-bf16 "$M70" ""
cat $O/gpus.txt $O/times.txt; sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" $O/suite/lanes.txt 2>/dev/null
for f in $O/suite/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -12 | cut -c1-250; done
cat $O/probes/layernorm.txt | cut -c1-160
grep -E "fwd|bwd|copy" $O/probes/gelu.txt | head -12 | cut -c1-160
for f in $O/demo/*.log; do echo "== $f"; grep -E "median step|hidden share|MFU|host enqueue|Exception|rror" $f | head -14 | cut -c1-220; done
tar czf $O/call1.tgz -C $O gpus.txt times.txt probes suite.log suite/lanes.txt suite/feeds.tgz demo 2>/dev/null
rm -rf $O/suite $O/demo $O/probes $O/*.log $O/gpus.txt $O/times.txt; ls $O
