#!/usr/bin/env bash
# Builds the self-contained GPU bundle in .gpu/ (git-ignored, about 40 MB): every jar, the test classes, the JUnit
# console launcher, a Java 25 runtime (jre.txz), the Java launcher java.sh, the runner run-gpu.sh and the PyTorch
# baseline. Copy .gpu to a GPU node that has no JDK or Maven and run, from the folder holding it:
#   OUT=gpu-out bash .gpu/run-gpu.sh info tests
# Everything it needs comes from this repository and a local JDK 25 with Maven.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(bash scripts/find-jdk25.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
mvn -B -q -DskipTests -Pgpu-bundle package
mkdir -p .gpu
rm -rf .gpu/lib .gpu/jre .gpu/jre.tgz   # jre/ is the runtime java.sh unpacked on a node: never carried; jre.tgz the old pack
mkdir -p .gpu/lib
cp tests/target/gpu-bundle/lib/*.jar .gpu/lib/
cp tests/target/ubuf-tests-*-tests.jar .gpu/lib/
# The console launcher carries the JUnit engines itself; a second copy on the class path would be found twice.
rm -f .gpu/lib/junit-jupiter*.jar .gpu/lib/junit-platform-commons-*.jar .gpu/lib/junit-platform-engine-*.jar \
  .gpu/lib/opentest4j-*.jar .gpu/lib/apiguardian-*.jar
# XChart and its PDF/SVG stack: no class of ubuf loads them (the charts are drawn with ImageIO); 4 MB the carry
# limit needs.
rm -f .gpu/lib/xchart-*.jar .gpu/lib/pdfbox-*.jar .gpu/lib/fontbox-*.jar .gpu/lib/graphics2d-*.jar \
  .gpu/lib/VectorGraphics2D-*.jar .gpu/lib/animated-gif-lib-*.jar .gpu/lib/commons-logging-*.jar
# JCuda's natives carry the NVPTX compiler (24 MB unpacked) for PTX compilation at run time; ubuf loads prebuilt
# fatbins, and the bundle must stay well under the GPU machine's 64 MiB carry limit.
natives=$(ls .gpu/lib/jcuda-natives-*.jar)
zip -q -d "$natives" 'lib/libJNvPTXCompiler-*' 'lib/libJNvrtc-*' > /dev/null
bash scripts/pack-jre.sh .gpu .gpu/lib/*.jar
cp scripts/java.sh scripts/run-gpu.sh scripts/run-gpu-watched.sh scripts/gpu-lanes.sh scripts/demo-runs.sh scripts/demo-ab.sh scripts/plan-vs-bench.sh scripts/sass-sm90a.sh scripts/sweep-calls.sh bench/torch/torch_baseline.py bench/torch/torch_fp8_gemm.py bench/torch/torch_kernels.py bench/torch/torch_layer.py bench/torch/gemm_timing.py bench/torch/torch_gemm_serve.py bench/torch/ubuf_random.py scripts/gemm-parity.py scripts/combine-rounds.py scripts/parity-summary.py .gpu/
# The example (examples/, a user's Maven project) compiled against the bundle's jars, to run it on GPU nodes.
rm -rf .gpu/examples && mkdir -p .gpu/examples/classes
javac --release 25 -d .gpu/examples/classes -cp ".gpu/lib/*" $(find examples/src/main/java -name '*.java')
jar --create --file .gpu/examples/ubuf-examples.jar -C .gpu/examples/classes . && rm -rf .gpu/examples/classes
cp examples/ub_config.yaml .gpu/examples/
# The demo's layer configs; call scripts name the planner's one as auto.yaml.
mkdir -p .gpu/configs && cp bench/configs/*.yaml .gpu/configs/ && cp bench/configs/layernorm-mlp-auto.yaml .gpu/auto.yaml
git rev-parse --short HEAD > .gpu/COMMIT 2>/dev/null || echo unknown > .gpu/COMMIT
du -sh .gpu
