package dev.ubuf.tests;

import dev.ubuf.ag.AgShape;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static dev.ubuf.op.Collective.ALL_GATHER;
import static dev.ubuf.op.Collective.REDUCE_SCATTER;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The "atomic" methods (atomic-gemm module: one tile-synchronised sm_90a GEMM launch per call, the copy engine
 * pushing chunks and raising arrival counters, or waiting on done counters) on two H100/H200 GPUs: against the NCCL
 * reference and float64 in both rank modes (threads of one JVM, one JVM per rank), and a peer that never sends:
 * the kernel's arrival wait expires, the report names the chunk and the rank, and the process goes on to run the
 * method again. Skipped without two GPUs of compute capability 9.0.
 */
class AtomicOpsGpuTest {
    static final UbufEnvironment ENV = new UbufEnvironment(true, Duration.ofSeconds(60), false);

    @BeforeAll
    static void sm90a() {
        Gpu.assumeGpus(2);
        try (CudaContext c0 = CudaContext.retainPrimary(0); CudaContext c1 = CudaContext.retainPrimary(1)) {
            int a = c0.device().computeCapability();
            int b = c1.device().computeCapability();
            assumeTrue(a == 90 && b == 90, "the atomic methods need compute capability 9.0 (H100/H200); GPUs have "
                    + a + " and " + b);
        }
    }

    static List<OverlapScenario> cases() {
        return List.of(
                new OverlapScenario(ALL_GATHER, "atomic", DType.BF16, 2048, 512, 384, true, false, false),
                new OverlapScenario(ALL_GATHER, "atomic", DType.BF16, 2000, 512, 384, true, true, false),
                new OverlapScenario(ALL_GATHER, "atomic", DType.BF16, 4096, 1024, 1536, true, true, false),
                new OverlapScenario(REDUCE_SCATTER, "atomic", DType.BF16, 2048, 384, 512, true, false, true),
                new OverlapScenario(REDUCE_SCATTER, "atomic", DType.FP16, 2000, 384, 512, true, true, false),
                new OverlapScenario(REDUCE_SCATTER, "atomic", DType.BF16, 4096, 1536, 1024, true, true, true),
                // The kernel option's tilings where the rule takes another (ping-pong at these K): clustered tiles
                // with placeholder halves (1000-row chunks), the cooperative tiles, and the ping-pong named.
                new OverlapScenario(ALL_GATHER, "atomic:kernel=cooperative-cluster", DType.BF16, 2000, 512, 384, true,
                        true, false),
                new OverlapScenario(REDUCE_SCATTER, "atomic:kernel=cooperative-cluster", DType.FP16, 2000, 384, 512,
                        true, true, true),
                new OverlapScenario(REDUCE_SCATTER, "atomic:kernel=cooperative", DType.BF16, 2048, 384, 512, true,
                        false, false),
                new OverlapScenario(ALL_GATHER, "atomic:kernel=pingpong", DType.BF16, 2048, 512, 384, true, false,
                        false));
    }

    @ParameterizedTest(name = "threads {0}")
    @MethodSource("cases")
    void threadRanksMatchTheNcclReference(OverlapScenario scenario) throws Exception {
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> scenario.run(rank, boot, ctx, ENV));
    }

    @ParameterizedTest(name = "processes {0}")
    @MethodSource("cases")
    void processRanksMatchTheNcclReference(OverlapScenario scenario) throws InterruptedException {
        ProcessRanks.launch(2, Duration.ofSeconds(60), scenario, Duration.ofMinutes(5))
                .assertEveryRankPassed(scenario, 2);
    }

    /**
     * Rank 1 makes the op but never calls it: rank 0's kernel waits for chunk 1 until half of UB_TIMEOUT, gives up
     * (storing no further tile), and rank 0's await fails at UB_TIMEOUT naming chunk 1 and rank 1. Both ranks then
     * close, and a fresh domain in the same process runs the method correctly.
     */
    @Test
    void aPeerThatNeverSendsExpiresTheKernelsWaitWithAReportAndTheProcessRecovers() throws Exception {
        UbufEnvironment shortTimeout = new UbufEnvironment(true, Duration.ofSeconds(6), false);
        AgShape shape = new AgShape(2, 1024, 256, 256, DType.BF16);
        AtomicReference<Throwable> seen = new AtomicReference<>();
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, shortTimeout, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 DeviceBuffer xb = ctx.allocate(shape.inputRows() * shape.k() * 2);
                 DeviceBuffer wb = ctx.allocate(shape.k() * shape.n() * 2);
                 DeviceBuffer ob = ctx.allocate(shape.outputRows() * shape.n() * 2)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                OverlapOp op = OverlapOp.create(comm, MethodRegistry.load().schedule(shape, "atomic"), kernels,
                        ExecutionSettings.DEFAULT);
                try {
                    if (rank == 0) {
                        op.forward(OperandBindings.of(TensorView.of(xb, shape.inputRows(), shape.k(), DType.BF16),
                                TensorView.of(wb, shape.k(), shape.n(), DType.BF16))
                                .withOutput(TensorView.of(ob, shape.outputRows(), shape.n(), DType.BF16)), s);
                        RuntimeException e = assertThrows(RuntimeException.class, () -> op.await(s));
                        seen.set(e);
                    } else {
                        Thread.sleep(shortTimeout.timeout().multipliedBy(2).toMillis());
                    }
                } finally {
                    try {
                        op.close();
                    } catch (RuntimeException ignored) {
                        // the domain was aborted: close reports it, the memory is what matters
                    }
                }
            } catch (RuntimeException ignored) {
                // rank 1 learns of rank 0's abort through the bootstrap
            }
        });
        Throwable e = seen.get();
        assertNotNull(e, "rank 0's await did not fail");
        String message = String.valueOf(e.getMessage());
        assertTrue(message.contains("chunk 1") && message.contains("rank 1") && message.contains("expired"),
                message);
        ThreadDomain.run(2, Duration.ofSeconds(120), (rank, boot, ctx) -> new OverlapScenario(ALL_GATHER, "atomic",
                DType.BF16, 1024, 256, 256, true, false, false).run(rank, boot, ctx, ENV));
    }

    @Test
    void graphSafeExecutionIsRefusedWithAReason() throws Exception {
        AgShape shape = new AgShape(2, 1024, 256, 256, DType.BF16);
        ThreadDomain.run(2, Duration.ofSeconds(60), (rank, boot, ctx) -> {
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, ENV, null);
                 KernelLibrary lib = KernelLibrary.load(ctx)) {
                var schedule = MethodRegistry.load().schedule(shape, "atomic");
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> OverlapOp.create(
                        comm, schedule, new DeviceKernels(lib), ExecutionSettings.DEFAULT.withGraphSafe(true)));
                assertTrue(e.getMessage().contains("graph-safe"), e.getMessage());
            }
        });
    }
}
