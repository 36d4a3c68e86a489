package dev.ubuf.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.atomic.AtomicGemmKernel;
import dev.ubuf.atomic.AtomicGemmKernel.Hooks;
import dev.ubuf.atomic.ArrivalTimeoutException;
import dev.ubuf.atomic.AtomicGemmConfig;
import dev.ubuf.atomic.BLayout;
import dev.ubuf.atomic.TileConfig;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The atomic GEMM (sm_90a) computes alpha · A · B + beta · D for ragged shapes, both B layouts and both outputs, within
 * the error bound of fp32 accumulation and the output's rounding of a float64 reference; its arrival wait holds
 * tiles back until their chunk's counter is set, expires into a readable error instead of a hang, and its done
 * counters reach the call's value for every chunk. Every tile configuration (TileConfig: 128x256 and the narrower
 * ones the launcher selects for tile-starved shapes), cooperative and ping-pong (64-row tiles, the two consumer
 * warpgroups taking a CTA's tiles in turn), is checked the same way, both hooks included, and so is split-K
 * (AtomicGemmConfig: partial tiles in a workspace, the last unit of a tile reduces them in split order), which must
 * also give bitwise the same result launch after launch and leave its semaphores ready after an expired wait.
 */
class AtomicGemmGpuTest {
    static CudaContext ctx;
    static CudaStream stream;
    static KernelLibrary lib;
    static DeviceKernels kernels;
    static AtomicGemmKernel gemm;

    @BeforeAll
    static void open() {
        Gpu.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        int cc = ctx.device().computeCapability();
        if (cc != 90) {
            ctx.close();
            ctx = null;
            assumeTrue(false, "the atomic GEMM needs compute capability 9.0 (H100/H200); GPU 0 has " + cc);
        }
        stream = ctx.createStream(StreamPriority.NORMAL);
        lib = KernelLibrary.load(ctx);
        kernels = new DeviceKernels(lib);
        gemm = AtomicGemmKernel.load(ctx);
    }

    /** The kernel object lives for the class; the split-K scratch a test's launches grew is that test's to free. */
    @AfterEach
    void releaseScratch() {
        if (gemm != null) {
            ctx.synchronize(); // every launch of the test has finished, on whichever stream
            gemm.releaseScratch();
        }
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            gemm.close();
            lib.close();
            stream.close();
            assertEquals(List.of(), ctx.ledger().openResources(), "everything the tests opened is closed");
            ctx.close();
        }
    }

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        int[][] shapes = {{1, 1, 16}, {100, 200, 64}, {129, 264, 72}, {300, 520, 1000}, {1000, 1000, 1000},
                {256, 512, 8}, {640, 768, 640}};
        for (int[] s : shapes) {
            for (BLayout layout : BLayout.values()) {
                if (layout == BLayout.KN && s[1] % 8 != 0) {
                    continue; // row-major B needs 16-byte rows (AtomicGemmValidationTest checks the rejection)
                }
                for (DType out : new DType[]{DType.BF16, DType.FP32}) {
                    a.add(Arguments.of(DType.BF16, layout, out, s[0], s[1], s[2], 1f, 0f));
                }
            }
        }
        a.add(Arguments.of(DType.BF16, BLayout.NK, DType.FP32, 333, 264, 200, 0.5f, 2f));
        a.add(Arguments.of(DType.BF16, BLayout.KN, DType.BF16, 200, 512, 136, -1.5f, 0.25f));
        a.add(Arguments.of(DType.FP16, BLayout.NK, DType.FP32, 300, 400, 256, 1f, 1f));
        a.add(Arguments.of(DType.FP16, BLayout.KN, DType.BF16, 128, 256, 64, 2f, 0f));
        return a.stream();
    }

    @ParameterizedTest(name = "{0} {1} -> {2} {3}x{4}x{5} alpha={6} beta={7}")
    @MethodSource("cases")
    void productMatchesFloat64ReferenceWithinAccumulationAndRoundingBounds(DType in, BLayout layout, DType out,
                                                                           int m, int n, int k, float alpha,
                                                                           float beta) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, in, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, in, 1f);
        float[] old = HostTensors.random(rnd, (long) m * n, out, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * in.bytes());
             DeviceBuffer db = ctx.allocate((long) k * n * in.bytes());
             DeviceBuffer dd = ctx.allocate((long) m * n * out.bytes())) {
            TensorView av = TensorView.of(da, m, k, in);
            TensorView bv = layout == BLayout.NK ? TensorView.of(db, n, k, in) : TensorView.of(db, k, n, in);
            TensorView dv = TensorView.of(dd, m, n, out);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            if (beta != 0f) {
                HostTensors.upload(ctx, stream, old, dv);
            } else {
                kernels.poison(dv, stream); // NaN: beta = 0 must not read D
            }
            gemm.launch(av, bv, layout, dv, alpha, beta, stream);
            stream.synchronize();
            gemm.checkErrors();
            float[] got = HostTensors.download(ctx, stream, dv);
            assertWithinBounds(got, a, b, beta != 0f ? old : null, m, n, k, layout, alpha, beta, out,
                    "seed " + seed);
        }
    }

    /**
     * Every element: |got − ref| ≤ |alpha| Σ|a||b| (k + 64) 2^-22 (fp32 accumulation, generous for the tensor
     * cores' internal order) + |beta · old| 2^-23, plus the output's rounding of the result (2^-8 relative for bf16).
     */
    static void assertWithinBounds(float[] got, float[] a, float[] b, float[] old, int m, int n, int k,
                                   BLayout layout, float alpha, float beta, DType out, String context) {
        double unitOut = out == DType.BF16 ? 0x1p-8 : 0x1p-23;
        double[] bt = new double[n * k]; // B as [N, K] whatever its layout, for a unit-stride inner loop
        for (int kk = 0; kk < k; kk++) {
            for (int j = 0; j < n; j++) {
                bt[j * k + kk] = layout == BLayout.NK ? b[j * k + kk] : b[kk * n + j];
            }
        }
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double dot = 0;
                double abs = 0;
                for (int kk = 0; kk < k; kk++) {
                    double p = (double) a[i * k + kk] * bt[j * k + kk];
                    dot += p;
                    abs += Math.abs(p);
                }
                double ref = alpha * dot + (old == null ? 0 : beta * (double) old[i * n + j]);
                double bound = Math.abs(alpha) * abs * (k + 64) * 0x1p-22
                        + (old == null ? 0 : Math.abs(beta * (double) old[i * n + j]) * 0x1p-23);
                bound += unitOut * (Math.abs(ref) + bound);
                float g = got[i * n + j];
                assertTrue(Math.abs(g - ref) <= bound, "D[" + i + "][" + j + "] = " + g + ", float64 reference " + ref
                        + " (bound " + bound + "), " + context);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("largeCases")
    void largeProductMatchesCublasLt(BLayout layout, AtomicGemmConfig.Schedule schedule) {
        int m = 4096;
        int n = 4096;
        int k = 4096;
        long seed = System.nanoTime();
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2);
             DeviceBuffer db = ctx.allocate((long) k * n * 2);
             DeviceBuffer dOurs = ctx.allocate((long) m * n * 4);
             DeviceBuffer dTheirs = ctx.allocate((long) m * n * 4);
             Gemm cublas = new Gemm(ctx)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = layout == BLayout.NK ? TensorView.of(db, n, k, DType.BF16)
                    : TensorView.of(db, k, n, DType.BF16);
            TensorView ours = TensorView.of(dOurs, m, n, DType.FP32);
            TensorView theirs = TensorView.of(dTheirs, m, n, DType.FP32);
            kernels.fillRandom(av, seed, 1f, stream);
            kernels.fillRandom(bv, seed + 1, 1f, stream);
            kernels.poison(ours, stream);
            kernels.poison(theirs, stream);
            // The rule's configuration for the schedule: ping-pong runs 1024 tiles, about 8 per CTA, in turn.
            gemm.launch(av, bv, layout, ours, 1f, 0f, 1, 0, Hooks.NONE, gemm.select(m, n, k, 1, layout, schedule),
                    stream);
            cublas.multiply(av, bv, theirs, 1f, 0f, new Gemm.Options(false, layout == BLayout.NK, 0, false), stream);
            stream.synchronize();
            gemm.checkErrors();
            float[] x = HostTensors.download(ctx, stream, ours);
            float[] y = HostTensors.download(ctx, stream, theirs);
            // Both are fp32-accumulated sums of the same 4096 exact products (|a|, |b| ≤ 1): each is within
            // 4096 · (4096 + 64) · 2^-22 ≈ 4 of the exact value at worst; a layout or tiling bug is off by O(|value|)
            // for many elements, which the relative Frobenius distance (fp32 accumulation: about 1e-6) shows.
            double diff = 0;
            double norm = 0;
            for (int i = 0; i < x.length; i++) {
                assertTrue(Float.isFinite(x[i]), "element " + i + " is " + x[i] + " (seed " + seed + ")");
                assertTrue(Math.abs(x[i] - y[i]) <= 2.0 * k * (k + 64) * 0x1p-22,
                        "element " + i + ": " + x[i] + " vs cuBLASLt " + y[i] + " (seed " + seed + ")");
                diff += (double) (x[i] - y[i]) * (x[i] - y[i]);
                norm += (double) y[i] * y[i];
            }
            assertTrue(Math.sqrt(diff / norm) < 1e-5, "relative Frobenius distance to cuBLASLt "
                    + Math.sqrt(diff / norm) + " (seed " + seed + ")");
        }
    }

    static Stream<Arguments> largeCases() {
        List<Arguments> a = new ArrayList<>();
        for (BLayout layout : BLayout.values()) {
            for (AtomicGemmConfig.Schedule schedule : AtomicGemmConfig.Schedule.values()) {
                a.add(Arguments.of(layout, schedule));
            }
        }
        return a.stream();
    }

    /** Runs a 1024x512x256 GEMM in 4 chunks with the given hooks; returns A, B and the device buffers' contents. */
    record ChunkedRun(float[] a, float[] b, float[] d) {
    }

    static ChunkedRun chunked(SplittableRandom rnd, int[] arrival, Hooks hooksTemplate, DeviceBuffer counters,
                              DeviceBuffer done, int[] doneOut) {
        return chunked(rnd, arrival, hooksTemplate, counters, done, doneOut, TileConfig.N256);
    }

    static ChunkedRun chunked(SplittableRandom rnd, int[] arrival, Hooks hooksTemplate, DeviceBuffer counters,
                              DeviceBuffer done, int[] doneOut, TileConfig config) {
        return chunked(rnd, arrival, hooksTemplate, counters, done, doneOut, AtomicGemmConfig.of(config));
    }

    static ChunkedRun chunked(SplittableRandom rnd, int[] arrival, Hooks hooksTemplate, DeviceBuffer counters,
                              DeviceBuffer done, int[] doneOut, AtomicGemmConfig config) {
        int m = 1024;
        int n = 512;
        int k = 256;
        int chunks = 4;
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) n * k, DType.BF16, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2);
             DeviceBuffer db = ctx.allocate((long) n * k * 2);
             DeviceBuffer dd = ctx.allocate((long) m * n * 4)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, n, k, DType.BF16);
            TensorView dv = TensorView.of(dd, m, n, DType.FP32);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            kernels.poison(dv, stream);
            for (int c = 0; c < chunks; c++) {
                stream.fill32(counters.address() + 4L * c, arrival[c], 1);
            }
            stream.fill32(done.address(), 0, chunks);
            Hooks hooks = new Hooks(counters.address(), hooksTemplate.arrivalValue(), hooksTemplate.timeout(),
                    done.address(), hooksTemplate.doneValue());
            gemm.launch(av, bv, BLayout.NK, dv, 1f, 0f, chunks, 2, hooks, config, stream);
            stream.synchronize();
            for (int c = 0; c < chunks; c++) {
                doneOut[c] = ctx.readInt32(done.address() + 4L * c);
            }
            return new ChunkedRun(a, b, HostTensors.download(ctx, stream, dv));
        }
    }

    @Test
    void arrivedChunksGiveTheFullProductAndEveryChunkIsMarkedDone() {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        try (DeviceBuffer counters = ctx.allocate(16); DeviceBuffer done = ctx.allocate(16)) {
            int[] doneValues = new int[4];
            Hooks hooks = new Hooks(0, 7, Duration.ofMillis(200), 0, 11);
            ChunkedRun run = chunked(rnd, new int[]{7, 7, 8, 7}, hooks, counters, done, doneValues);
            assertEquals(Optional.empty(), gemm.error(c -> "rank " + c).map(Throwable::getMessage));
            assertWithinBounds(run.d(), run.a(), run.b(), null, 1024, 512, 256, BLayout.NK, 1f, 0f, DType.FP32,
                    "seed " + seed);
            for (int c = 0; c < 4; c++) {
                assertEquals(11, doneValues[c], "done counter of chunk " + c);
            }
        }
    }

    @Test
    void aChunkThatNeverArrivesExpiresIntoAnErrorNamingItAndTheNextLaunchWorks() {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        try (DeviceBuffer counters = ctx.allocate(16); DeviceBuffer done = ctx.allocate(16)) {
            int[] doneValues = new int[4];
            Hooks hooks = new Hooks(0, 5, Duration.ofMillis(200), 0, 9);
            long start = System.nanoTime();
            chunked(rnd, new int[]{5, 5, 5, 4}, hooks, counters, done, doneValues);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            Optional<ArrivalTimeoutException> error = gemm.error(c -> "rank " + c);
            assertTrue(error.isPresent(), "the wait for chunk 3 expired");
            assertEquals(3, error.get().chunk());
            assertEquals(5, error.get().expected());
            assertEquals(4, error.get().observed());
            assertTrue(error.get().getMessage().contains("chunk 3 (from rank 3)"), error.get().getMessage());
            assertTrue(tookMs < 10_000, "the expired wait ended the kernel promptly (" + tookMs + " ms)");
            assertEquals(0, doneValues[3], "the chunk that never arrived is not marked done");

            ChunkedRun again = chunked(rnd, new int[]{5, 5, 5, 5}, hooks, counters, done, doneValues);
            gemm.checkErrors();
            assertWithinBounds(again.d(), again.a(), again.b(), null, 1024, 512, 256, BLayout.NK, 1f, 0f,
                    DType.FP32, "seed " + seed);
            for (int c = 0; c < 4; c++) {
                assertEquals(9, doneValues[c], "done counter of chunk " + c + " after the recovered launch");
            }
        }
    }

    /** Every tile configuration: cooperative, ping-pong and clustered cooperative. */
    static List<AtomicGemmConfig> unsplitConfigs() {
        List<AtomicGemmConfig> c = new ArrayList<>();
        for (TileConfig tile : TileConfig.values()) {
            c.add(AtomicGemmConfig.of(tile));
            c.add(AtomicGemmConfig.pingPong(tile));
            c.add(AtomicGemmConfig.cooperativeCluster(tile));
        }
        return c;
    }

    /**
     * Every tile configuration, cooperative and ping-pong, with every B layout it has, on shapes that are and are not
     * multiples of its tile. Ping-pong adds shapes with more 64-row tiles than a grid of 132 CTAs has: 4000 rows in 5
     * chunks of 800 (13 row tiles, the last of 32 rows) with K of two steps, where a CTA takes up to 3 tiles, its
     * warpgroups in turn, and the ring laps several times; 3200 rows with K of 5 steps (the last ragged), where some CTAs
     * run a second tile on their other warpgroup.
     */
    static Stream<Arguments> tileCases() {
        List<Arguments> a = new ArrayList<>();
        for (AtomicGemmConfig config : unsplitConfigs()) {
            int w = config.tile().tileN();
            for (BLayout layout : BLayout.values()) {
                if (!config.tile().supports(layout)) {
                    continue;
                }
                if (config.schedule().pingPong()) {
                    a.add(Arguments.of(config, layout, DType.BF16, DType.BF16, 4000, 4 * w + 8, 72, 5, 1f, 0f));
                    a.add(Arguments.of(config, layout, DType.FP16, DType.FP32, 3200, 3 * w - 8, 264, 1, 0.5f, -1f));
                }
                // {m, n, k, chunks}: ragged in M (chunks of 100 rows), N (3 tiles and 40 columns) and K (200);
                // one column short of a tile, one row past one, K one step and a bit; exact multiples in 2 chunks.
                a.add(Arguments.of(config, layout, DType.BF16, DType.BF16, 300, 3 * w + 40, 200, 3, 1f, 0f));
                a.add(Arguments.of(config, layout, DType.FP16, DType.FP32, 129, w - 8, 72, 1, -1.5f, 0.5f));
                a.add(Arguments.of(config, layout, DType.BF16, DType.FP32, 256, 2 * w, 128, 2, 0.75f, 0f));
                a.add(Arguments.of(config, layout, DType.FP16, DType.BF16, 1024, 5 * w + 8, 136, 4, 1f, 1f));
            }
        }
        return a.stream();
    }

    /**
     * Each tile configuration launched explicitly, with both hooks: every chunk's arrival counter already at (or
     * past) the value, so no wait expires; fresh random inputs, D poisoned (beta = 0) or random (beta != 0); every
     * element against the float64 reference; every chunk's done counter raised to the call's value.
     */
    @ParameterizedTest(name = "{0} {1} {2} -> {3} {4}x{5}x{6} chunks={7} alpha={8} beta={9}")
    @MethodSource("tileCases")
    void everyTileConfigurationMatchesFloat64ReferenceWithBothHooks(AtomicGemmConfig config, BLayout layout, DType in,
                                                                    DType out, int m, int n, int k, int chunks,
                                                                    float alpha, float beta) {
        matchesFloat64ReferenceWithBothHooks(config, layout, in, out, m, n, k, chunks, alpha, beta);
    }

    /**
     * One launch with both hooks (every chunk arrived at or past the expected count, the last chunk first) matches its
     * float64 reference within the accumulation and rounding bounds, and raises every chunk's done counter.
     */
    private void matchesFloat64ReferenceWithBothHooks(AtomicGemmConfig config, BLayout layout, DType in, DType out,
                                                      int m, int n, int k, int chunks, float alpha, float beta) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, in, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, in, 1f);
        float[] old = HostTensors.random(rnd, (long) m * n, out, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * in.bytes());
             DeviceBuffer db = ctx.allocate((long) k * n * in.bytes());
             DeviceBuffer dd = ctx.allocate((long) m * n * out.bytes());
             DeviceBuffer arrival = ctx.allocate(4L * chunks);
             DeviceBuffer done = ctx.allocate(4L * chunks)) {
            TensorView av = TensorView.of(da, m, k, in);
            TensorView bv = layout == BLayout.NK ? TensorView.of(db, n, k, in) : TensorView.of(db, k, n, in);
            TensorView dv = TensorView.of(dd, m, n, out);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            if (beta != 0f) {
                HostTensors.upload(ctx, stream, old, dv);
            } else {
                kernels.poison(dv, stream);
            }
            for (int c = 0; c < chunks; c++) {
                stream.fill32(arrival.address() + 4L * c, 40 + c % 2, 1); // at or past the expected 40
            }
            stream.fill32(done.address(), 0, chunks);
            Hooks hooks = new Hooks(arrival.address(), 40, Duration.ofSeconds(2), done.address(), 17);
            int first = chunks - 1;
            gemm.launch(av, bv, layout, dv, alpha, beta, chunks, first, hooks, config, stream);
            stream.synchronize();
            gemm.checkErrors();
            float[] got = HostTensors.download(ctx, stream, dv);
            assertWithinBounds(got, a, b, beta != 0f ? old : null, m, n, k, layout, alpha, beta, out,
                    config + ", seed " + seed);
            for (int c = 0; c < chunks; c++) {
                assertEquals(17, ctx.readInt32(done.address() + 4L * c), "done counter of chunk " + c + ", " + config);
            }
        }
    }

    /** Each tile configuration's arrival wait expires into the error slot and leaves the expired chunk not done. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("configs")
    void everyTileConfigurationReportsAnExpiredWaitAndRecovers(AtomicGemmConfig config) {
        reportsAnExpiredWaitAndRecovers(config, new int[]{5, 4, 5, 5}, 1, new int[]{5, 5, 6, 5});
    }

    /**
     * Chunk {@code stalled} arrives short ({@code arrivals}; every chunk is expected at 5): the wait expires into the
     * error slot with that chunk and what it observed, and the chunk is not marked done; the next launch
     * ({@code arrivalsAgain}, all at or past 5) is exact and marks every chunk done.
     */
    private void reportsAnExpiredWaitAndRecovers(AtomicGemmConfig config, int[] arrivals, int stalled,
                                                 int[] arrivalsAgain) {
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        try (DeviceBuffer counters = ctx.allocate(16); DeviceBuffer done = ctx.allocate(16)) {
            int[] doneValues = new int[4];
            Hooks hooks = new Hooks(0, 5, Duration.ofMillis(200), 0, 9);
            chunked(rnd, arrivals, hooks, counters, done, doneValues, config);
            Optional<ArrivalTimeoutException> error = gemm.error(c -> "rank " + c);
            assertTrue(error.isPresent(), "the wait for chunk " + stalled + " expired, " + config);
            assertEquals(stalled, error.get().chunk());
            assertEquals(arrivals[stalled], error.get().observed());
            assertEquals(0, doneValues[stalled], "the chunk that never arrived is not marked done, " + config);

            ChunkedRun again = chunked(rnd, arrivalsAgain, hooks, counters, done, doneValues, config);
            gemm.checkErrors();
            assertWithinBounds(again.d(), again.a(), again.b(), null, 1024, 512, 256, BLayout.NK, 1f, 0f,
                    DType.FP32, config + ", seed " + seed);
            for (int c = 0; c < 4; c++) {
                assertEquals(9, doneValues[c], "done counter of chunk " + c + ", " + config);
            }
        }
    }

    static Stream<AtomicGemmConfig> configs() {
        return unsplitConfigs().stream();
    }

    /** The launcher's own choice for a tile-starved shape runs the narrower tile and is exact too. */
    @Test
    void selectedConfigurationForATileStarvedShapeIsUsedAndCorrect() {
        int m = 1024;
        int n = 3072;
        int k = 64;
        TileConfig chosen = gemm.select(m, n, 1, BLayout.NK);
        if (gemm.multiprocessors() == 132) {
            assertEquals(TileConfig.N192, chosen, "96 tiles of 128x256 on 132 SMs: 128x192 fills one wave");
        }
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, DType.BF16, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2);
             DeviceBuffer db = ctx.allocate((long) k * n * 2);
             DeviceBuffer dd = ctx.allocate((long) m * n * 2)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, n, k, DType.BF16);
            TensorView dv = TensorView.of(dd, m, n, DType.BF16);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            kernels.poison(dv, stream);
            gemm.launch(av, bv, BLayout.NK, dv, 1f, 0f, stream);
            stream.synchronize();
            gemm.checkErrors();
            assertWithinBounds(HostTensors.download(ctx, stream, dv), a, b, null, m, n, k, BLayout.NK, 1f, 0f,
                    DType.BF16, chosen + ", seed " + seed);
        }
    }

    /**
     * Split-K cases: every tile configuration and B layout it has, 2 to 8 splits (never more than K's steps), ragged
     * M (chunks of 100 rows), N and K, both inputs, both outputs, alpha and beta, with both hooks.
     */
    static Stream<Arguments> splitCases() {
        List<Arguments> a = new ArrayList<>();
        for (TileConfig config : TileConfig.values()) {
            int w = config.tileN();
            for (BLayout layout : BLayout.values()) {
                if (!config.supports(layout)) {
                    continue;
                }
                // {m, n, k, chunks, splits}: K = 1000 is 16 steps (ranges of 2 and 3 with 7 splits); K = 200 is 4
                // steps, 4 splits of one step each (the last one ragged); K = 4096 with few tiles, the rule's case.
                a.add(Arguments.of(config, layout, DType.BF16, DType.BF16, 300, 3 * w + 40, 1000, 3, 7, 1f, 0f));
                a.add(Arguments.of(config, layout, DType.FP16, DType.FP32, 129, w - 8, 200, 1, 4, -1.5f, 0.5f));
                a.add(Arguments.of(config, layout, DType.BF16, DType.FP32, 256, 2 * w, 640, 2, 2, 0.75f, 0f));
                a.add(Arguments.of(config, layout, DType.FP16, DType.BF16, 400, w + 8, 4096, 4, 8, 1f, 1f));
                a.add(Arguments.of(config, layout, DType.BF16, DType.FP32, 64, 2 * w, 4096, 1, 5, 1f, 0f));
            }
        }
        return a.stream();
    }

    @ParameterizedTest(name = "{0} split {8} {1} {2} -> {3} {4}x{5}x{6} chunks={7} alpha={9} beta={10}")
    @MethodSource("splitCases")
    void splitKMatchesFloat64ReferenceWithBothHooks(TileConfig tile, BLayout layout, DType in, DType out, int m,
                                                    int n, int k, int chunks, int splits, float alpha, float beta) {
        matchesFloat64ReferenceWithBothHooks(new AtomicGemmConfig(tile, splits), layout, in, out, m, n, k, chunks,
                alpha, beta);
    }

    /**
     * Split-K adds the partials in split order whichever unit finishes last, so launches of one product agree bit
     * for bit (fp32 out shows every bit of the sum). Launches 1 to 3 reuse semaphores an earlier launch left at 0;
     * a larger split launch (another tile width, more tiles and units) after launch 1 grows the workspace and the
     * semaphores, and launches 2 and 3 use what it left.
     */
    @Test
    void splitKIsBitwiseReproducibleAndItsSemaphoresAreReusable() {
        int m = 200;
        int n = 1000;
        int k = 3000;
        AtomicGemmConfig config = new AtomicGemmConfig(TileConfig.N256, 6);
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) n * k, DType.BF16, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2);
             DeviceBuffer db = ctx.allocate((long) n * k * 2);
             DeviceBuffer dd = ctx.allocate((long) m * n * 4);
             DeviceBuffer big = ctx.allocate(1024L * 1024 * 4)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, n, k, DType.BF16);
            TensorView dv = TensorView.of(dd, m, n, DType.FP32);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            float[] first = null;
            for (int run = 0; run < 4; run++) {
                kernels.poison(dv, stream);
                gemm.launch(av, bv, BLayout.NK, dv, 1f, 0f, 1, 0, Hooks.NONE, config, stream);
                stream.synchronize();
                gemm.checkErrors();
                float[] got = HostTensors.download(ctx, stream, dv);
                if (first == null) {
                    assertWithinBounds(got, a, b, null, m, n, k, BLayout.NK, 1f, 0f, DType.FP32,
                            config + ", seed " + seed);
                    first = got;
                } else {
                    assertArrayEquals(first, got, "launch " + run + " differs from the first, seed " + seed);
                }
                if (run == 1) {
                    // A larger split launch (more tiles, more units) between two checked ones.
                    TensorView bigD = TensorView.of(big, 1024, 1024, DType.FP32);
                    TensorView bigA = TensorView.of(da, 1024, 256, DType.BF16);
                    TensorView bigB = TensorView.of(db, 1024, 256, DType.BF16);
                    gemm.launch(bigA, bigB, BLayout.NK, bigD, 1f, 0f, 1, 0, Hooks.NONE,
                            new AtomicGemmConfig(TileConfig.N128, 4), stream);
                }
            }
        }
    }

    /** An expired wait under split-K: reported, the chunk not done; the next split launch is exact and complete. */
    @ParameterizedTest(name = "split {0}")
    @MethodSource("splitCounts")
    void splitKReportsAnExpiredWaitAndRecovers(int splits) {
        reportsAnExpiredWaitAndRecovers(new AtomicGemmConfig(TileConfig.N256, splits), new int[]{5, 5, 4, 5}, 2,
                new int[]{5, 6, 5, 5});
    }

    static Stream<Integer> splitCounts() {
        return Stream.of(2, 3, 4); // the chunked product has K = 256: 4 steps
    }

    /** The launcher's own choice for a tile-starved shape with long K splits K (on 132 SMs) and is exact. */
    @Test
    void selectedSplitKForATileStarvedShapeIsUsedAndCorrect() {
        int m = 128;
        int n = 4096;
        int k = 4096;
        AtomicGemmConfig chosen = gemm.select(m, n, k, 1, BLayout.NK);
        if (gemm.multiprocessors() == 132) {
            assertEquals(new AtomicGemmConfig(TileConfig.N128, 4), chosen, "32 tiles on 132 SMs: 4 splits");
        }
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] a = HostTensors.random(rnd, (long) m * k, DType.BF16, 1f);
        float[] b = HostTensors.random(rnd, (long) k * n, DType.BF16, 1f);
        try (DeviceBuffer da = ctx.allocate((long) m * k * 2);
             DeviceBuffer db = ctx.allocate((long) k * n * 2);
             DeviceBuffer dd = ctx.allocate((long) m * n * 2)) {
            TensorView av = TensorView.of(da, m, k, DType.BF16);
            TensorView bv = TensorView.of(db, n, k, DType.BF16);
            TensorView dv = TensorView.of(dd, m, n, DType.BF16);
            HostTensors.upload(ctx, stream, a, av);
            HostTensors.upload(ctx, stream, b, bv);
            kernels.poison(dv, stream);
            gemm.launch(av, bv, BLayout.NK, dv, 1f, 0f, stream);
            stream.synchronize();
            gemm.checkErrors();
            assertWithinBounds(HostTensors.download(ctx, stream, dv), a, b, null, m, n, k, BLayout.NK, 1f, 0f,
                    DType.BF16, chosen + ", seed " + seed);
        }
    }
}
