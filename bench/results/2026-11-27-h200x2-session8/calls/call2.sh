#!/usr/bin/env bash
# Session 8 call 2 (2 GPUs) at f12b8d1: GELU's flat loop with four vectors in flight, on three grids (4 and 8 blocks an
# SM, one pass), each beside PyTorch's twin on GPU 0; LayerKernelsGpuTest; the FP8 GEMM against bf16; the RS
# benchmark's new staged communication term on two shapes; one traced 8B tp 2 demo step.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/gpus.txt 2>&1
K="--kernels gelu_fwd,gelu_bwd --iters 30"
for g in 4 8 0; do
  JAVA_TOOL_OPTIONS=-Dubuf.denseActivationBlocksPerSm=$g CUDA_VISIBLE_DEVICES=0 OUT=$O/k$g ALT_BUDGET_S=80 timeout -k 5 90 bash $B/run-gpu.sh "kernels=1 $K -- $K" > $O/k$g.log 2>&1
  echo "kernels grid $g rc=$? t=$((SECONDS-start))" >> $O/times.txt
done
OUT=$O/ktests STALL_S=60 timeout -k 5 120 bash $B/gpu-lanes.sh "0:dev\.ubuf\..*\.LayerKernelsGpuTest" > $O/ktests.log 2>&1
echo "ktests rc=$? t=$((SECONDS-start))" >> $O/times.txt
CUDA_VISIBLE_DEVICES=0 timeout -k 5 90 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench fp8 --shapes 8192,8192,8192 4096,4096,4096 16384,8192,8192 --out $O/fp8-gemm.json > $O/fp8-gemm.txt 2>&1
echo "fp8 gemm rc=$? t=$((SECONDS-start))" >> $O/times.txt
timeout -k 5 120 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli bench rs --tp 2 --shapes 8192,7168,4096 16384,14336,8192 --methods "auto;ring:sub=4,lowp=1;bulk:stage=1" --iters 20 --out $O/rs.json > $O/rs.txt 2>&1
echo "rs rc=$? t=$((SECONDS-start))" >> $O/times.txt
mkdir -p $O/demo
timeout -k 5 100 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --trace $O/demo/8b-tp2-trace.json --out $O/demo/8b-tp2-trace-run.json > $O/demo/8b-tp2-trace.txt 2>&1
echo "demo trace rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; cat $O/ktests/lanes.txt 2>/dev/null
for g in 4 8 0; do echo "== grid $g"; grep -h -E "gelu" $O/k$g/log.txt | grep -v "^=" | head -20; done
cat $O/fp8-gemm.txt | grep -E "gemm |throughput" | head; grep -E "comm |% of ideal" $O/rs.txt | head -20
grep -E "median step|hidden share|MFU|traced|under comm|GEMM|kernel" $O/demo/8b-tp2-trace.txt | head -60
tar czf $O/call2.tgz -C $O --exclude='junit' gpus.txt times.txt k4 k8 k0 k4.log k8.log k0.log ktests.log ktests/lanes.txt ktests/feeds.tgz fp8-gemm.txt fp8-gemm.json rs.txt rs.json demo 2>/dev/null
rm -rf $O/k4 $O/k8 $O/k0 $O/ktests $O/demo
