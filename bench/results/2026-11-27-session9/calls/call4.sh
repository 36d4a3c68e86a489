#!/usr/bin/env bash
# Session 9 call 4 (4 GPUs) at e1bb58c: the model-shape sweep at tp 4 against PyTorch (scripts/sweep-calls.sh), the
# first since f96fa36: the RS bias in its last
# reduction, the RS ideal's communication term over every bulk method.
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd $OUT && ALT_BUDGET_S=${ALT_BUDGET_S:-550} timeout -k 10 575 bash $B/sweep-calls.sh tp4
