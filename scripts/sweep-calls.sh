#!/usr/bin/env bash
# The model-shape sweep against the PyTorch baseline at tp 2 or tp 4 (issue 26), one GPU call each on a 4-GPU node,
# from the folder that holds the bundle (.gpu/, made by scripts/gpu-bundle.sh):
#   timeout -k 10 585 bash .gpu/sweep-calls.sh tp2     # GPUs 0,1 (CUDA_VISIBLE_DEVICES=0,1)
#   timeout -k 10 585 bash .gpu/sweep-calls.sh tp4     # GPUs 0,1,2,3, in a later call: never beside tp2
#   timeout -k 10 585 bash .gpu/sweep-calls.sh tp2 fp8 # the FP8 subset (below)
# Steps, all within ALT_BUDGET_S (default 540) seconds of this script's start, so it ends by itself:
#   1. a warm-up pass: ubuf bench sweep with one timed round (--iters 1 --warmup 0), which makes the planner measure
#      and pick a method for every shape and tunes every GEMM kind, into this run's own caches (UB_PLAN_CACHE,
#      XDG_CACHE_HOME under the work folder: nothing from an earlier run is reused); at most WARMUP_MAX_S (default
#      a third of the budget); shapes it did not reach are planned in round 1 instead. Kept as warmup.json, not a round.
#   2. run-gpu.sh's "alternate=R-R sweep ... -- TORCH_ARGS" stage once per round R = 1, 2, ...: ubuf bench sweep (the
#      planner's cached choice as "auto", every other method, NCCL sequential) and torch_baseline.py (torch_seq,
#      torch_async) under torchrun --nproc-per-node=TP on the same shapes, A B A B. Rounds 1 and 2 start while
#      SWEEP_MIN_LEFT_S (20) seconds are left (a part cut short keeps the shapes it finished); round 3 and later only
#      while the longest round so far fits in what is left, up to SWEEP_ROUNDS (default 4).
#   3. combine-rounds.py's report of the rounds (report.txt).
# Beside them: nvidia-smi dmon -s pucv -d 1 -o DT of every GPU (dmon.txt), nvidia-smi's clocks, power and topology
# before and after (node.txt), run-gpu.sh's log.txt, its summary of every round (rounds.txt), and the caches (the
# planner's choices, the GEMM tuning). Everything is packed into ONE file, $OUT/sweep-<tp2|tp4>.tgz, after the warm-up
# and again after every round (written whole, then renamed, so a run killed late still returns the last pack), and
# $OUT/sweep-<tp2|tp4>-summary.txt repeats the rounds and the report for a quick look. Unpack and commit with
#   bash scripts/sweep-finish.sh DIR COMMIT          (DIR: the folder holding the .tgz files)
# FP8 (E4M3 operands, bf16 output and partials): `sweep-calls.sh tp2 fp8` (or tp4 fp8) runs the same steps with
# `bench sweep --fp8` on SWEEP_TOKENS (default 4096,8192,16384, no M = 256/512) into sweep-<tp2|tp4>-fp8.tgz, without
# PyTorch (its baseline has no FP8 mode: bf16 rows beside FP8 ones would compare different work), so its rounds are
# ubuf's alone, back to back. Combine them with combine-rounds.py by hand (sweep-finish.sh takes the bf16 packs).
# Variables: SWEEP_GRAPH (0; 1 times ubuf as CUDA graph replays, bench sweep --cuda-graph), ALT_BUDGET_S (540), WARMUP_MAX_S (budget / 3), SWEEP_ROUNDS (4), SWEEP_MODELS (llama3-8b,llama3-70b,
# qwen2.5-32b,gpt3-175b: mixtral-8x7b-expert's FC1 and FC2 are exactly llama3-8b's, hidden 4096, ffn 14336, SwiGLU, so
# the default sweep times those shapes twice a round and combine-rounds.py keeps one; M = 256 and 512 go to the first
# model), SWEEP_ITERS (20: at 10 a shape's two rounds agreed within 3% on only 39% of candidates at tp 4, at 20 on
# 75% at tp 2), SWEEP_WARMUP (3), TORCH_ITERS (10), TORCH_WARMUP (3), SWEEP_WORK (./sweep-work: the
# unpacked files; cleared per tp), OUT (./gpu-out). NVLink multicast stays off (UB_SKIPMC=1, NCCL_NVLS_ENABLE=0, ...).
set -uo pipefail
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
case "${1:-}" in
  tp2) tp=2 devices=0,1 ;;
  tp4) tp=4 devices=0,1,2,3 ;;
  *) usage ;;
esac
case "${2:-}" in
  "") fp8=0 name=tp$tp ;;
  fp8) fp8=1 name=tp$tp-fp8 ;;
  *) usage ;;
