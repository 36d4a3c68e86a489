#!/usr/bin/env bash
# OUT=DIR bash .gpu/run-gpu-watched.sh STAGE...: run-gpu.sh STAGE... in the background, watched: if
# $OUT/tests.txt stops growing for STALL_S seconds (default 90), it prints a thread dump of the test JVM into that
# file (SIGQUIT) and stops that JVM, so one hang costs STALL_S rather than the whole command. Exits as run-gpu.sh.
stall=${STALL_S:-90}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OUT
bash "$(dirname "$0")/run-gpu.sh" "$@" > /dev/null 2>&1 &
runner=$!
last=0; since=$SECONDS
while kill -0 $runner 2>/dev/null; do
  sleep 5
  size=$(stat -c %s "$OUT/tests.txt" 2>/dev/null || echo 0)
  if [ "$size" != "$last" ]; then last=$size; since=$SECONDS; continue; fi
  if [ $((SECONDS - since)) -ge "$stall" ]; then
    # This runner's JVM only: lanes of scripts/gpu-lanes.sh run several at once, each with its own OUT.
    pid=$(pgrep -f -- "--reports-dir $OUT/junit" | head -1)
    [ -n "$pid" ] || continue
    echo "watched: no test output for ${stall}s: thread dump, then stopping the test JVM" | tee -a "$OUT/tests.txt"
    kill -QUIT "$pid"; sleep 5; kill -KILL "$pid"; since=$SECONDS
  fi
done
wait $runner
