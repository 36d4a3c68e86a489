#!/usr/bin/env bash
# Prints the home of a JDK 25: $JAVA_HOME if it is one, else the first one under /usr/lib/jvm or /opt/java, else the
# `java` on PATH if that is 25. Exits 1 with a sentence naming JAVA_HOME when there is none.
# When JAVA_HOME points at another Java, the JDK 25 found instead is named on stderr, so the switch is never silent.
is25() { [ -x "$1/bin/java" ] && "$1/bin/java" -version 2>&1 | head -1 | grep -qE '"25(\.|")'; }
pick() {
  if [ -n "${JAVA_HOME:-}" ] && is25 "$JAVA_HOME"; then echo "$JAVA_HOME"; return 0; fi
  # last: the GPU bundle's Java 25 runtime, once scripts/java.sh has unpacked it (GPU nodes have no JDK)
  for d in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*-25-* /usr/lib/jvm/*25* /opt/java/*25* "$(dirname "$0")/../.gpu/jre"; do
    if is25 "$d"; then echo "$d"; return 0; fi
  done
  if command -v java >/dev/null; then
    h=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
    if is25 "$h"; then echo "$h"; return 0; fi
  fi
  return 1
}
if found=$(pick); then
  if [ -n "${JAVA_HOME:-}" ] && [ "$found" != "$JAVA_HOME" ]; then
    echo "note: JAVA_HOME=$JAVA_HOME is not a JDK 25; using $found" >&2
  fi
  echo "$found"
  exit 0
fi
echo "no JDK 25 found (JAVA_HOME=${JAVA_HOME:-unset}, none under /usr/lib/jvm, java on PATH is not 25):" \
  "install Temurin 25 (https://adoptium.net) and set JAVA_HOME=/path/to/jdk-25" >&2
exit 1
