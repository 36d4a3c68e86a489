#!/usr/bin/env bash
# Session 36 call 1 (one GPU): kernels/probes/layernorm_fwd_mma_probe.cu (the bf16 LayerNorm forward's first pass by
# the tensor cores against a B of ones, with the variance around the warp's mean, or one shifted pass; against the
# product's word and paired kernels), built here from the tree at b2d488b + the probe; its SASS.
set -u
cd "$(dirname "$0")/.."
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
timeout -k 5 200 .gpu/fwdmma 2>&1 | tee $O/fwdmma.txt
cuobjdump -sass .gpu/fwdmma 2>/dev/null | gzip > $O/fwdmma.sass.gz
