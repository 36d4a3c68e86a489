#!/usr/bin/env bash
# Session 12 call 2 (4 GPUs) at 64fa377: the model-shape sweep at tp 4 against PyTorch (scripts/sweep-calls.sh), the
# first with the RS method scatter among the planner's candidates and the sweep's methods.
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd $OUT && ALT_BUDGET_S=${ALT_BUDGET_S:-550} timeout -k 10 575 bash $B/sweep-calls.sh tp4
