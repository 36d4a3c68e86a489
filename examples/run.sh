#!/usr/bin/env bash
# Builds the example against the installed ubuf artifacts and runs it once, in this JVM (a thread per GPU, or the
# host simulation without a GPU): bash examples/run.sh [MAVEN_OPTIONS...]. Trains 3 steps on ub_config.yaml.
set -euo pipefail
cd "$(dirname "$0")"
JAVA_HOME=$(bash ../scripts/find-jdk25.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
mvn -B -q "$@" package
exec java --enable-native-access=ALL-UNNAMED -cp "target/ubuf-examples-0.1.0-SNAPSHOT.jar:target/lib/*" \
  dev.ubuf.examples.TrainMlp ub_config.yaml 3