esac
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
budget=${ALT_BUDGET_S:-540}
warmup_max=${WARMUP_MAX_S:-$((budget / 3))}
rounds=${SWEEP_ROUNDS:-4}
min_left=${SWEEP_MIN_LEFT_S:-20}
models=${SWEEP_MODELS:-llama3-8b,llama3-70b,qwen2.5-32b,gpt3-175b}
iters=${SWEEP_ITERS:-20} warm=${SWEEP_WARMUP:-3} titers=${TORCH_ITERS:-10} twarm=${TORCH_WARMUP:-3}
# FP8: its own token counts, and the flags every ubuf sweep of it takes.
tokens=${SWEEP_TOKENS:-4096,8192,16384}
[[ "$tokens" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "sweep-calls: SWEEP_TOKENS is numbers and commas, got '$tokens'" >&2; exit 2; }
fp8_args=()
[ "$fp8" = 1 ] && fp8_args=(--fp8 --tokens "$tokens" --no-small)
# SWEEP_GRAPH=1: ubuf times everything as CUDA graph replays (bench sweep --cuda-graph), what layers run with
# --cuda-graph; its packs are named ...-graph. PyTorch stays eager.
graph_args=()
case "${SWEEP_GRAPH:-0}" in
  0) ;;
  1) graph_args=(--cuda-graph); name=$name-graph ;;
  *) echo "sweep-calls: SWEEP_GRAPH is 0 or 1, got '${SWEEP_GRAPH}'" >&2; exit 2 ;;
esac
for v in "$budget" "$warmup_max" "$rounds" "$min_left" "$iters" "$warm" "$titers" "$twarm"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "sweep-calls: numbers only, got '$v'" >&2; exit 2; }
done
[ "$rounds" -ge 2 ] || { echo "sweep-calls: SWEEP_ROUNDS must be at least 2 (A B A B), got $rounds" >&2; exit 2; }
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work_root=${SWEEP_WORK:-$PWD/sweep-work}
work=$work_root/sweep-$name
rm -rf "$work"
mkdir -p "$work/cache"
work=$(cd "$work" && pwd)
pack="$OUT/sweep-$name.tgz"
quick="$OUT/sweep-$name-summary.txt"

