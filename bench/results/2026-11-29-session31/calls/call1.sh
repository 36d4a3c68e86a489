#!/usr/bin/env bash
# Session 31 call 1 (one GPU): GEMM parity on the sweep's 88 GEMMs, plain (no variant), 3 alternating rounds, ubuf
# on the tuning cache of session 30's call 9 (the confirming tuner, margin 2%; f8d86ef's tuner is the same code);
# then the SASS of the LayerNorm backward's staged kernel and the column sums (sm_90), for the instruction count.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/xdg1 && cp -r $B/xdg/ubuf /tmp/xdg1/
XDG_CACHE_HOME=/tmp/xdg1 ALT_BUDGET_S=300 timeout -k 10 320 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$?"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg1/ubuf/*.tsv $O/parity/ 2>/dev/null
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
python3 - $B/lib/ubuf-kernels-*.jar <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
open('/tmp/k.fatbin', 'wb').write(z.read('dev/ubuf/kernels/ubuf_kernels.fatbin'))
PY
$cuobj -lelf /tmp/k.fatbin > $O/elfs.txt 2>&1
$cuobj -sass /tmp/k.fatbin > /tmp/all.sass 2>&1
awk '/Function :/ {p = ($3 ~ /layernorm_bwd_staged_bf16|col_sums2_f32_to_bf16|layernorm_fwd_words_bf16/)} p' /tmp/all.sass > $O/ln.sass
grep -c . $O/ln.sass
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity; gzip -f ln.sass
