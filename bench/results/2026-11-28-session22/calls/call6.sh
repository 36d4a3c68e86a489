#!/usr/bin/env bash
# Session 22 call 6 (1 GPU): two kernel questions, A B A B. (1) The bias gradient's one-wave parts (d5e915b) against
# the 8ada758 jars (the same kernel and the old part sizes), beside PyTorch's column sum. (2) GELU's dense kernels and
# the SwiGLU word kernel with two words a thread (.gpu/alt: this tree with the change, uncommitted) against one
# (d5e915b), beside PyTorch's GELU.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
mkdir -p /tmp/k6
third=$(ls $B/lib/*.jar | grep -v '/ubuf-' | paste -sd: -)
alt="$(ls $B/alt/lib/ubuf-*.jar | grep -v -- '-tests.jar' | paste -sd: -):$third"
k() { # NAME CLASSPATH KERNELS
  timeout -k 10 90 bash $B/java.sh -cp "$2" dev.ubuf.cli.UbufCli bench kernels --kernels "$3" --iters 30 \
    --out /tmp/k6/$1.json > /tmp/k6/$1.txt 2>&1
  echo "$1 rc=$?"; grep -E ' us ' /tmp/k6/$1.txt | awk '{print $1,$2,$3,$4,$8,$14,$15}'
}
for r in 1 2; do
  k biasgrad-old-r$r "$B/old/lib/*" bias_grad
  k biasgrad-new-r$r "$B/lib/*" bias_grad
  k act-one-r$r "$B/lib/*" gelu_fwd,gelu_bwd,swiglu_fwd,bias_swiglu_fwd
  k act-two-r$r "$alt" gelu_fwd,gelu_bwd,swiglu_fwd,bias_swiglu_fwd
  timeout -k 10 120 python3 $B/torch_kernels.py --kernels gelu_fwd,gelu_bwd,bias_grad --iters 30 \
    --json /tmp/k6/torch-r$r.json > /tmp/k6/torch-r$r.txt 2>&1
  echo "torch r$r rc=$?"; grep -E ' us ' /tmp/k6/torch-r$r.txt | awk '{print $1,$2,$3,$4,$8,$14,$15}'
done
tar czf $O/kernels.tgz -C /tmp k6
