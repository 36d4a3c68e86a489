#!/usr/bin/env bash
# Session 25 call 8 (2 GPUs): fc2's reduce-scatter method inside the 8B tp 2 step, the planner's choice against the
# ring's fused tail at two sub-chunk counts, each given through a plan cache that holds only fc2's choice (the other
# GEMMs planned afresh): FP8 P F2 F4 F4 F2 P (P = the planner's ring:cs=1,sub=1,lowp=1), bf16 F2 F4 F4 F2
# (F2 = the planner's choice there).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p /tmp/demo8
key8='NVIDIA_H200_sm90_x132_|_rs_tp2_bf16_m8192_k7168_n4096_bias_fp8e4m3xfp8e4m3_|_ce1_sms0_graph'
key16='NVIDIA_H200_sm90_x132_|_rs_tp2_bf16_m8192_k7168_n4096_bias_|_ce1_sms0_graph'
declare -A V=([P]='ring\:cs\=1,sub\=1,lowp\=1' [F2]='ring\:cs\=1,sub\=2,lowp\=1,fuse\=1' [F4]='ring\:cs\=1,sub\=4,lowp\=1,fuse\=1')
i=0
for run in fp8:P fp8:F2 fp8:F4 fp8:F4 fp8:F2 fp8:P bf16:F2 bf16:F4 bf16:F4 bf16:F2; do
  i=$((i+1)); mode=${run%%:*}; v=${run##*:}
  left=$((520 - (SECONDS - start))); [ $left -lt 40 ] && { echo "demo $i skipped"; continue; }
  extra=""; key=$key16; [ $mode = fp8 ] && { extra="--fp8"; key=$key8; }
  printf '%s=%s\n' "$key" "${V[$v]}" > /tmp/demo8/plans-$i.properties
  UB_PLAN_CACHE=/tmp/demo8/plans-$i.properties CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 timeout -k 10 70 \
    bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo --tp 2 $M8 --iters 20 --config $B/auto.yaml \
    --cuda-graph --clocks $extra --out /tmp/demo8/$i-$mode-$v.json > /tmp/demo8/$i-$mode-$v.log 2>&1
  echo "demo $i $mode $v rc=$? t=$((SECONDS-start))"
  grep -E "median step|hidden share|method: auto ran .* fc2_fprop" /tmp/demo8/$i-$mode-$v.log | cut -c1-150
done
tar czf $O/demo.tgz -C /tmp demo8
