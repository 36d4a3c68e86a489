package dev.ubuf.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.GraphCandidateBench;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tuned GEMMs on a GPU: timing the candidates never touches the caller's output (an accumulating GEMM still adds the
 * product exactly once), a kind of GEMM is timed once and its choice reused from the file by a new tuner, and a GEMM
 * first seen while its stream captures a graph runs untimed and is tuned at its next eager run.
 */
class GemmTuningGpuTest {
    static CudaContext ctx;
    static CudaStream stream;

    @TempDir
    Path dir;

    @BeforeAll
    static void open() {
        Gpu.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        stream = ctx.createStream(StreamPriority.NORMAL);
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            stream.close();
            assertEquals(List.of(), ctx.ledger().openResources(), "everything the tests opened is closed");
            ctx.close();
        }
    }

    /** C = C0 + A * B^T in bf16 with fp32 output, checked against float64. */
    private void accumulateAndCheck(Gemm gemm, int m, int n, int k, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) n * k, DType.BF16, 1f);
        float[] c0 = HostTensors.random(rnd, (long) m * n, DType.FP32, 10f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2); DeviceBuffer db = ctx.allocate((long) n * k * 2);
             DeviceBuffer dc = ctx.allocate((long) m * n * 4)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, n, k, DType.BF16);
            TensorView cv = TensorView.of(dc, m, n, DType.FP32);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            HostTensors.upload(ctx, stream, c0, cv);
            gemm.multiply(av, bv, cv, 1f, 1f, Gemm.Options.NT, stream);
            double[] ref = HostTensors.matmul(a, b, m, n, k, false, true);
            for (int i = 0; i < ref.length; i++) {
                ref[i] += c0[i];
            }
            double err = HostTensors.relativeError(HostTensors.download(ctx, stream, cv), ref);
            assertTrue(err < 1e-5, "C0 + A B^T must hold the product once: relative error " + err + " (seed " + seed
                    + ")");
        }
    }

    private static long entries(Path file) throws IOException {
        return Files.readAllLines(file).stream().skip(1).filter(l -> !l.startsWith("#") && !l.isBlank()).count();
    }

    @Test
    void tuningTimesOnScratchOnceAndANewTunerReusesTheFile() throws IOException {
        Path file = dir.resolve("tuning.tsv");
        GemmTuning settings = new GemmTuning(true, file, null);
        GemmTuner tuner = new GemmTuner(settings);
        long seed = System.nanoTime();
        try (Gemm gemm = new Gemm(ctx, tuner)) {
            accumulateAndCheck(gemm, 1024, 768, 512, seed);
            assertEquals(1, tuner.timedCount(), tuner.toString());
            accumulateAndCheck(gemm, 1024, 768, 512, seed + 1);
            assertEquals(1, tuner.timedCount(), "timed once per kind of GEMM: " + tuner);
        }
        assertEquals(1, entries(file), "one line per kind of GEMM in " + file);
        assertTrue(Files.readString(file).contains("m=1024 n=768 k=512"), Files.readString(file));

        GemmTuner nextRun = new GemmTuner(settings);
        try (Gemm gemm = new Gemm(ctx, nextRun)) {
            accumulateAndCheck(gemm, 1024, 768, 512, seed + 2);
        }
        assertEquals(0, nextRun.timedCount(), nextRun.toString());
        assertEquals(1, nextRun.reusedCount(), nextRun.toString());
    }

    @Test
    void retuningWithGraphReplaysKeepsTheOutputAndReplacesTheFilesChoice() throws IOException {
        Path file = dir.resolve("tuning.tsv");
        GemmTuner tuner = new GemmTuner(new GemmTuning(true, file, null));
        int m = 1024, n = 768, k = 512;
        long seed = System.nanoTime();
        try (Gemm gemm = new Gemm(ctx, tuner)) {
            accumulateAndCheck(gemm, m, n, k, seed); // the online tuner's choice, filed
            String before = Files.readString(file);
            try (DeviceBuffer da = ctx.allocate((long) m * k * 2); DeviceBuffer db = ctx.allocate((long) n * k * 2);
                 DeviceBuffer dc = ctx.allocate((long) m * n * 4)) {
                TensorView cv = TensorView.of(dc, m, n, DType.FP32);
                stream.fill32(dc.address(), Float.floatToRawIntBits(Float.NaN), (long) m * n);
                GemmTuner.Retuned r = gemm.retune(TensorView.of(da, m, k, DType.BF16),
                        TensorView.of(db, n, k, DType.BF16), cv, 1f, Gemm.Options.NT,
                        new GraphCandidateBench(ctx, stream, 2, 5, EventTimer.runsPerGraph(m, n, k),
                                java.time.Duration.ofMillis(20)), 0.01);
                assertTrue(r.millis().stream().filter(Double::isFinite).allMatch(x -> x > 0 && x < 100),
                        "every finalist has a plausible time: " + r);
                assertTrue(Double.isFinite(r.millis().get(r.chosen())), "the kept one was timed to the end: " + r);
                float[] untouched = HostTensors.download(ctx, stream, cv);
                for (int i = 0; i < untouched.length; i++) {
                    assertTrue(Float.isNaN(untouched[i]), "the caller's C is never written by the candidates ("
                            + i + ")");
                }
            }
            assertEquals(2, tuner.timedCount(), tuner.toString());
            assertEquals(1, entries(file), "the retuned choice replaced the line: " + Files.readString(file)
                    + "\nbefore:\n" + before);
            accumulateAndCheck(gemm, m, n, k, seed + 1); // runs the retuned choice: still exact
        }
    }

    @Test
    void aGemmFirstSeenWhileCapturingRunsUntimedAndIsTunedLater() {
        GemmTuner tuner = new GemmTuner(new GemmTuning(true, null, null));
        int m = 512, n = 384, k = 256;
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, DType.BF16, 1f);
        try (Gemm gemm = new Gemm(ctx, tuner);
             CudaStream capturing = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer da = ctx.allocate((long) m * k * 2); DeviceBuffer db = ctx.allocate((long) k * n * 2);
             DeviceBuffer dc = ctx.allocate((long) m * n * 2)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, k, n, DType.BF16);
            TensorView cv = TensorView.of(dc, m, n, DType.BF16);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            stream.synchronize();
            capturing.beginCapture();
            gemm.multiply(av, bv, cv, capturing);
            try (CudaGraph graph = capturing.endCapture()) {
                assertEquals(0, tuner.timedCount(), "no timing while a graph is captured");
                graph.launch(capturing);
                capturing.synchronize();
            }
            double[] ref = HostTensors.matmul(a, b, m, n, k, false, false);
            double err = HostTensors.relativeError(HostTensors.download(ctx, stream, cv), ref);
            assertTrue(err < 1e-2, "captured untuned GEMM: relative error " + err + " (seed " + seed + ")");

            gemm.multiply(av, bv, cv, stream);
            assertEquals(1, tuner.timedCount(), "tuned at the first eager run: " + tuner);
            err = HostTensors.relativeError(HostTensors.download(ctx, stream, cv), ref);
            assertTrue(err < 1e-2, "tuned GEMM: relative error " + err + " (seed " + seed + ")");
        }
    }
}
