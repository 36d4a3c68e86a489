package dev.ubuf.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import java.util.List;
import java.util.Map;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** `ubuf bench kernels` without a GPU: its option checks (before GPU work), its shapes and bytes, its records. */
class KernelBenchCommandTest {
    @ParameterizedTest(name = "ubuf {0}")
    @CsvSource(delimiter = '|', textBlock = """
            bench kernels --iters 0                   | --iters must be at least 1, got 0
            bench kernels --warmup -1                 | --warmup must be at least 0, got -1
            bench kernels --heat-ms -1                | --heat-ms must be at least 0, got -1
            bench kernels --device -1                 | --device must be at least 0, got -1
            bench kernels --tp 0                      | --tp must be 1..8, got 0
            bench kernels --tp 2,16                   | --tp must be 1..8, got 16
            bench kernels --tokens 8200               | --tokens 8200 must be a multiple of 16 x tp = 32
            bench kernels --tokens 0                  | --tokens must be at least 1, got 0
            bench kernels --models 405b               | --models: unknown model '405b'; models: 8b, 70b
            bench kernels --kernels rmsnorm           | --kernels: unknown kernel 'rmsnorm'; kernels: layernorm_fwd,
            bench kernels --kernels gelu_fwd,gelu_fwd | --kernels: a kernel is listed twice: gelu_fwd,gelu_fwd
            bench kernels --dtype fp8                 | --dtype is bf16, fp16 or fp32, got 'fp8'
            bench kernels --tp 1,2 --kernels rs_sum   | --kernels rs_sum is a reduce-scatter's reduction: it needs every --tp at least 2, got 1
            """)
    void badInputFailsBeforeGpuWork(String args, String message) {
        Ubuf run = Ubuf.run(args.trim().split(" +"));
        assertEquals(2, run.exitCode(), run::toString);
        assertTrue(run.err().contains(message.trim()), run::toString);
    }

    @Test
    void casesAreLayerNormMlpsPerRankShapesWithTheBytesEachKernelMustMove() {
        CommandLine.Model.CommandSpec spec = new CommandLine(new KernelBenchCommand()).getCommandSpec();
        List<KernelBenchCommand.Case> cases = KernelBenchCommand.cases(spec, List.of("8b"), List.of(2), 8192,
                KernelBenchCommand.KERNELS, DType.BF16);
        assertEquals(KernelBenchCommand.KERNELS.size(), cases.size());
        Map<String, KernelBenchCommand.Case> byName = new java.util.HashMap<>();
        cases.forEach(c -> byName.put(c.kernel(), c));
        // LayerNorm on the sequence shard: 4096 x 4096 bf16, x read and y written, plus gamma, beta, mean, rstd.
        KernelBenchCommand.Case ln = byName.get("layernorm_fwd");
        assertEquals(4096, ln.rows());
        assertEquals(4096, ln.cols());
        assertEquals(2L * 4096 * 4096 * 2 + 2 * 4096 * 2 + 8 * 4096, ln.bytes());
        assertEquals(3L * 4096 * 4096 * 2 + 8 * 4096 + 4096 * 2 + 8 * 4096, byName.get("layernorm_bwd").bytes());
        // SwiGLU on fc1's full-sequence output: 8192 x 2 * 14336 / 2 in, half of it out.
        KernelBenchCommand.Case sw = byName.get("swiglu_fwd");
        assertEquals(8192, sw.rows());
        assertEquals(14336, sw.cols());
        assertEquals(3L * 8192 * 7168 * 2, sw.bytes());
        assertEquals(5L * 8192 * 7168 * 2, byName.get("swiglu_bwd").bytes());
        // With fc1's bias fused in: the bias row read, and in the backward its fp32 gradient written.
        assertEquals(3L * 8192 * 7168 * 2 + 14336 * 2, byName.get("bias_swiglu_fwd").bytes());
        assertEquals(5L * 8192 * 7168 * 2 + 14336 * 2 + 14336 * 4, byName.get("bias_swiglu_bwd").bytes());
        assertEquals(7168, byName.get("gelu_fwd").cols());
        // GELU with fc1's bias fused in: 8192 x 7168 in and out, the bias read; the backward's fp32 gradient written.
        assertEquals(2L * 8192 * 7168 * 2 + 7168 * 2, byName.get("bias_gelu_fwd").bytes());
        assertEquals(3L * 8192 * 7168 * 2 + 7168 * 2 + 7168 * 4, byName.get("bias_gelu_bwd").bytes());
        assertEquals(2L * 8192 * 14336 * 2 + 14336 * 2, byName.get("bias_add").bytes());
        assertEquals(8192L * 14336 * 2 + 14336 * 4, byName.get("bias_grad").bytes());
        assertEquals(4096L * 4096 * 3, byName.get("fp8_quantize").bytes());
        assertEquals(8192L * 14336 * 4, byName.get("fp8_quantize_transpose").bytes(), "bf16 in, y and yT out");
        // The reduce-scatter's last reduction on fc2's output shard (4096 x 4096): at tp 2 one received partial
        // and the own one read, the sum written; fp32: both partials in fp32, the sum in bf16.
        KernelBenchCommand.Case sum = byName.get("rs_sum");
        assertEquals(4096, sum.rows());
        assertEquals(4096, sum.cols());
        assertEquals(3L * 4096 * 4096 * 2, sum.bytes());
        assertEquals(2L * 4096 * 4096 * 4 + 4096L * 4096 * 2, byName.get("rs_sum_f32").bytes());
        KernelBenchCommand.Case tr = byName.get("fp8_transpose");
        assertEquals(List.of(8192L, 4096L), List.of(tr.rows(), tr.cols()), "the gathered input, as fc1's wgrad reads it");
        assertEquals(2L * 8192 * 4096, tr.bytes(), "a byte read and a byte written an element");
        List<KernelBenchCommand.Case> tp4 = KernelBenchCommand.cases(spec, List.of("70b"), List.of(4), 8192,
                List.of("layernorm_fwd", "swiglu_fwd"), DType.BF16);
        assertEquals(List.of(2048L, 8192L), List.of(tp4.get(0).rows(), tp4.get(0).cols()));
        assertEquals(List.of(8192L, 14336L), List.of(tp4.get(1).rows(), tp4.get(1).cols()));
    }

