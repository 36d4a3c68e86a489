#!/usr/bin/env bash
# Session 14 call 3 (4 GPUs) at fae6d5e: the bf16 model-shape sweep at tp 4 beside PyTorch (alternating rounds), with
# scatter:serial=1 among the planner's candidates and the sweep's methods; sweep-finish.sh then writes the first
# tp4/plan-vs-sweep.txt (the planner's own times against the rounds').
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd $OUT && ALT_BUDGET_S=550 timeout -k 10 575 bash $B/sweep-calls.sh tp4
ls $OUT