export CUDA_VISIBLE_DEVICES=$devices
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export UB_PLAN_CACHE="$work/cache/plans.properties" XDG_CACHE_HOME="$work/cache"
UBUF_COMMIT=$(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
export UBUF_COMMIT

say() { echo "sweep-calls $name [$(date -u +%T) +${SECONDS}s]: $*" | tee -a "$work/calls.txt"; }

# Writes the pack whole, then renames it: a run killed while packing keeps the previous one.
pack_now() {
  { cat "$work/calls.txt"; echo; cat "$work/rounds.txt" 2>/dev/null; echo
    cat "$work/report.txt" 2>/dev/null; } > "$quick"
  tar czf "$pack.partial" -C "$work_root" "sweep-$name" 2>/dev/null && mv -f "$pack.partial" "$pack"
}

dmon_pid=""
stop_dmon() {
  if [ -n "$dmon_pid" ]; then kill "$dmon_pid" 2>/dev/null; wait "$dmon_pid" 2>/dev/null; dmon_pid=""; fi
}
node_state() {
  echo "== $1 ($(date -u +%FT%TZ))"
  local q=index,name,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu
  nvidia-smi --query-gpu="$q,utilization.gpu,memory.used" --format=csv 2>&1
  nvidia-smi -q -d PERFORMANCE 2>&1 | grep -v -E '^ *$'
}
# The parts run in sessions of their own (setsid), in the background while this shell waits: a TERM to this script's
# process group (timeout -k 10 585 ...) then reaches this shell at once, which stops the part's whole tree (the
# runners' own timeouts put java and torchrun in groups of their own, out of the group signal's reach) and packs.
child=""
tree() {
  local p=$1 c
  for c in $(ps -o pid= --ppid "$p" 2>/dev/null || cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done
  echo "$p"
}
stop_child() {
  [ -n "$child" ] || return 0
  local pids i
  pids=$(tree "$child")
  # shellcheck disable=SC2086 # one pid per word
  kill -TERM $pids 2>/dev/null
  for ((i = 0; i < 50; i++)); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null
  child=""
}
run_child() {
  if command -v setsid > /dev/null; then setsid "$@" & else "$@" & fi
  child=$!
  wait "$child"
  local rc=$?
  child=""
  return $rc
}
on_term() {
  say "terminated: stopping the running part and packing what there is"
  stop_child
  stop_dmon
  pack_now
  exit 124
}
trap on_term TERM INT

say "commit $UBUF_COMMIT, CUDA_VISIBLE_DEVICES=$devices, budget ${budget}s (warm-up at most ${warmup_max}s)," \
  "$([ "$fp8" = 1 ] && echo "FP8 at M $tokens without PyTorch, ")models $models, ubuf --iters $iters" \
  "--warmup $warm, torch --iters $titers --warmup $twarm, up to $rounds rounds"
if command -v nvidia-smi > /dev/null; then
  { node_state before; nvidia-smi -L; nvidia-smi topo -m; } > "$work/node.txt" 2>&1
  nvidia-smi dmon -s pucv -d 1 -o DT > "$work/dmon.txt" 2>&1 &
  dmon_pid=$!
else
  say "no nvidia-smi: no clocks"
fi
[ "$fp8" = 1 ] || command -v torchrun > /dev/null || say "torchrun not found: the PyTorch parts will fail"

# 1. The warm-up pass: plans and GEMM tuning into this run's caches.
t0=$SECONDS
left=$((budget - SECONDS))
cap=$((warmup_max < left ? warmup_max : left))
run_child timeout --signal=TERM --kill-after=15 "$cap" bash "$bundle/java.sh" -cp "$bundle/lib/*" \
  dev.ubuf.cli.UbufCli bench sweep --tp "$tp" --models "$models" --iters 1 --warmup 0 "${fp8_args[@]}" "${graph_args[@]}" \
  --out "$work/warmup.json" > "$work/warmup.txt" 2>&1
rc=$?
say "warm-up: exit $rc in $((SECONDS - t0))s, $(grep -c '^ *auto ' "$work/warmup.txt" 2>/dev/null || true) shapes" \
  "planned$([ $rc -eq 124 ] && echo " (cut at ${cap}s: round 1 plans the rest)")"
pack_now

# 2. The alternating rounds.
longest=0
done_rounds=0
for ((r = 1; r <= rounds; r++)); do
  left=$((budget - SECONDS))
  if [ $r -gt 2 ] && [ "$longest" -gt "$left" ]; then
    say "stopping before round $r: ${left}s left, the longest round took ${longest}s"
    break
  fi
  if [ "$left" -lt "$min_left" ]; then
    say "stopping before round $r: only ${left}s left"
    break
  fi
  t0=$SECONDS
  if [ "$fp8" = 1 ]; then
    run_child timeout --signal=TERM --kill-after=15 "$left" bash "$bundle/java.sh" -cp "$bundle/lib/*" \
      dev.ubuf.cli.UbufCli bench sweep --tp "$tp" --models "$models" --iters "$iters" --warmup "$warm" \
      "${fp8_args[@]}" "${graph_args[@]}" --out "$work/sweep-r$r.json" > "$work/sweep-r$r.txt" 2>&1
    rc=$?
    echo "  round $r   sweep $((SECONDS - t0))s exit $rc (FP8, no PyTorch)" > "$work/summary.txt"
  else
    ALT_BUDGET_S=$left OUT="$work" run_child bash "$bundle/run-gpu.sh" \
      "alternate=$r-$r sweep --tp $tp --models $models --iters $iters --warmup $warm ${graph_args[*]} -- --iters $titers --warmup $twarm" \
      > /dev/null 2>&1
    rc=$?
  fi
  d=$((SECONDS - t0))
  # Every round in the mode asked for: a round timed otherwise is not this sweep's.
  want=false; [ ${#graph_args[@]} -gt 0 ] && want=true
  if [ -f "$work/sweep-r$r.json" ] && ! python3 -c "import json, sys; rs = json.load(open(sys.argv[1]))['records']
sys.exit(any(r.get('cuda_graph', False) != (sys.argv[2] == 'true') for r in rs if 'timing' in r))" \
      "$work/sweep-r$r.json" "$want"; then
    say "round $r: its records are not all timed with cuda_graph=$want: stopping"
    pack_now
    exit 1
  fi
  [ $d -gt $longest ] && longest=$d
  done_rounds=$r
  say "round $r: exit $rc in ${d}s ($(grep -h '^  round' "$work/summary.txt" 2>/dev/null | tr -s ' ' | sed 's/^ //'))"
  cat "$work/summary.txt" >> "$work/rounds.txt" 2>/dev/null
  rm -f "$work/summary.txt"
  pack_now
done

# 3. The report, and the node after.
stop_dmon
command -v nvidia-smi > /dev/null && node_state after >> "$work/node.txt" 2>&1
files=$(cd "$work" && ls sweep-r*.json torch-sweep-r*.json 2>/dev/null)
if [ -n "$files" ] && [ -f "$bundle/combine-rounds.py" ]; then
  # shellcheck disable=SC2086 # one file name per word
  (cd "$work" && python3 "$bundle/combine-rounds.py" $files) > "$work/report.txt" 2>&1
fi
say "done: $done_rounds rounds, $((SECONDS))s; packed into $(basename "$pack")"
pack_now
cat "$quick"
ls -l "$pack"
