package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The overlapped ops captured once into a CUDA graph and replayed: every replay, on fresh inputs written into the
 * same buffers, matches the NCCL reference op. Graph-safe ops signal through a device epoch, so the replays' sequence
 * numbers advance although the graph is fixed; an op that is not graph-safe refuses to be captured.
 */
class GraphCaptureGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);
    static final int REPLAYS = 4;

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"ALL_GATHER, ring", "ALL_GATHER, aggregate", "ALL_GATHER, oneshot", "REDUCE_SCATTER, ring",
            "REDUCE_SCATTER, pipeline", "REDUCE_SCATTER, oneshot", "REDUCE_SCATTER, 'scatter:sub=2,lowp=1'",
            "ALL_GATHER, 'fanout:cs=1,free=1'", "REDUCE_SCATTER, 'ring:sub=2,lowp=1,cs=1,fuse=1,free=1'",
            "REDUCE_SCATTER, 'scatter:sub=2,tail=4,lowp=1,fuse=1'"})
    void capturedOpsReplayToTheReferenceAndEagerOnesRefuseCapture(Collective c, String variant) throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2, m = 1536, k = 512, n = 384;
        DType t = DType.BF16;
        OverlapShape shape = c == Collective.ALL_GATHER ? new AgShape(tp, m, k, n, t)
                : new RsShape(tp, m, k, n, t, true);
        ThreadDomain.run(tp, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 DeviceBuffer xb = ctx.allocate(shape.inputRows() * k * 2);
                 DeviceBuffer wb = ctx.allocate((long) k * n * 2);
                 DeviceBuffer bb = ctx.allocate((long) n * 2);
                 DeviceBuffer ob = ctx.allocate(shape.outputRows() * n * 2);
                 DeviceBuffer rb = ctx.allocate(shape.outputRows() * n * 2)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                TensorView x = TensorView.of(xb, shape.inputRows(), k, t);
                TensorView w = TensorView.of(wb, k, n, t);
                TensorView bias = shape.bias() ? TensorView.of(bb, 1, n, t) : null;
                TensorView out = TensorView.of(ob, shape.outputRows(), n, t);
                TensorView ref = TensorView.of(rb, shape.outputRows(), n, t);
                OperandBindings operands = OperandBindings.of(x, w).withOutput(out).withBias(bias);
                Schedule schedule = MethodRegistry.load().schedule(shape, variant);
                try (OverlapOp eager = OverlapOp.create(comm, schedule, kernels, ExecutionSettings.DEFAULT)) {
                    s.beginCapture();
                    try {
                        assertThrows(IllegalStateException.class, () -> eager.forward(operands, s),
                                "an op with host sequence numbers refuses to be captured");
                    } finally {
                        s.endCapture().close();
                    }
                }
                try (OverlapOp op = OverlapOp.create(comm, schedule, kernels,
                        ExecutionSettings.DEFAULT.withGraphSafe(true));
                     OverlapOp reference = OverlapOp.ncclReference(comm, shape, kernels)) {
                    s.beginCapture();
                    op.forward(operands, s);
                    try (CudaGraph graph = s.endCapture()) {
                        for (int replay = 0; replay < REPLAYS; replay++) {
                            long seed = System.nanoTime() + 31L * rank;
                            SplittableRandom rnd = new SplittableRandom(seed);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, shape.inputRows() * k, t, 1f), x);
                            HostTensors.upload(ctx, s, HostTensors.random(rnd, (long) k * n, t, 0.05f), w);
                            if (bias != null) {
                                long biasSeed = ByteBuffer.wrap(boot.broadcast(
                                        ByteBuffer.allocate(8).putLong(seed).array(), 0)).getLong();
                                HostTensors.upload(ctx, s, HostTensors.random(new SplittableRandom(biasSeed), n, t,
                                        1f), bias);
                            }
                            kernels.poison(out, s);
                            kernels.poison(ref, s);
                            s.synchronize();
                            boot.barrier();
                            graph.launch(s);
                            op.await(s);
                            reference.forward(OperandBindings.of(x, w).withOutput(ref).withBias(bias), s);
                            reference.await(s);
                            if (c == Collective.ALL_GATHER) {
                                assertArrayEquals(HostTensors.download(ctx, s, reference.userBuffer()),
                                        HostTensors.download(ctx, s, op.userBuffer()), "gathered input, replay " + replay);
                            }
                            float[] got = HostTensors.download(ctx, s, out);
                            HostTensors.assertAllFinite(got, "replay " + replay);
                            double err = HostTensors.relativeError(got, toDouble(HostTensors.download(ctx, s, ref)));
                            assertTrue(err < 1e-2, "rank " + rank + " replay " + replay + ": error " + err
                                    + " (seed " + seed + ")");
                            boot.barrier();
                        }
                    }
                }
            }
        });
    }

    /**
     * Under graph-safe execution the planner times every candidate as a captured call's replay: each one measured
     * (a finite time), the choice one of them, the same on both ranks.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"ALL_GATHER", "REDUCE_SCATTER"})
    void thePlannerTimesGraphSafeCandidatesAsReplays(Collective c) throws Exception {
        Gpu.assumeGpus(2);
        OverlapShape shape = c == Collective.ALL_GATHER ? new AgShape(2, 2048, 512, 768, DType.BF16)
                : new RsShape(2, 2048, 512, 768, DType.BF16, true);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx)) {
                Planner planner = new Planner(MethodRegistry.load(), PlannerSettings.inMemory());
                ExecutionSettings exec = ExecutionSettings.DEFAULT.withGraphSafe(true);
                List<Candidate> candidates = planner.candidates(shape, ctx.device(), exec);
                Planner.Decision d = planner.measure(comm, shape, new DeviceKernels(lib), exec, candidates);
                assertTrue(candidates.size() > 3, candidates.toString());
                for (Candidate cand : candidates) {
                    Double ms = d.measured().medianMs().get(cand.label());
                    assertTrue(ms != null && ms > 0 && Double.isFinite(ms), cand.label() + ": " + ms);
                }
                assertTrue(candidates.contains(d.chosen()), d.chosen().label());
                String other = new String(boot.broadcast(d.chosen().label().getBytes(
                        java.nio.charset.StandardCharsets.UTF_8), 1), java.nio.charset.StandardCharsets.UTF_8);
                org.junit.jupiter.api.Assertions.assertEquals(other, d.chosen().label(), "rank 1's choice");
            }
        });
    }

    /**
     * {@code ubuf bench ag|rs --cuda-graph}: every method, term and the planner's choice timed as replays, and a record
     * for each saying so; the planner's own replay times recorded beside auto's. What the numbers are is not asserted
     * (no timed assertions), only that each was measured.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"ALL_GATHER", "REDUCE_SCATTER"})
    void theBenchmarkTimesReplays(Collective c, @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        Gpu.assumeGpus(2);
        OverlapShape shape = c == Collective.ALL_GATHER ? new AgShape(2, 2048, 512, 768, DType.BF16)
                : new RsShape(2, 2048, 512, 768, DType.BF16, true);
        List<String> variants = c == Collective.ALL_GATHER ? List.of("ring", "ring:cs=1", "auto", "nccl")
                : List.of("ring:sub=2,lowp=1", "scatter", "nccl:splits=2", "auto");
        java.nio.file.Path out = dir.resolve("bench.json");
        new dev.ubuf.bench.OverlapBench(new dev.ubuf.bench.OverlapBench.Settings(2, List.of(shape),
                java.util.Map.of(c, variants), 1, 3, 7, true, true, false, java.util.Optional.of(out),
                java.util.Map.of()), ENV, PlannerSettings.inMemory()).run();
        var records = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toFile()).get("records");
        java.util.Set<String> methods = new java.util.HashSet<>();
        for (var r : records) {
            String method = r.get("method").asText();
            methods.add(method);
            assertTrue(r.get("cuda_graph").asBoolean(), r.toString());
            assertTrue(r.get("timing").asText().startsWith("cuda-graph replays"), r.toString());
            assertTrue(r.get("ms").asDouble() > 0 && Double.isFinite(r.get("ms").asDouble()), r.toString());
            if (!method.equals("nccl_seq")) {
                assertTrue(r.get("ideal_ms").asDouble() > 0, r.toString());
            }
        }
        org.junit.jupiter.api.Assertions.assertEquals(new java.util.HashSet<>(
                java.util.stream.Stream.concat(variants.stream(), java.util.stream.Stream.of("nccl_seq")).toList()),
                methods);
        var auto = java.util.stream.StreamSupport.stream(records.spliterator(), false)
                .filter(r -> r.get("method").asText().equals("auto")).findFirst().orElseThrow();
        assertTrue(auto.get("planner_ms").size() > 3, auto.toString());
    }

    static double[] toDouble(float[] a) {
        double[] d = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i];
        }
        return d;
    }
}
