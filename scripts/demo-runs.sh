#!/usr/bin/env bash
# The demo on GPUs as a new user runs it, each run from empty caches (GEMM tuning and plans: ~/.cache/ubuf):
#   OUT=DIR bash .gpu/demo-runs.sh RUN...
# RUN is TP:DIMS[:fp8][:trace][:graph][:launched][:xN], e.g. 2:8b 4:70b:fp8 2:8b:trace 4:8b:x5 4:8b:graph:launched:x3
# (DIMS: 8b = Llama-3-8B's MLP, 4096/14336, SwiGLU, 8192 tokens; 70b = 8192/28672, SwiGLU, 16384 tokens; graph:
# --cuda-graph; launched: one JVM per rank under dev.ubuf.launch.Launcher instead of the ranks as threads of one
# JVM, TP ranks on the first TP visible GPUs). Each run is bounded (RUN_TIMEOUT_S, default 240 s)
# and writes $OUT/demo-<run>[-<i>].{txt,json} (and .trace.json/.png with trace; a RUN given again, or found in $OUT
# already, gets -again2, -again3, ...); a line per run goes to
# $OUT/demo-summary.txt: exit code, wall seconds, and the demo's own initialisation and start-to-first-step seconds.
# DEMO_CP replaces the class path (default: the bundle's lib/*), DEMO_TAG is appended to every run's name: together
# they run another build beside this one, e.g. old and new in alternating rounds (scripts/demo-ab.sh).
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
UBUF_COMMIT=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
export UBUF_COMMIT
summary="$OUT/demo-summary.txt"
rc_all=0
for run in "$@"; do
  IFS=: read -r -a parts <<< "$run"
  tp=${parts[0]}; dims=${parts[1]}; extra=(); times=1; tag="tp$tp-$dims"
  case "$dims" in
    8b) extra+=(--hidden 4096 --ffn 14336 --swiglu --tokens 8192) ;;
    70b) extra+=(--hidden 8192 --ffn 28672 --swiglu --tokens 16384) ;;
    *) echo "demo-runs: unknown dims '$dims' (8b or 70b)"; exit 2 ;;
  esac
  trace=0; launched=0
  for p in "${parts[@]:2}"; do
    case "$p" in
      fp8) extra+=(--fp8); tag="$tag-fp8" ;;
      trace) trace=1; tag="$tag-trace" ;;
      graph) extra+=(--cuda-graph); tag="$tag-graph" ;;
      launched) launched=1; tag="$tag-launched" ;;
      x[0-9]*) times=${p#x} ;;
      *) echo "demo-runs: unknown part '$p'"; exit 2 ;;
    esac
  done
  for i in $(seq 1 "$times"); do
    name=$tag; [ "$times" -gt 1 ] && name="$tag-$i"
    name="$name${DEMO_TAG:-}"
    base=$name; again=2
    while [ -e "$OUT/demo-$name.txt" ]; do name="$base-again$again"; again=$((again + 1)); done   # a RUN given twice
    rm -rf "$HOME/.cache/ubuf" "${XDG_CACHE_HOME:-/nonexistent}/ubuf"
    args=(demo --tp "$tp" "${extra[@]}" --iters "${DEMO_ITERS:-10}" --out "$OUT/demo-$name.json")
    [ $trace -eq 1 ] && args+=(--trace "$OUT/demo-$name.trace.json")
    main=(dev.ubuf.cli.UbufCli)
    [ $launched -eq 1 ] && main=(dev.ubuf.launch.Launcher --nproc-per-node "$tp" dev.ubuf.cli.UbufCli)
    start=$SECONDS
    timeout -k 10 "${RUN_TIMEOUT_S:-240}" bash "$bundle/java.sh" -cp "${DEMO_CP:-$bundle/lib/*}" "${main[@]}" "${args[@]}" \
      > "$OUT/demo-$name.txt" 2>&1
    rc=$?
    [ $rc -ne 0 ] && rc_all=1
    init=$(grep -o 'initialisation [0-9.]* s' "$OUT/demo-$name.txt" | head -1)
    first=$(grep -o 'first timed step after [0-9.]* s' "$OUT/demo-$name.txt" | head -1)
    echo "$name exit $rc wall $((SECONDS - start)) s; $init; $first" | tee -a "$summary"
  done
done
exit $rc_all
