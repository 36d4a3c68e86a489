#!/usr/bin/env bash
# Session 20 call 3 (4 GPUs): the same tp 4 sweep as call 2, ubuf issued call by call (no --cuda-graph), on another
# 4x H200 machine of the same kind, for the eager-against-replay comparison at one commit.
set -u
cd "$(dirname "$0")/.."
OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 585 bash .gpu/sweep-calls.sh tp4
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp4-summary.txt 2>/dev/null | grep -E "^(PASS|FAIL)|round"
