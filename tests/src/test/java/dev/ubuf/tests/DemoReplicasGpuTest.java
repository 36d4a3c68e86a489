package dev.ubuf.tests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ubuf.cli.UbufCli;
import dev.ubuf.cuda.Cuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code ubuf demo --num-replicas 2 --tp 2} on 4 GPUs: two TP groups train the same weights on their own batches and
 * average their gradients over NCCL, so both replicas must end with bit-identical parameters (the demo hashes them),
 * with finite losses that differ between replicas (their batches differ) and overlap and no_overlap agreeing; with
 * {@code --trace}, a Chrome trace with a process per world rank that shows the DP gradient all-reduce on each.
 *
 * <p>GPU counts: fewer than 2 GPUs (or no kernels) is the usual GPU skip, a failure under
 * {@code -Dubuf.requireGpu=true}; 2 or 3 GPUs skip the 4-GPU cases with a plain JUnit assumption, which
 * {@code ubuf.requireGpu} does not turn into a failure, so a 2-GPU run of every {@code *Gpu*Test} stays green. The
 * class has its own name so that a run can also pick it ({@code tests=DemoReplicasGpuTest}) or leave it out.
 */
class DemoReplicasGpuTest {
    private static final Pattern ITER = Pattern.compile(
            "iter +(\\d+)\\s+loss overlap (\\S+)\\s+no_overlap (\\S+)\\s+step ms overlap (\\S+)\\s+no_overlap (\\S+)"
                    + "\\s+no_comm (\\S+)\\s+per replica overlap (\\S+) no_overlap (\\S+)");

    @ParameterizedTest(name = "{0} layers={1} {2} trace={3}")
    @CsvSource({"bf16, 1, '', false", "fp32, 2, --swiglu, true"})
    void twoReplicasOfTwoGpusKeepIdenticalWeights(String dtype, int layers, String swiglu, boolean trace,
                                                  @TempDir Path dir) throws Exception {
        Gpu.assumeGpus(2);
        int gpus = Cuda.deviceCount();
        assumeTrue(gpus >= 4, "needs 4 GPUs for --num-replicas 2 --tp 2, found " + gpus
                + " (a plain skip, also under -Dubuf.requireGpu=true)");
        Path results = dir.resolve("demo.json");
        List<String> args = new ArrayList<>(List.of("demo", "--num-replicas", "2", "--tp", "2", "--hidden", "256",
                "--ffn", "1024", "--tokens", "256", "--layers", Integer.toString(layers), "--iters", "3",
                "--warmup", "1", "--dtype", dtype, "--out", results.toString()));
        if (!swiglu.isEmpty()) {
            args.add(swiglu);
        }
        Path traceFile = dir.resolve("trace/step.json");
        if (trace) {
            args.addAll(List.of("--trace", traceFile.toString()));
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = UbufCli.run(args.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        String text = out.toString();
        String all = "exit " + code + "\nstdout:\n" + text + "\nstderr:\n" + err;
        assertEquals(0, code, all);
        assertTrue(text.contains("data parallelism: 2 replicas x tp 2 = 4 GPUs"), all);
        assertTrue(text.contains("TP groups (replicas): 0=[0, 1] 1=[2, 3]; DP groups (gradient all-reduce): [0, 2]"
                + " [1, 3]"), all);
        assertTrue(text.contains("replica weights after the last step: IDENTICAL"), all);
        assertTrue(text.contains("AGREE") && !text.contains("DISAGREE"), all);
        Matcher m = ITER.matcher(text);
        int iterations = 0;
        boolean replicasDiffer = false;
        while (m.find()) {
            iterations++;
            double on = Double.parseDouble(m.group(2));
            double off = Double.parseDouble(m.group(3));
            assertTrue(Double.isFinite(on) && on > 0 && Double.isFinite(off) && off > 0, "finite losses:\n" + all);
            for (int g = 4; g <= 6; g++) {
                assertTrue(Double.parseDouble(m.group(g)) > 0, "step times must be positive:\n" + all);
            }
            for (int g = 7; g <= 8; g++) {
                String[] perReplica = m.group(g).split("/");
                assertEquals(2, perReplica.length, all);
                double a = Double.parseDouble(perReplica[0]);
                double b = Double.parseDouble(perReplica[1]);
                assertTrue(Double.isFinite(a) && a > 0 && Double.isFinite(b) && b > 0, "finite losses:\n" + all);
                // The printed loss is the replicas' mean (to the printed precision).
                double mean = Double.parseDouble(m.group(g == 7 ? 2 : 3));
                assertEquals((a + b) / 2, mean, 2e-6, all);
                replicasDiffer |= a != b;
            }
        }
        assertEquals(4, iterations, "one line per iteration, warm-up included:\n" + all);
        assertTrue(replicasDiffer, "each replica trains on its own batches, so their losses differ:\n" + all);
        String json = Files.readString(results);
        assertEquals(3, json.split("\"op\" : \"layer\"", -1).length - 1, json);
        assertTrue(json.contains("\"replicas\" : 2"), json);
        if (trace) {
            checkTrace(traceFile, dir.resolve("trace/step.png"), all);
        }
    }

    /**
     * Every world rank is a process of the trace, each with GEMMs, copies and NCCL spans, the DP gradient all-reduce
     * among them; the weight check above ran after the traced step, so the replicas stayed identical through it.
     */
    private static void checkTrace(Path file, Path png, String all) throws Exception {
        assertTrue(Files.isRegularFile(file), "no trace file:\n" + all);
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        JsonNode meta = root.path("metadata");
        assertEquals(2, meta.path("replicas").asInt(), meta.toString());
        assertTrue(meta.path("clock_alignment").asText().contains("barrier of all 4 world ranks"), meta.toString());
        Map<Integer, Set<String>> kinds = new TreeMap<>();
        Set<Integer> dpAllReduce = new TreeSet<>();
        for (JsonNode e : root.path("traceEvents")) {
            if (e.path("ph").asText().equals("X")) {
                assertTrue(e.path("dur").asDouble() >= 0 && e.path("ts").asDouble() >= 0, e::toString);
                int pid = e.path("pid").asInt();
                kinds.computeIfAbsent(pid, k -> new TreeSet<>()).add(e.path("cat").asText());
                if (e.path("cat").asText().equals("nccl") && e.path("name").asText().startsWith("NCCL DP AllReduce")) {
                    dpAllReduce.add(pid);
                }
            }
        }
        assertEquals(Set.of(0, 1, 2, 3), kinds.keySet(), "every world rank traced: " + kinds);
        for (Set<String> k : kinds.values()) {
            assertTrue(k.contains("gemm") && k.contains("copy") && k.contains("nccl"), "kinds per rank: " + kinds);
        }
        assertEquals(Set.of(0, 1, 2, 3), dpAllReduce, "the DP all-reduce on every rank");
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "no readable PNG beside the trace:\n" + all);
    }

    @Test
    void moreReplicasThanTheGpusHoldIsOneSentenceWithExitTwo() {
        Gpu.assumeGpus(2);
        int gpus = Cuda.deviceCount();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = UbufCli.run(new String[]{"demo", "--num-replicas", Integer.toString(gpus), "--tp", "2"},
                new PrintWriter(out, true), new PrintWriter(err, true));
        String all = "exit " + code + "\nstdout:\n" + out + "\nstderr:\n" + err;
        assertEquals(2, code, all);
        assertTrue(err.toString().contains("--num-replicas: " + gpus + " x --tp 2 = " + 2 * gpus + " GPUs, but "
                + gpus + " are visible"), all);
    }
}
