package dev.ubuf.tests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ubuf.cli.UbufCli;
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

/**
 * {@code ubuf demo}'s GPU path at a small size: three iterations of training with and without overlap on two GPUs,
 * which must exit 0, print the three timed modes, agree on every iteration's loss within the demo's tolerance (the
 * runs start from the same weights and see the same batches) and write one results record per mode; with
 * {@code --trace}, a Chrome trace of one overlap step with GEMMs, copies and the host's spans on both ranks, its PNG
 * timeline, and the no_comm and no_overlap steps' traces beside it.
 */
class DemoGpuTest {
    private static final Pattern ITER = Pattern.compile(
            "iter +(\\d+)\\s+loss overlap (\\S+)\\s+no_overlap (\\S+)\\s+step ms overlap (\\S+)\\s+no_overlap (\\S+)"
                    + "\\s+no_comm (\\S+)");

    @ParameterizedTest(name = "{0} layers={1} {2} trace={3}")
    @CsvSource({"bf16, 1, '', true", "fp32, 2, --swiglu, false"})
    void theGpuDemoTrainsWithAndWithoutOverlapAndTheLossesAgree(String dtype, int layers, String swiglu,
                                                                boolean trace, @TempDir Path dir) throws Exception {
        Gpu.assumeGpus(2);
        Path results = dir.resolve("demo.json");
        List<String> args = new ArrayList<>(List.of("demo", "--tp", "2", "--hidden", "256", "--ffn", "1024",
                "--tokens", "256", "--layers", Integer.toString(layers), "--iters", "3", "--warmup", "0",
                "--dtype", dtype, "--out", results.toString()));
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
        assertTrue(!text.contains("SIMULATION"), "the GPU path must run, not the simulation:\n" + all);
        for (String mode : new String[]{"overlap", "no_overlap", "no_comm"}) {
            assertTrue(text.contains("median step " + mode), mode + " missing:\n" + all);
        }
        assertTrue(text.contains("AGREE") && !text.contains("DISAGREE"), all);
        Matcher m = ITER.matcher(text);
        int iterations = 0;
        double tol = "fp32".equals(dtype) ? 1e-3 : 3e-2;
        while (m.find()) {
            iterations++;
            double on = Double.parseDouble(m.group(2));
            double off = Double.parseDouble(m.group(3));
            assertTrue(Double.isFinite(on) && on > 0, "loss must be finite and positive:\n" + all);
            assertTrue(Math.abs(on - off) <= tol * Math.abs(off), "iteration " + m.group(1) + ": losses " + on
                    + " (overlap) and " + off + " (no_overlap) differ by more than " + tol + " relative:\n" + all);
            for (int g = 4; g <= 6; g++) {
                assertTrue(Double.parseDouble(m.group(g)) > 0, "step times must be positive:\n" + all);
            }
        }
        assertEquals(3, iterations, "one line per iteration:\n" + all);
        String json = Files.readString(results);
        assertEquals(3, json.split("\"op\" : \"layer\"", -1).length - 1, json);
        for (String key : new String[]{"\"hidden_share\"", "\"speedup\"", "\"loss_max_rel_diff\"", "\"no_comm\""}) {
            assertTrue(json.contains(key), key + " missing:\n" + json);
        }
        if (trace) {
            checkTrace(traceFile, dir.resolve("trace/step.png"), all);
        }
    }

