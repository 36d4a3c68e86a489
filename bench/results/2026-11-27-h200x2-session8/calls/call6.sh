#!/usr/bin/env bash
# Session 8 call 6 (2 GPUs) at 872d19d: the model-shape sweep at tp 2 against PyTorch (scripts/sweep-calls.sh): the
# reduce-scatters' bias carried by their last Reduce, and the RS ideal's communication term over both bulk methods.
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd $OUT && ALT_BUDGET_S=550 timeout -k 10 575 bash $B/sweep-calls.sh tp2
