#!/usr/bin/env bash
# The GPU node's runner, from the folder that holds the bundle (.gpu/, made by scripts/gpu-bundle.sh):
#   OUT=gpu-out bash .gpu/run-gpu.sh STAGE...
# Runs every stage named, in order, even after one fails; records each stage's exit code; ends with a summary and
# exits 1 when any stage failed (an unknown stage is a failure), 2 when none was named.
# Stages:
#   info               ubuf info
#   tests[=REGEX]      the GPU integration tests whose class names match REGEX (default .*Gpu.*Test), with
#                      -Dubuf.requireGpu=true: a test that would skip for want of a GPU fails instead
#                      (UBUF_REQUIRE_GPU=false lets them skip, e.g. the 2-GPU tests on a 1-GPU node)
#   gemm | p2p         ubuf bench gemm|p2p --out $OUT/gemm.json|p2p.json
#   "bench ARGS..."    ubuf bench ARGS, as one quoted word, e.g. "bench ag --out gpu-out/ag.json"
#   torch[=ARGS]       the PyTorch baseline, torchrun --nproc-per-node=2 torch_baseline.py --json $OUT/torch.json ARGS
#   "alternate=ROUNDS BENCH ARGS... [-- TORCH_ARGS...]"   as one quoted word: BENCH (sweep or gemm) and the PyTorch
#                      baseline in turn, A B A B ..., ROUNDS times each (ROUNDS: N for rounds 1..N, or FIRST-LAST, e.g.
#                      4-6 to go on from an earlier command). Round r writes $OUT/BENCH-r<r>.json (ubuf bench BENCH ARGS
#                      --out ...) and $OUT/torch-BENCH-r<r>.json (the baseline on the same shapes: ubuf bench BENCH
#                      ARGS --list-shapes, then TORCH_ARGS; for sweep under torchrun --nproc-per-node=the sweep's --tp,
#                      default 2; for gemm one process). Prints each part's and each round's seconds. A round is
#                      only started if the longest so far still fits in ALT_BUDGET_S (default 570) seconds from the
#                      runner's start (earlier stages count), and each part runs under a timeout of what is left
#                      (files are written after every shape, so a part cut short keeps what it measured). Merge the
#                      files with scripts/combine-rounds.py.
#                      E.g. "alternate=3 sweep --models llama3-8b --iters 10 -- --iters 10 --warmup 3"
#   "parity=ROUNDS [SERVE_ARGS...] [-- TORCH_ARGS...]"   as one quoted word: GEMM parity, shape by shape: gemm-parity.py
#                      keeps ubuf bench gemm --serve SERVE_ARGS and torch_gemm_serve.py TORCH_ARGS running and sends
#                      each shape to both in turn (the one that goes first alternating), ROUNDS rounds, into
#                      $OUT/parity/ (gemm-r<r>.json, torch-gemm-r<r>.json). Shapes: the sweep's per-rank GEMMs, or
#                      PARITY_SHAPES (M,K,N words). Budget: ALT_BUDGET_S as for alternate. With --retune among
#                      SERVE_ARGS and no UB_GEMM_TUNING_FILE, the retuned choices are kept in
#                      $OUT/parity/gemm-tuning-retuned.properties (give it as UB_GEMM_TUNING_FILE to reuse them).
#                      E.g. "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300"
#   "kernels=ROUNDS [ARGS...] [-- TORCH_ARGS...]"   as one quoted word: ubuf bench kernels ARGS and
#                      torch_kernels.py TORCH_ARGS (its PyTorch twin, one GPU) in turn, A B A B ..., ROUNDS times each,
#                      into $OUT/kernels-r<r>.json and $OUT/torch-kernels-r<r>.json. Give both sides the same shape
#                      options (--models, --tp, --tokens, --kernels, --dtype). Budget: ALT_BUDGET_S as for alternate.
#                      E.g. "kernels=2 --iters 30 -- --iters 30"
#   "layer=ROUNDS [DEMO_ARGS...] [-- TORCH_ARGS...]"   as one quoted word: ubuf demo DEMO_ARGS and its PyTorch twin
#                      torchrun --nproc-per-node=TP torch_layer.py TORCH_ARGS (the same LayerNormMLP step by hand: NCCL,
#                      and async-TP) in turn, ROUNDS rounds, the demo first in odd rounds and PyTorch first in even
#                      ones, into $OUT/layer-demo-r<r>.json and $OUT/torch-layer-r<r>.json. TP is DEMO_ARGS' --tp
#                      (default 2, then given to the demo too). Give both sides the same layer: the demo's defaults
#                      differ (GELU, ffn 16384; torch_layer.py: SwiGLU, ffn 14336), so name --hidden, --ffn, --tokens
#                      and --swiglu / --activation on both. Budget: ALT_BUDGET_S as for alternate.
#                      E.g. "layer=3 --tp 2 --swiglu --ffn 14336 --iters 20 -- --activation swiglu --iters 20"
# In $OUT (default ./gpu-out): log.txt (all output), summary.txt (a line per stage), tests.txt (the JUnit console's
# report), tests-summary.txt (its counts), junit/ (its XML reports) and the results files.
set -uo pipefail
if [ $# -eq 0 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2   # the comment above
  exit 2
fi

bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log="$OUT/log.txt"
summary="$OUT/summary.txt"
: > "$summary"
# Multicast stays off for every stage, the PyTorch one included (java.sh sets the same for Java).
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
UBUF_COMMIT=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
export UBUF_COMMIT

java_() { bash "$bundle/java.sh" "$@"; }
ubuf() { java_ -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli "$@"; }
logged() { "$@" 2>&1 | tee -a "$log"; return "${PIPESTATUS[0]}"; }

tests() {
  local regex=${1:-.*Gpu.*Test} console cp
  console=$(ls "$bundle"/lib/junit-platform-console-standalone-*.jar 2>/dev/null | head -1)
  [ -n "$console" ] || { echo "no JUnit console launcher in $bundle/lib"; return 1; }
  cp=$(ls "$bundle"/lib/*.jar | grep -v console-standalone | paste -sd: -)
  java_ -XX:ErrorFile="$OUT/hs_err.log" -Dubuf.requireGpu="${UBUF_REQUIRE_GPU:-true}" -jar "$console" execute -cp "$cp" --select-package dev.ubuf \
    --include-classname "$regex" --fail-if-no-tests --details=testfeed --disable-banner \
    --reports-dir "$OUT/junit" > "$OUT/tests.txt" 2>&1
  local rc=$?
  cat "$OUT/tests.txt" >> "$log"
  grep -E '^\[ *[0-9]+ (containers|tests) ' "$OUT/tests.txt" > "$OUT/tests-summary.txt"
  grep -E ':: (FAILED|ABORTED)' "$OUT/tests.txt" | sed 's/\x1b\[[0-9;]*m//g' | head -40
  cat "$OUT/tests-summary.txt"
  return $rc
}

torch_baseline() {
  command -v torchrun > /dev/null || { echo "torchrun not found: the torch stage needs PyTorch on this node"; return 127; }
  # shellcheck disable=SC2086 # the stage's arguments are meant to split into words
  PYTHONUNBUFFERED=1 torchrun --nproc-per-node=2 "$bundle/torch_baseline.py" --json "$OUT/torch.json" $1
}

# alternate_part SECONDS_LEFT COMMAND...: the command under a timeout of the budget left; its exit code (124: cut short).
alternate_part() {
  local left=$1; shift
  if [ "$left" -le 0 ]; then echo "alternate: no time left for this part"; return 124; fi
  timeout --signal=TERM --kill-after=15 "$left" "$@"
}

alternate() {
  local spec=$1 first last bench
  shift
  case "$spec" in
    [0-9]*-[0-9]*) first=${spec%-*}; last=${spec#*-} ;;
    [0-9]*) first=1; last=$spec ;;
    *) first=x ;;
  esac
  if ! [[ "$first" =~ ^[0-9]+$ && "$last" =~ ^[0-9]+$ ]] || [ "$first" -lt 1 ] || [ "$last" -lt "$first" ]; then
    echo "alternate: ROUNDS is N or FIRST-LAST (positive, FIRST <= LAST), got '$spec'"; return 2
  fi
  bench=${1:-}
  shift || true
  case "$bench" in
    sweep | gemm) ;;
    *) echo "alternate: the benchmark is sweep or gemm, got '$bench' (\"alternate=3 sweep ARGS -- TORCH_ARGS\")"
       return 2 ;;
  esac
  local java_args=() torch_args=() in_torch=0 w
  for w in "$@"; do
    if [ $in_torch -eq 0 ] && [ "$w" = -- ]; then in_torch=1
    elif [ $in_torch -eq 0 ]; then java_args+=("$w")
    else torch_args+=("$w"); fi
  done
  for w in "${java_args[@]}"; do
    case "$w" in --out | --out=* | --list-shapes) echo "alternate: leave out $w: the stage adds it"; return 2 ;; esac
  done
  for w in "${torch_args[@]}"; do
    case "$w" in --json | --json=* | --shapes | --shapes=*) echo "alternate: leave out $w: the stage adds it"; return 2 ;; esac
  done
  # The GEMM baseline times rank 0's GPU only, so one process will do (and a one-GPU node can run it). The sweep's
  # baseline runs on as many ranks as the sweep's --tp (default 2): its ops split M and K or N over its world size.
  local nproc=2 shapes prev=""
  if [ "$bench" = gemm ]; then
    nproc=1
  else
    for w in "${java_args[@]}"; do
      [ "$prev" = --tp ] && nproc=$w
      case "$w" in --tp=*) nproc=${w#--tp=} ;; esac
      prev=$w
    done
    if ! [[ "$nproc" =~ ^[2-8]$ ]]; then echo "alternate: the sweep's --tp must be 2..8, got '$nproc'"; return 2; fi
  fi
  shapes=$(ubuf bench "$bench" "${java_args[@]}" --list-shapes) || { echo "alternate: cannot list the shapes"; return 2; }
  read -r -a shapes <<< "$shapes"
  local budget=${ALT_BUDGET_S:-570} start=$SECONDS longest=0 r t0 t1 jrc trc java_s torch_s rc=0
  echo "alternate: rounds $first..$last of ubuf bench $bench ${java_args[*]} and torch_baseline.py ($nproc" \
    "processes) on its ${#shapes[@]} shapes ${torch_args[*]}; budget ${budget}s"
  for ((r = first; r <= last; r++)); do
    local used=$SECONDS
    if [ $r -gt "$first" ] && [ $((used + longest)) -gt "$budget" ]; then
      echo "alternate: stopping before round $r: ${used}s since the runner started, the longest round took" \
        "${longest}s, budget ${budget}s"
      echo "alternate: rounds $first..$((r - 1)) done; go on with alternate=$r-$last"
      break
    fi
    t0=$SECONDS
    alternate_part $((budget - SECONDS)) bash "$bundle/java.sh" -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli \
      bench "$bench" "${java_args[@]}" --out "$OUT/$bench-r$r.json"
    jrc=$?
    java_s=$((SECONDS - t0))
    t1=$SECONDS
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 alternate_part $((budget - SECONDS)) torchrun --nproc-per-node="$nproc" \
      "$bundle/torch_baseline.py" --json "$OUT/torch-$bench-r$r.json" --shapes "${shapes[@]}" "${torch_args[@]}"
    trc=$?
    torch_s=$((SECONDS - t1))
    [ $((SECONDS - t0)) -gt $longest ] && longest=$((SECONDS - t0))
    echo "alternate: round $r: $bench ${java_s}s (exit $jrc), torch ${torch_s}s (exit $trc), round $((SECONDS - t0))s," \
      "total $((SECONDS - start))s"
    printf '  round %-3d %-8s %4ds exit %3d   torch %4ds exit %3d\n' "$r" "$bench" "$java_s" "$jrc" "$torch_s" "$trc" \
      >> "$summary"
    [ $jrc -eq 0 ] && [ $trc -eq 0 ] || rc=1
  done
  return $rc
}

parity() {
  local rounds=$1 serve_args=() torch_args=() in_torch=0 w shapes
  shift
  if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then echo "parity: ROUNDS is a positive number, got '$rounds'"; return 2; fi
  for w in "$@"; do
    if [ $in_torch -eq 0 ] && [ "$w" = -- ]; then in_torch=1
    elif [ $in_torch -eq 0 ]; then serve_args+=("$w")
    else torch_args+=("$w"); fi
  done
  shapes=${PARITY_SHAPES:-$(ubuf bench gemm --from-sweep --list-shapes)} || { echo "parity: cannot list the shapes"; return 2; }
  # A retune's choices go to a tuning file that comes back with the results (a later run reuses them through
  # UB_GEMM_TUNING_FILE without retuning), unless the caller named one.
  local w2
  for w2 in "${serve_args[@]}"; do
    if [ "$w2" = --retune ] && [ -z "${UB_GEMM_TUNING_FILE:-}" ]; then
      mkdir -p "$OUT/parity"
      local -x UB_GEMM_TUNING_FILE="$OUT/parity/gemm-tuning-retuned.properties"
      echo "parity: the retuned choices go to $UB_GEMM_TUNING_FILE"
    fi
  done
  local budget=${ALT_BUDGET_S:-570}
  # The commands are run by a shell: quote the class path so the shell does not expand it.
  timeout --signal=TERM --kill-after=15 $((budget - SECONDS > 1 ? budget - SECONDS : 1)) \
    python3 "$bundle/gemm-parity.py" --out-dir "$OUT/parity" --rounds "$rounds" --budget-s $((budget - SECONDS - 10)) \
    --shapes $shapes \
    --java "bash '$bundle/java.sh' -cp '$bundle/lib/*' dev.ubuf.cli.UbufCli bench gemm --serve ${serve_args[*]}" \
    --torch "python3 '$bundle/torch_gemm_serve.py' ${torch_args[*]}"
}

kernels() {
  local rounds=$1 java_args=() torch_args=() in_torch=0 w r rc=0 jrc trc t0
  shift
  if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then echo "kernels: ROUNDS is a positive number, got '$rounds'"; return 2; fi
  for w in "$@"; do
    if [ $in_torch -eq 0 ] && [ "$w" = -- ]; then in_torch=1
    elif [ $in_torch -eq 0 ]; then java_args+=("$w")
    else torch_args+=("$w"); fi
  done
  for w in "${java_args[@]}" "${torch_args[@]}"; do
    case "$w" in --out | --out=* | --json | --json=*) echo "kernels: leave out $w: the stage adds it"; return 2 ;; esac
  done
  local budget=${ALT_BUDGET_S:-570}
  for ((r = 1; r <= rounds; r++)); do
    t0=$SECONDS
    alternate_part $((budget - SECONDS)) bash "$bundle/java.sh" -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli \
      bench kernels "${java_args[@]}" --out "$OUT/kernels-r$r.json"
    jrc=$?
    PYTHONUNBUFFERED=1 alternate_part $((budget - SECONDS)) python3 "$bundle/torch_kernels.py" "${torch_args[@]}" \
      --json "$OUT/torch-kernels-r$r.json"
    trc=$?
    echo "kernels: round $r: ubuf exit $jrc, torch exit $trc, $((SECONDS - t0))s"
    printf '  round %-3d kernels exit %3d   torch exit %3d  %4ds\n' "$r" "$jrc" "$trc" "$((SECONDS - t0))" >> "$summary"
    [ $jrc -eq 0 ] && [ $trc -eq 0 ] || rc=1
  done
  return $rc
}

# layer_part ROUND demo|torch: one side of the layer stage, under a timeout of the budget left; its exit code.
layer_part() {
  local r=$1 side=$2
  if [ "$side" = demo ]; then
    alternate_part $((layer_budget - SECONDS)) bash "$bundle/java.sh" -cp "$bundle/lib/*" dev.ubuf.cli.UbufCli \
      demo "${layer_demo_args[@]}" --out "$OUT/layer-demo-r$r.json"
  else
    PYTHONUNBUFFERED=1 alternate_part $((layer_budget - SECONDS)) torchrun --nproc-per-node="$layer_tp" \
      "$bundle/torch_layer.py" --json "$OUT/torch-layer-r$r.json" "${layer_torch_args[@]}"
  fi
}

layer() {
  local rounds=$1 in_torch=0 w prev="" tp="" r rc=0 drc trc t0 side
  shift
  if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then echo "layer: ROUNDS is a positive number, got '$rounds'"; return 2; fi
  layer_demo_args=() layer_torch_args=()
  for w in "$@"; do
    if [ $in_torch -eq 0 ] && [ "$w" = -- ]; then in_torch=1
    elif [ $in_torch -eq 0 ]; then layer_demo_args+=("$w")
    else layer_torch_args+=("$w"); fi
  done
  for w in "${layer_demo_args[@]}"; do
    case "$w" in --out | --out=*) echo "layer: leave out $w: the stage adds it"; return 2 ;; esac
    [ "$prev" = --tp ] && tp=$w
    case "$w" in --tp=*) tp=${w#--tp=} ;; esac
    prev=$w
  done
  for w in "${layer_torch_args[@]}"; do
    case "$w" in --json | --json=*) echo "layer: leave out $w: the stage adds it"; return 2 ;; esac
  done
  if [ -z "$tp" ]; then
    tp=2
    layer_demo_args+=(--tp 2)   # else the demo would take every visible GPU
  fi
  if ! [[ "$tp" =~ ^[2-8]$ ]]; then echo "layer: the demo's --tp must be 2..8, got '$tp'"; return 2; fi
  command -v torchrun > /dev/null || { echo "layer: torchrun not found: the stage needs PyTorch"; return 127; }
  layer_tp=$tp
  layer_budget=${ALT_BUDGET_S:-570}
  echo "layer: $rounds rounds of ubuf demo ${layer_demo_args[*]} and torch_layer.py ${layer_torch_args[*]} on" \
    "$tp ranks; budget ${layer_budget}s"
  for ((r = 1; r <= rounds; r++)); do
    t0=$SECONDS
    drc=-1 trc=-1
    for side in $([ $((r % 2)) -eq 1 ] && echo "demo torch" || echo "torch demo"); do
      layer_part "$r" "$side"
      w=$?
      if [ "$side" = demo ]; then drc=$w; else trc=$w; fi
    done
    echo "layer: round $r ($([ $((r % 2)) -eq 1 ] && echo "demo first" || echo "torch first")): demo exit $drc," \
      "torch exit $trc, $((SECONDS - t0))s"
    printf '  round %-3d layer demo exit %3d   torch exit %3d  %4ds\n' "$r" "$drc" "$trc" "$((SECONDS - t0))" \
      >> "$summary"
    [ $drc -eq 0 ] && [ $trc -eq 0 ] || rc=1
  done
  return $rc
}

failed=0
for stage in "$@"; do
  echo "=== $stage ($(date +%T))" | tee -a "$log"
  started=$SECONDS
  case "$stage" in
    info) logged ubuf info ;;
    tests | tests=*) regex=${stage#tests}; tests "${regex#=}" ;;
    gemm | p2p) logged ubuf bench "$stage" --out "$OUT/$stage.json" ;;
    "bench "*) read -r -a words <<< "$stage"; logged ubuf "${words[@]}" ;;
    torch | torch=*) args=${stage#torch}; logged torch_baseline "${args#=}" ;;
    "alternate="*) read -r -a words <<< "${stage#alternate=}"; logged alternate "${words[@]}" ;;
    "parity="*) read -r -a words <<< "${stage#parity=}"; logged parity "${words[@]}" ;;
    "kernels="*) read -r -a words <<< "${stage#kernels=}"; logged kernels "${words[@]}" ;;
    "layer="*) read -r -a words <<< "${stage#layer=}"; logged layer "${words[@]}" ;;
    *) echo "unknown stage '$stage' (stages: info, tests[=REGEX], gemm, p2p, \"bench ARGS\", torch[=ARGS]," \
         "\"alternate=ROUNDS BENCH ARGS [-- TORCH_ARGS]\", \"parity=ROUNDS [ARGS] [-- TORCH_ARGS]\"," \
         "\"kernels=ROUNDS [ARGS] [-- TORCH_ARGS]\", \"layer=ROUNDS [DEMO_ARGS] [-- TORCH_ARGS]\")" \
         | tee -a "$log"; false ;;
  esac
  rc=$?
  [ $rc -eq 0 ] || failed=1
  printf '%-40s exit %3d  %5ds\n' "$stage" "$rc" "$((SECONDS - started))" >> "$summary"
done
echo "=== summary ($([ $failed -eq 0 ] && echo 'all stages passed' || echo 'some stages FAILED'))" | tee -a "$log"
tee -a "$log" < "$summary"
exit $failed
