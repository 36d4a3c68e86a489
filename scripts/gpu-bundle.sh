#!/usr/bin/env bash
# Builds the self-contained GPU bundle in .gpu/ (git-ignored): every jar, the test classes, the JUnit console
# launcher, a Java 25 runtime and the run scripts. Carry .gpu to a GPU node with no Maven and run .gpu/run-gpu.sh.
set -euo pipefail
set -o pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(bash scripts/find-jdk25.sh); export JAVA_HOME
mvn -B -q -DskipTests -Pgpu-bundle install
rm -rf .gpu/lib && mkdir -p .gpu/lib
cp tests/target/gpu-bundle/lib/*.jar .gpu/lib/
cp tests/target/ubuf-tests-*-tests.jar .gpu/lib/
# The console launcher carries the JUnit engines itself; a second copy on the class path would be found twice.
rm -f .gpu/lib/junit-jupiter*.jar .gpu/lib/junit-platform-commons-*.jar .gpu/lib/junit-platform-engine-*.jar \
  .gpu/lib/opentest4j-*.jar .gpu/lib/apiguardian-*.jar
SHARED=${UBUF_SHARED:-../shared}
JDK25=$JAVA_HOME bash "$SHARED/device/pack-jre.sh" .gpu >/dev/null
cp "$SHARED/device/java.sh" "$SHARED/device/anchor_torch.py" .gpu/
cp scripts/run-gpu.sh .gpu/
git rev-parse --short HEAD > .gpu/COMMIT 2>/dev/null || echo unknown > .gpu/COMMIT
du -sh .gpu
