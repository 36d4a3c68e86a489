#!/usr/bin/env bash
# Session 34 call 2b (one GPU, right after call 2 on the same lease; call 2's SASS step had failed: no unzip there):
# the sm_90 SASS of four kernels of bundle 4adae00's fatbin, written into call 2's folder.
cuobj=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1); echo $cuobj; python3 -c "
import zipfile,glob
z=zipfile.ZipFile(glob.glob('.gpu/lib/ubuf-kernels-*.jar')[0]); open('/tmp/k.fatbin','wb').write(z.read('dev/ubuf/kernels/ubuf_kernels.fatbin'))"; for k in ubuf_layernorm_bwd_staged_bf16 ubuf_layernorm_fwd_words_bf16 ubuf_bias_gelu_bwd_partial_bf16 ubuf_col_sums2_f32_to_f32; do $cuobj -sass -arch sm_90 -fun $k /tmp/k.fatbin > $OUT/sass-$k.txt 2>&1; echo "$k $(wc -l < $OUT/sass-$k.txt)"; done
