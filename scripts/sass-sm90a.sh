#!/usr/bin/env bash
# On a node with cuobjdump (CUDA 12.x/13.x), from the bundle: bash .gpu/sass-sm90a.sh OUT_FILE
# Writes, per kernel of the sm_90a image (the atomic GEMM), its HGMMA (wgmma), LDL/STL (local memory) and UTMALDG
# (TMA load) instruction counts, and prints how many kernels lack wgmma or touch local memory (exit 1 if any does).
set -uo pipefail
out=${1:?usage: sass-sm90a.sh OUT_FILE}
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
[ -n "$cuobj" ] || { echo "no cuobjdump"; exit 1; }
jar=$(ls "$(dirname "$0")"/lib/ubuf-kernels-*.jar | head -1)
python3 - "$jar" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.endswith('.fatbin'):
        open('/tmp/' + n.split('/')[-1], 'wb').write(z.read(n))
        print('extracted', n)
PY
"$cuobj" --version | tail -1
"$cuobj" -sass /tmp/ubuf_sm90a.fatbin > /tmp/sm90a.sass 2>&1 || { echo "cuobjdump failed"; head -20 /tmp/sm90a.sass; exit 1; }
awk '/Function :/ { if (f) printf "%-60s HGMMA %5d  LDL %3d  STL %3d  UTMALDG %3d\n", f, h, l, s, t; f=$3; h=l=s=t=0 }
     /HGMMA/ {h++} /LDL/ {l++} /STL/ {s++} /UTMALDG/ {t++}
     END { if (f) printf "%-60s HGMMA %5d  LDL %3d  STL %3d  UTMALDG %3d\n", f, h, l, s, t }' /tmp/sm90a.sass > "$out"
bad=$(awk '$3 == 0 || $5 + $7 > 0' "$out" | wc -l)
echo "kernels: $(wc -l < "$out"), without HGMMA or with local memory: $bad"
[ "$bad" -eq 0 ] && [ -s "$out" ]