    /**
     * {@code --fp8 --compare-bf16}: the FP8 overlap and no_overlap stacks agree within the demo's bf16 tolerance (both
     * quantize the same tensors with the same scales), the FP8 loss tracks the bf16 stack's within
     * {@link dev.ubuf.bench.LayerDemo#FP8_VS_BF16_LOSS_TOLERANCE} on every iteration, four step times are reported,
     * and --out has one record per mode with the FP8 fields (the bf16 one marked fp8 false).
     */
    @ParameterizedTest(name = "fp8 {0}")
    @CsvSource({"delayed", "current"})
    void theFp8DemoTracksTheBf16RunAndReportsBothStepTimes(String recipe, @TempDir Path dir) throws Exception {
        Gpu.assumeGpus(2);
        Path results = dir.resolve("fp8.json");
        String[] args = {"demo", "--tp", "2", "--hidden", "256", "--ffn", "1024", "--tokens", "256", "--iters", "4",
                "--warmup", "1", "--fp8", "--fp8-recipe", recipe, "--compare-bf16", "--out", results.toString()};
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = UbufCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        String text = out.toString();
        String all = "exit " + code + "\nstdout:\n" + text + "\nstderr:\n" + err;
        assertEquals(0, code, all);
        assertTrue(text.contains("FP8 GEMMs: fp8_recipe=" + recipe), all);
        for (String mode : new String[]{"overlap", "no_overlap", "no_comm", "bf16_overlap"}) {
            assertTrue(text.contains("median step " + mode), mode + " missing:\n" + all);
        }
        assertTrue(text.contains("AGREE") && !text.contains("DISAGREE"), all);
        assertTrue(text.contains("TRACKS") && !text.contains("DIVERGES"), all);
        Matcher m = Pattern.compile("iter +(\\d+)\\s.*loss overlap (\\S+)\\s.*"
                + "bf16_overlap loss (\\S+) step ms (\\S+)").matcher(text);
        int iterations = 0;
        while (m.find()) {
            iterations++;
            double fp8 = Double.parseDouble(m.group(2));
            double bf16 = Double.parseDouble(m.group(3));
            assertTrue(Double.isFinite(fp8) && fp8 > 0 && Double.parseDouble(m.group(4)) > 0, all);
            assertTrue(Math.abs(fp8 - bf16) <= dev.ubuf.bench.LayerDemo.FP8_VS_BF16_LOSS_TOLERANCE * bf16,
                    "iteration " + m.group(1) + ": fp8 " + fp8 + " vs bf16 " + bf16 + "\n" + all);
        }
        assertEquals(5, iterations, "one line per iteration, warm-up included:\n" + all);
        JsonNode root = new ObjectMapper().readTree(results.toFile());
        Map<String, JsonNode> byMode = new TreeMap<>();
        for (JsonNode r : root.path("records")) {
            byMode.put(r.path("method").asText(), r);
        }
        assertEquals(Set.of("overlap", "no_overlap", "no_comm", "bf16_overlap"), byMode.keySet(), root.toString());
        for (String mode : new String[]{"overlap", "no_overlap", "no_comm"}) {
            assertTrue(byMode.get(mode).path("fp8").asBoolean(), mode + ": " + root);
            assertEquals(recipe, byMode.get(mode).path("fp8_recipe").asText(), root.toString());
            assertEquals("fp8", byMode.get(mode).path("gemm_dtype").asText(), root.toString());
        }
        assertTrue(!byMode.get("bf16_overlap").path("fp8").asBoolean(), root.toString());
        assertEquals("bf16", byMode.get("bf16_overlap").path("gemm_dtype").asText(), root.toString());
        assertTrue(byMode.get("overlap").path("fp8_vs_bf16_step_ratio").asDouble() > 0, root.toString());
    }

    /** The trace has GEMM and copy spans on both ranks, well formed, and a readable PNG lies beside it. */
    private static void checkTrace(Path file, Path png, String all) throws Exception {
        assertTrue(Files.isRegularFile(file), "no trace file:\n" + all);
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        assertEquals("ms", root.path("displayTimeUnit").asText(), all);
        assertTrue(root.path("metadata").path("clock_alignment").asText().contains("barrier"), root.path("metadata")
                .toString());
        Map<Integer, Set<String>> kinds = new TreeMap<>();
        for (JsonNode e : root.path("traceEvents")) {
            if (e.path("ph").asText().equals("X")) {
                assertTrue(e.path("dur").asDouble() >= 0 && e.path("ts").asDouble() >= 0, e::toString);
                kinds.computeIfAbsent(e.path("pid").asInt(), k -> new TreeSet<>()).add(e.path("cat").asText());
            }
        }
        assertEquals(Set.of(0, 1), kinds.keySet(), "both ranks traced: " + kinds);
        for (Set<String> k : kinds.values()) {
            assertTrue(k.contains("gemm") && k.contains("copy") && k.contains("nccl") && k.contains("host"),
                    "kinds per rank: " + kinds);
        }
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "no readable PNG beside the trace:\n" + all);
        assertTrue(img.getWidth() >= 1000 && img.getHeight() > 200, img.getWidth() + "x" + img.getHeight());
        // The compute alone beside it, with its GEMMs, and the comparison in the output.
        String name = file.getFileName().toString();
        Path noComm = file.resolveSibling(name.substring(0, name.length() - ".json".length()) + "-no_comm.json");
        JsonNode alone = new ObjectMapper().readTree(noComm.toFile());
        assertEquals("no_comm", alone.path("metadata").path("mode").asText(), alone.path("metadata").toString());
        Set<String> aloneKinds = new TreeSet<>();
        alone.path("traceEvents").forEach(e -> aloneKinds.add(e.path("cat").asText()));
        assertTrue(aloneKinds.contains("gemm"), aloneKinds.toString());
        assertNotNull(ImageIO.read(file.resolveSibling(name.substring(0, name.length() - ".json".length())
                + "-no_comm.png").toFile()), all);
        assertTrue(all.contains("the traced overlap step against the traced no_comm step"), all);
        // And the no_overlap step, its NCCL collectives among its spans, compared with the compute alone.
        Path noOverlap = file.resolveSibling(name.substring(0, name.length() - ".json".length()) + "-no_overlap.json");
        JsonNode plain = new ObjectMapper().readTree(noOverlap.toFile());
        assertEquals("no_overlap", plain.path("metadata").path("mode").asText(), plain.path("metadata").toString());
        Set<String> plainKinds = new TreeSet<>();
        plain.path("traceEvents").forEach(e -> plainKinds.add(e.path("cat").asText()));
        assertTrue(plainKinds.contains("gemm") && plainKinds.contains("nccl"), plainKinds.toString());
        assertTrue(all.contains("the traced no_overlap step against the traced no_comm step"), all);
    }
}
