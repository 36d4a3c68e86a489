#!/usr/bin/env bash
# Packs a small Java 25 runtime for machines with no JDK (the GPU nodes) into OUT_DIR/jre.txz, with jlink from a
# local JDK 25 (scripts/find-jdk25.sh). The runtime holds the modules jdeps finds in the given jars, plus a few that
# only reflection or the JUnit console reach, and jdk.jfr (Flight Recorder: profiles of the host's time on a node). An
# existing jre.txz built from the same module list is kept.
# Usage: scripts/pack-jre.sh OUT_DIR [JAR...]
set -euo pipefail
out=${1:?usage: scripts/pack-jre.sh OUT_DIR [JAR...]}
shift
jdk=$(bash "$(dirname "$0")/find-jdk25.sh")
[ -x "$jdk/bin/jlink" ] || { echo "pack-jre: $jdk has no jlink: set JAVA_HOME to a full JDK 25" >&2; exit 1; }
# jdk.unsupported: sun.misc.Unsafe for libraries that look for it; java.management and java.xml: the JUnit console
# (its runtime report and XML reports); jdk.zipfs: jars opened as file systems; java.logging: the bootstrap's log.
modules="java.base,java.logging,java.management,java.xml,jdk.unsupported,jdk.zipfs,jdk.jfr"
if [ $# -gt 0 ]; then
  # Jar by jar against the others (a modular jar such as progressbar's names its dependencies as modules), keeping
  # only the JDK's own modules: the jars themselves travel on the class path. Test jars are analysed but kept off
  # the module path: as automatic modules they would share packages with the module they test (ubuf-core's tests
  # are in dev.ubuf.cuda, ...), and jdeps refuses a module path with a package in two modules.
  all=$(printf '%s\n' "$@" | grep -v -- '-tests\.jar$' | paste -sd: -)
  for jar in "$@"; do
    found=$("$jdk/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 25 -q --module-path "$all" \
      "$jar" 2>/dev/null || true)
    [ -n "$found" ] && modules="$modules,$found"
  done
fi
modules=$(tr ',' '\n' <<<"$modules" | grep -E '^(java|jdk)\.' | sort -u | paste -sd, -)
mkdir -p "$out"
if [ -s "$out/jre.txz" ] && [ "$(cat "$out/jre.modules" 2>/dev/null)" = "$modules" ]; then
  echo "pack-jre: $out/jre.txz is up to date ($modules)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages --output "$work/jre"
tar cJf "$out/jre.txz" -C "$work" jre
echo "$modules" > "$out/jre.modules"
echo "pack-jre: $out/jre.txz ($(du -h "$out/jre.txz" | cut -f1)) with $modules"
