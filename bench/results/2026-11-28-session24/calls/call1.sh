#!/usr/bin/env bash
# Session 24 call 1 (one GPU): kernels/probes/layernorm_bwd_walk_probe.cu with the instruction cuts one at a time and
# together (x-hat as one FMA, dx as two FMAs, no run-time "+ one", the block sums' warp sums read as float4), then
# the SASS of the product-like walk and of the lean one: instructions a kernel, by opcode.
set -u
B=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $OUT/lnbwd-walk3.txt
timeout -k 5 200 $B/lnbwd_walk 2>&1 | tee -a $OUT/lnbwd-walk3.txt
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
if [ -n "$CUOBJ" ]; then
  "$CUOBJ" -sass $B/lnbwd_walk > /tmp/walk.sass 2>&1
  python3 - > $OUT/walk-sass.txt <<'PY'
import re, collections
fn = None; body = collections.defaultdict(list)
for line in open('/tmp/walk.sass'):
    m = re.search(r'Function : (\S+)', line)
    if m: fn = m.group(1); continue
    m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)', line)
    if fn and m: body[fn].append(m.group(3))
for fn in sorted(body):
    if 'walk' not in fn and 'staged_bf16' not in fn: continue
    ops = collections.Counter(o.split('.')[0] for o in body[fn])
    print(f"{fn}: {len(body[fn])} instructions; " + ", ".join(f"{k} {v}" for k, v in ops.most_common(25)))
PY
  gzip -c /tmp/walk.sass > $OUT/walk.sass.gz
fi
tail -c 9000 $OUT/lnbwd-walk3.txt