    @Test
    void aRecordCarriesGbpsAndThePercentOfTheFasterCopysBandwidth() {
        KernelBenchCommand.Case c = new KernelBenchCommand.Case("8b", 2, "layernorm_fwd", 4096, 4096, 3_000_000_000L);
        DescriptiveStatistics st = new DescriptiveStatistics(new double[]{1.0, 1.5, 2.0});
        Map<String, Object> r = KernelBenchCommand.record(c, DType.BF16, 1.5, 1.4, 1.2, st, 4, 30, 5);
        assertEquals("kernel", r.get("op"));
        assertEquals("layernorm_fwd", r.get("method"));
        assertEquals(2, r.get("tp"));
        assertEquals("bf16", r.get("dtype"));
        assertEquals(4096L, r.get("m"));
        assertEquals(1.5, r.get("ms"));
        assertEquals(2000.0, (double) r.get("gbps"), 1e-9);
        assertEquals(2500.0, (double) r.get("copy_gbps"), 1e-9);
        assertEquals(80.0, (double) r.get("pct_of_copy_bw"), 1e-9);
        assertEquals("sm_copy", r.get("copy_method"));
        assertEquals(1.4, r.get("driver_copy_ms"));
        Map<String, Object> driverFaster = KernelBenchCommand.record(c, DType.BF16, 1.5, 1.2, 1.4, st, 4, 30, 5);
        assertEquals(80.0, (double) driverFaster.get("pct_of_copy_bw"), 1e-9);
        assertEquals("copy", driverFaster.get("copy_method"));
        assertEquals(3_000_000_000L, r.get("bytes"));
        assertEquals(4, r.get("runs_per_graph"));
    }

    @Test
    void graphsHoldAboutHalfAMillisecondOfRuns() {
        assertEquals(64, KernelBenchCommand.runsPerGraph(1000));
        assertEquals(1, KernelBenchCommand.runsPerGraph(10_000_000_000L));
        assertEquals(8, KernelBenchCommand.runsPerGraph(200_000_000L), "about 67 us each at 3 TB/s");
        assertFalse(KernelBenchCommand.KERNELS.isEmpty());
    }
}
