#!/usr/bin/env bash
# Two builds of the demo in alternating rounds on one machine, from the folder that holds the bundle (.gpu/):
#   OUT=DIR bash .gpu/demo-ab.sh OTHER_JARS ROUNDS RUN...
# OTHER_JARS: a folder with another commit's ubuf-*.jar files (its product jars only: the bundle's third-party jars
# serve both, so the two builds must share their dependency versions). Each round runs every RUN (demo-runs.sh's
# syntax) with this bundle's jars and with OTHER_JARS, the one going first alternating from round to round, into
# $OUT/demo-<run>-<new|other>-r<round>.{txt,json}; one line per run in $OUT/demo-summary.txt.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 3 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
other=$(cd "$1" && pwd) || exit 2
rounds=$2
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "demo-ab: ROUNDS is a positive number, got '$rounds'"; exit 2; }
shift 2
ls "$other"/ubuf-*.jar > /dev/null 2>&1 || { echo "demo-ab: no ubuf-*.jar in $other"; exit 2; }
third=$(ls "$bundle"/lib/*.jar | grep -v '/ubuf-' | grep -v console-standalone | paste -sd: -)
other_cp="$(ls "$other"/ubuf-*.jar | grep -v -- '-tests.jar' | paste -sd: -):$third"
rc=0
for r in $(seq 1 "$rounds"); do
  for side in $( [ $((r % 2)) -eq 1 ] && echo "new other" || echo "other new"); do
    if [ "$side" = new ]; then
      DEMO_TAG="-new-r$r" bash "$bundle/demo-runs.sh" "$@" || rc=1
    else
      DEMO_TAG="-other-r$r" DEMO_CP="$other_cp" bash "$bundle/demo-runs.sh" "$@" || rc=1
    fi
  done
done
exit $rc
