#!/usr/bin/env bash
# Prints the home of a JDK 25: $JAVA_HOME if it is one, else the first under /usr/lib/jvm, else the `java` on PATH.
is25() { [ -x "$1/bin/java" ] && "$1/bin/java" -version 2>&1 | head -1 | grep -qE '"25(\.|")'; }
if [ -n "${JAVA_HOME:-}" ] && is25 "$JAVA_HOME"; then echo "$JAVA_HOME"; exit 0; fi
for d in /usr/lib/jvm/temurin-25* /usr/lib/jvm/*-25-* /usr/lib/jvm/*25* /opt/java/*25* /tmp/ubuf-jre/jre; do
  if is25 "$d"; then echo "$d"; exit 0; fi
done
if command -v java >/dev/null; then
  h=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
  if is25 "$h"; then echo "$h"; exit 0; fi
fi
echo "no JDK 25 found: install Temurin 25 (https://adoptium.net) and set JAVA_HOME" >&2
exit 1
