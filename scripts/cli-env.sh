# Sourced by bin/ubuf and bin/ubuf-launch, so that both find Java and the jars the same way. Sets:
#   ubuf_java  the java of a JDK 25 (scripts/find-jdk25.sh: $JAVA_HOME if it is 25, else one it finds)
#   ubuf_cp    the class path of the CLI and the launcher: every jar in $UBUF_LIB (a folder, e.g. the GPU bundle's
#              lib/), else bench/target's jar plus bench/target/lib/*, which the build command below fills
# and exits with a sentence when either is missing.
ubuf_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ubuf_build_hint="build first, in $ubuf_root: JAVA_HOME=/path/to/jdk-25 mvn -B -DskipTests package"
ubuf_java_home=$(bash "$ubuf_root/scripts/find-jdk25.sh") || exit 1
ubuf_java="$ubuf_java_home/bin/java"
if [ -n "${UBUF_LIB:-}" ]; then
  [ -d "$UBUF_LIB" ] || { echo "$(basename "$0"): UBUF_LIB=$UBUF_LIB is not a folder of jars" >&2; exit 1; }
  ubuf_cp="$UBUF_LIB/*"
else
  ubuf_jar=$(ls "$ubuf_root"/bench/target/ubuf-bench-*.jar 2>/dev/null | grep -v -- '-tests\.jar$' | head -1 || true)
  if [ -z "$ubuf_jar" ] || [ ! -d "$ubuf_root/bench/target/lib" ]; then
    echo "$(basename "$0"): not built yet: $ubuf_build_hint" >&2
    exit 1
  fi
  ubuf_cp="$ubuf_jar:$ubuf_root/bench/target/lib/*"
fi
