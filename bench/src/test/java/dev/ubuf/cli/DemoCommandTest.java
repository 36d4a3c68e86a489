package dev.ubuf.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ubuf.bench.ChildJvm;
import dev.ubuf.cuda.Cuda;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** `ubuf demo` without a GPU: a labelled simulation whose overlapped and unoverlapped paths match. */
class DemoCommandTest {
    @Test
    void theDemoSimulatesTheLayerStepAndBothPathsMatch() {
        // With a GPU the demo trains on it instead (DemoGpuTest covers that path).
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        for (String[] args : new String[][]{{"demo"}, {"demo", "--swiglu", "--tp", "4", "--tokens", "16"}}) {
            Ubuf r = Ubuf.run(args);
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("SIMULATION"), r::toString);
            assertTrue(r.out().contains("overlapped and unoverlapped paths match"), r::toString);
            assertTrue(r.out().contains("FC1_FPROP") || r.out().contains("fc1_fprop"), r::toString);
        }
    }

    @Test
    void badInputIsOneSentenceNamingTheOptionWithExitTwo() {
        Ubuf fp8 = Ubuf.run("demo", "--fp8", "--hidden", "40");
        assertEquals(2, fp8.exitCode(), fp8::toString);
        assertTrue(fp8.err().contains("--fp8") && fp8.err().contains("multiple of 16"), fp8::toString);
        Ubuf tokens = Ubuf.run("demo", "--tokens", "33");
        assertEquals(2, tokens.exitCode(), tokens::toString);
        assertTrue(tokens.err().contains("--tokens"), tokens::toString);
    }

    @Test
    void aTracedStepIsBrokenDownAfterItsTraceIsWritten() {
        var spans = List.of(
                new dev.ubuf.trace.Span("fc2_fprop: compute 0", "Gemm", dev.ubuf.trace.SpanKind.GEMM, 0, 100,
                        java.util.Map.of("m", 8, "n", 8, "k", 8)),
                new dev.ubuf.trace.Span("fc2_fprop: comm 0", "Copy", dev.ubuf.trace.SpanKind.COPY, 60, 140, null));
        var trace = new dev.ubuf.trace.StepTrace("t", java.util.Map.of(), List.of(new dev.ubuf.trace.RankTrace(0,
                List.of("fc2_fprop: compute 0", "fc2_fprop: comm 0"), spans)));
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        DemoCommand.printBreakdown(trace, new java.io.PrintWriter(out), new java.io.PrintWriter(err));
        assertTrue(out.toString().contains("communication 80 us of which 40 us under a GEMM (hidden 0.50)"),
                out::toString);
        assertTrue(out.toString().contains("fc2_fprop"), out::toString);
        assertEquals("", err.toString());
    }

    @Test
    void aSimulationTooLargeForTheHeapIsRefusedBeforeAnyWorkNamingTheSizes() {
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        long start = System.nanoTime();
        Ubuf r = Ubuf.run("demo", "--hidden", "8192", "--ffn", "28672", "--swiglu");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--hidden") && r.err().contains("--ffn") && r.err().contains("GB"), r::toString);
        assertTrue(!r.out().contains("SIMULATION"), () -> "refused before the simulation started: " + r);
        assertTrue((System.nanoTime() - start) / 1e9 < 10, "refused at once, not after running out of memory");
        Ubuf tokens = Ubuf.run("demo", "--hidden", "256", "--ffn", "512", "--tokens", "1048576");
        assertEquals(2, tokens.exitCode(), tokens::toString);
        assertTrue(tokens.err().contains("--tokens"), tokens::toString);
        // 4096/14336 SwiGLU at 32 tokens: 176M weights at 90 bytes, 32 x 4096+28672+14336 activations at 100.
        assertEquals(90.0 * (4096L * 2 * 14336 + 14336L * 4096) + 100.0 * 32 * (4096 + 2 * 14336 + 14336),
                DemoCommand.simulationHeapBytes(4096, 14336, 32, dev.ubuf.layers.tp.Activation.SWIGLU), 1);
        assertTrue(DemoCommand.simulationHeapBytes(DemoCommand.SIM_HIDDEN, DemoCommand.SIM_FFN,
                DemoCommand.SIM_TOKENS, dev.ubuf.layers.tp.Activation.GELU) < 10_000_000L);
        assertTrue(DemoCommand.simulationHeapBytes(1L << 40, 1L << 40, 1L << 40,
                dev.ubuf.layers.tp.Activation.SWIGLU) > Long.MAX_VALUE, "no overflow into a small number");
    }

    @Test
    void everyNewOptionIsCheckedBeforeAnyWorkWithOneSentenceNamingIt() {
        String[][] bad = {
                {"--layers", "0"}, {"--layers", "65"}, {"--iters", "0"}, {"--warmup", "-1"}, {"--lr", "0"},
                {"--lr", "-0.5"}, {"--lr", "NaN"}, {"--dtype", "fp64"}, {"--config", "no/such/ub.yaml"},
                {"--num-replicas", "0"}, {"--tp", "1"}, {"--tp", "9"}, {"--ffn", "129"}, {"--hidden", "0"},
                {"--tokens", "0"}, {"--steps-per-sample", "0"}, {"--steps-per-sample", "65"}};
        for (String[] b : bad) {
            Ubuf r = Ubuf.run("demo", b[0], b[1]);
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains(b[0]), () -> b[0] + " must be named: " + r);
            assertTrue(r.err().lines().filter(l -> !l.isBlank()).count() <= 3, () -> "short, no stack trace: " + r);
            assertTrue(!r.err().contains("Exception"), r::toString);
        }
    }

    @Test
    void theFp8SimulationChecksEveryFp8OpUnderEitherRecipeAndBothPathsMatch(@TempDir Path dir) throws Exception {
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        Path rsDgrad = Files.writeString(dir.resolve("rs_dgrad.yaml"), "ub_overlap_rs_dgrad: true\n");
        String[][] runs = {
                {"demo", "--fp8"},
                {"demo", "--fp8", "--fp8-recipe", "current", "--swiglu", "--tp", "4", "--tokens", "32"},
                {"demo", "--fp8", "--fp8-recipe", "delayed", "--config", rsDgrad.toString(), "--seed", "7"},
                {"demo", "--fp8", "--cuda-graph"}}; // FP8 steps are captured too (on a GPU; ignored here)
        for (String[] args : runs) {
            Ubuf r = Ubuf.run(args);
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("SIMULATION") && r.out().contains("FP8 emulated on the host"), r::toString);
            assertTrue(r.out().contains("overlapped and unoverlapped paths match"), r::toString);
            // fc1 fprop in E4M3 x E4M3, fc2 dgrad with E5M2 gradients (the hybrid format), both checked over steps.
            assertTrue(r.out().contains("matches over 3 steps of the recipe (fp8e4m3xfp8e4m3)"), r::toString);
            assertTrue(r.out().contains("matches over 3 steps of the recipe (fp8e5m2xfp8e4m3)"), r::toString);
            assertTrue(r.out().contains(args.length > 3 && args[3].equals("current") ? "fp8_recipe=current"
                    : "fp8_recipe=delayed"), r::toString);
        }
    }

    @Test
    void fp8OptionsAreCheckedUpFrontNamingTheOption() {
        String[][] bad = {
                {"--fp8-recipe", "current"}, {"--fp8", "--fp8-recipe", "lazy"}, {"--compare-bf16"},
                {"--fp8", "--tokens", "40"}, {"--fp8", "--tp", "4", "--ffn", "96"}, {"--fp8", "--hidden", "72"}};
        String[] named = {"--fp8-recipe", "--fp8-recipe", "--compare-bf16", "--tokens", "--fp8", "--fp8"};
        for (int i = 0; i < bad.length; i++) {
            String[] args = new String[bad[i].length + 1];
            args[0] = "demo";
            System.arraycopy(bad[i], 0, args, 1, bad[i].length);
            Ubuf r = Ubuf.run(args);
            String option = named[i];
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains(option), () -> option + " must be named: " + r);
            assertTrue(!r.err().contains("Exception"), r::toString);
        }
    }

    @Test
    void replicasWithoutAGpuAreRejectedBeforeTheSimulation() {
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        Ubuf dp = Ubuf.run("demo", "--num-replicas", "2");
        assertEquals(2, dp.exitCode(), dp::toString);
        assertTrue(dp.err().contains("--num-replicas") && dp.err().contains("no GPU is visible")
                && dp.err().contains("one TP group"), dp::toString);
        assertTrue(!dp.out().contains("SIMULATION"), dp::toString);
    }

    @Test
    void theReplicasAndTheTpGroupMustFitTheVisibleGpus() {
        assertEquals(2, DemoCommand.tpRanks(1, null, 0), "the simulation's default");
        assertEquals(4, DemoCommand.tpRanks(1, 4, 0));
        assertEquals(4, DemoCommand.tpRanks(1, null, 4), "every GPU by default");
        assertEquals(2, DemoCommand.tpRanks(2, null, 4), "GPUs / R by default");
        assertEquals(2, DemoCommand.tpRanks(2, 2, 4));
        assertEquals(2, DemoCommand.tpRanks(2, 2, 8), "fewer GPUs than visible is fine");
        assertEquals(4, DemoCommand.tpRanks(2, null, 8));
        assertEquals(8, DemoCommand.tpRanks(2, null, 16));
        String[][] bad = {
                // replicas, tp ("" = not given), GPUs, what the message must say
                {"0", "2", "4", "--num-replicas must be at least 1, got 0"},
                {"-1", "", "0", "--num-replicas must be at least 1"},
                {"2", "2", "0", "no GPU is visible"},
                {"2", "", "0", "no GPU is visible"},
                {"2", "2", "2", "--num-replicas: 2 x --tp 2 = 4 GPUs, but 2 are visible"},
                {"2", "4", "4", "--num-replicas: 2 x --tp 4 = 8 GPUs, but 4 are visible"},
                {"3", "", "4", "leave 1 per TP group"},
                {"2", "", "2", "leave 1 per TP group"},
                {"1", "1", "4", "--tp must be 2..8, got 1"},
                {"1", "", "16", "--tp must be 2..8, got 16 (the visible GPUs / --num-replicas: give --tp)"},
        };
        for (String[] b : bad) {
            Integer tp = b[1].isEmpty() ? null : Integer.valueOf(b[1]);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> DemoCommand.tpRanks(Integer.parseInt(b[0]), tp, Integer.parseInt(b[2])),
                    () -> String.join(",", b));
            assertTrue(e.getMessage().contains(b[3]), () -> String.join(",", b) + ": " + e.getMessage());
            assertTrue(e.getMessage().startsWith("--"), "names the option first: " + e.getMessage());
        }
    }

    @Test
    void theHelpNamesEveryOptionWithItsDefault() {
        Ubuf r = Ubuf.run("demo", "--help");
        assertEquals(0, r.exitCode(), r::toString);
        for (String o : new String[]{"--hidden", "--ffn", "--swiglu", "--tokens", "--layers", "--iters", "--warmup",
                "--dtype", "--config", "--no-comm-overlap", "--lr", "--seed", "--out", "--tp", "--num-replicas",
                "--fp8", "--fp8-recipe", "--compare-bf16", "--trace", "--cuda-graph", "--steps-per-sample"}) {
            assertTrue(r.out().contains(o), () -> o + " missing from the help: " + r);
        }
        assertTrue(r.out().contains("default: 10") && r.out().contains("default: 1)"), r::toString);
    }

    @Test
    void aBadTracePathIsRejectedBeforeAnyWork(@TempDir Path dir) throws Exception {
        Path notAFolder = Files.writeString(dir.resolve("file"), "x");
        String[][] bad = {
                {dir.resolve("trace.txt").toString(), ".json"},
                {dir.resolve(".json").toString(), ".json"},
                {notAFolder.resolve("trace.json").toString(), "cannot create its folder"},
                {dir.toString(), ".json"}};
        for (String[] b : bad) {
            // --layers 0 is refused after the trace check: only a trace check can name --trace here.
            Ubuf r = Ubuf.run("demo", "--trace", b[0], "--layers", "0");
            assertEquals(2, r.exitCode(), r::toString);
            assertTrue(r.err().contains("--trace") && r.err().contains(b[1]), () -> b[0] + ": " + r);
            assertTrue(!r.err().contains("Exception"), r::toString);
        }
        assertEquals(List.of(notAFolder), Files.list(dir).toList(), "the checks leave nothing behind");
    }

    @Test
    void theTraceFileNamesItsPngBesideIt() {
        assertEquals(Path.of("a/b/step.png"), DemoCommand.pngOf(Path.of("a/b/step.json")));
        assertEquals(Path.of("step.trace.png"), DemoCommand.pngOf(Path.of("step.trace.JSON")));
        assertNull(DemoCommand.pngOf(Path.of("step.png")));
        assertNull(DemoCommand.pngOf(Path.of("json")));
    }

    @Test
    void theSimulationSaysItWritesNoTrace(@TempDir Path dir) {
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        Path trace = dir.resolve("t/trace.json");
        Ubuf r = Ubuf.run("demo", "--trace", trace.toString(), "--cuda-graph");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--trace needs a GPU"), r::toString);
        assertTrue(r.err().contains("--cuda-graph needs a GPU"), r::toString);
        assertTrue(!Files.exists(trace) && !Files.exists(dir.resolve("t/trace.png")), r::toString);
    }

    @Test
    void aTraceWithReplicasWithoutAGpuIsRefusedForTheReplicasAndWritesNothing(@TempDir Path dir) throws Exception {
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        Ubuf r = Ubuf.run("demo", "--trace", dir.resolve("trace.json").toString(), "--num-replicas", "2");
        assertEquals(2, r.exitCode(), r::toString);
        assertTrue(r.err().contains("--num-replicas") && r.err().contains("no GPU is visible"), r::toString);
        assertEquals(List.of(), Files.list(dir).toList(), "the checks leave nothing behind");
    }

    /** A traced step of one rank with one GEMM span. */
    private static StepTrace oneGemmStep() {
        return new StepTrace("step", Map.of("tp", 2), List.of(new RankTrace(0, List.of("caller"),
                List.of(new Span("caller", "gemm", SpanKind.GEMM, 1, 5, null)))));
    }

    @Test
    void aTimelineThatCannotBeDrawnIsAWarningAfterTheTraceIsWritten(@TempDir Path dir) throws Exception {
        StepTrace t = oneGemmStep();
        Path json = dir.resolve("step.json");
        Path png = dir.resolve("step.png");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        // What AWT threw on GPU nodes without fontconfig.
        boolean drawn = DemoCommand.writeTrace(t, json, png, "the traced step", new PrintWriter(out),
                new PrintWriter(err), () -> {
                    throw new RuntimeException("Fontconfig head is null, check your fonts or fonts configuration");
                });
        String all = "--- stdout\n" + out + "\n--- stderr\n" + err;
        assertTrue(!drawn && !Files.exists(png), all);
        assertEquals(1, new ObjectMapper().readTree(json.toFile()).path("traceEvents").findValues("ph").stream()
                .filter(p -> p.asText().equals("X")).count(), all);
        assertTrue(out.toString().contains("wrote the traced step to " + json), all);
        assertTrue(err.toString().startsWith("ubuf demo: warning: could not draw " + png + ": ")
                && err.toString().contains("Fontconfig head is null"), all);
    }

    @Test
    void theTraceAndItsTimelineAreBothWritten(@TempDir Path dir) throws Exception {
        StepTrace t = oneGemmStep();
        Path json = dir.resolve("step.json");
        Path png = dir.resolve("step.png");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        assertTrue(DemoCommand.writeTrace(t, json, png, "the traced step", new PrintWriter(out), new PrintWriter(err),
                () -> dev.ubuf.bench.TimelineChart.write(t, png, DemoCommand.TRACE_PNG_WIDTH)), err::toString);
        assertTrue(Files.size(json) > 0 && Files.size(png) > 1000, out::toString);
        assertEquals("", err.toString());
        assertTrue(out.toString().contains("wrote its PNG timeline to " + png), out::toString);
    }

    @Test
    void throughPipesTheSimulationPrintsWholeLinesAndNoProgressBar() {
        // With a GPU `ubuf demo` trains a Llama-sized block instead (DemoGpuTest reads its output).
        assumeTrue(gpus() == 0, "a GPU is visible: the demo runs its GPU path, not the simulation");
        ChildJvm r = ChildJvm.run(Map.of(), List.of(), UbufCli.class, "demo");
        assertEquals(0, r.exitCode(), r::toString);
        assertTrue(r.out().startsWith("SIMULATION") && r.out().endsWith("paths match on every rank\n"),
                r::toString);
        for (String s : List.of(r.out(), r.err())) {
            assertTrue(s.indexOf('\r') < 0 && s.indexOf('\u001b') < 0, () -> "a progress bar's redraws: " + r);
        }
        assertEquals("", r.err(), r::toString);
    }

    private static int gpus() {
        try {
            return Cuda.deviceCount();
        } catch (RuntimeException | LinkageError e) {
            return 0;
        }
    }
}
