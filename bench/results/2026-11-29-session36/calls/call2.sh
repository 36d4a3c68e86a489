#!/usr/bin/env bash
# Session 36 call 2 (one GPU), bundle 2bf03c3 (no atomic GEMM change since): the atomic GEMM alone against cuBLASLt
# on the sweep's 25 GEMM shapes, its ping-pong, clustered cooperative and automatic schedules (the K rule of cd91d22,
# made on an H100), A B C A B C, 10 rounds of 20 launches each, stream held: does the rule hold on an H200?
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
S="8192x8192x8192 1024x3072x4096 4096x3072x4096 16384x3072x4096 1024x14336x4096 4096x14336x4096 16384x14336x4096 1024x4096x2048 4096x4096x2048 16384x4096x2048 1024x4096x7168 4096x4096x7168 16384x4096x7168 1024x5120x8192 4096x5120x8192 16384x5120x8192 1024x28672x8192 4096x28672x8192 16384x28672x8192 1024x8192x4096 4096x8192x4096 16384x8192x4096 1024x8192x14336 4096x8192x14336 16384x8192x14336 "
for r in 1 2; do
  for s in pingpong cooperative-cluster auto; do
    echo "== $s r$r" | tee -a $O/sweep.txt
    timeout -k 5 150 bash $B/java.sh -cp "$B/lib/*" dev.ubuf.bench.AtomicGemmBench --hold=on --rounds=10 --schedule=$s $S 2>&1 | tee -a $O/sweep.txt | tail -3
    echo "rc=$? t=$((SECONDS-start))"
  done
done
