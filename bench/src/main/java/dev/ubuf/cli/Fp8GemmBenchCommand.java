package dev.ubuf.cli;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.devicekernels.Fp8Kernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * FP8 against bf16 GEMMs through cuBLASLt in the same iterations: each iteration runs the bf16 GEMM, the FP8 GEMM
 * with split accumulation and the FP8 GEMM with fast accumulation once each on the same operands (the FP8 ones
 * quantized from the bf16 ones), so the throughput ratio is not a ratio of two runs. Both use the layout FP8 needs on
 * Hopper, D[M,N] = A[M,K] B[N,K]^T, as {@code torch._scaled_mm} does (bench/torch/torch_fp8_gemm.py times that side).
 */
@Command(name = "fp8", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "Time FP8 (E4M3 x E4M3 -> bf16) against bf16 GEMMs through cuBLASLt, interleaved (records op"
                + " gemm, methods cublaslt_bf16, cublaslt_fp8, cublaslt_fp8_fast).")
final class Fp8GemmBenchCommand implements Callable<Integer> {
    /** The methods each iteration runs, in order. */
    static final List<String> METHODS = List.of("cublaslt_bf16", "cublaslt_fp8", "cublaslt_fp8_fast");

    @Spec
    CommandSpec spec;

    @Option(names = "--shapes", split = " ", arity = "1..*", paramLabel = "M,K,N",
            defaultValue = "8192,8192,8192 4096,4096,4096 16384,4096,14336 16384,14336,4096 8192,8192,28672",
            description = "Shapes M,K,N, each a multiple of 16 (FP8 on Hopper), separated by spaces"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> shapes;
    @Option(names = "--device", defaultValue = "0", paramLabel = "INDEX",
            description = "CUDA device index, >= 0 (default: ${DEFAULT-VALUE}).")
    int device;
    @Mixin
    GemmTiming timing;
    @Mixin
    ResultsOutput results;

    @Override
    public Integer call() throws Exception {
        List<long[]> list = BenchShapes.parse(spec, shapes, "as an FP8 GEMM", mkn -> {
            for (long d : mkn) {
                if (d % 16 != 0) {
                    throw new IllegalArgumentException("every dimension must be a multiple of 16 for FP8 on Hopper");
                }
            }
            return mkn;
        });
        OptionChecks.atLeast(spec, "--device", device, 0);
        timing.check();
        Optional<Path> out = results.checkWritable();
        GemmTuning tuning = GemmTuning.from(UbufEnvironment.fromSystem()); // bad variables fail before GPU work
        CudaContext ctx = CudaContext.retainPrimary(device);
        try (KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             Gemm gemm = new Gemm(ctx, new GemmTuner(tuning))) {
            ResultsFile rf = new ResultsFile(ctx.device().name(), ResultsFile.commitFromEnvironment());
            for (long[] mkn : list) {
                run(ctx, lib, s, gemm, mkn[0], mkn[1], mkn[2], tuning.enabled(), rf);
            }
            if (out.isPresent()) {
                rf.write(out.get());
            }
        } finally {
            ctx.close();
        }
        return 0;
    }

    private void run(CudaContext ctx, KernelLibrary lib, CudaStream s, Gemm gemm, long m, long k, long n,
                     boolean tuned, ResultsFile rf) {
        DeviceKernels kernels = new DeviceKernels(lib);
        Fp8Kernels fp8 = new Fp8Kernels(lib);
        try (DeviceBuffer a = ctx.allocate(m * k * 2);
             DeviceBuffer b = ctx.allocate(n * k * 2);
             DeviceBuffer a8 = ctx.allocate(m * k);
             DeviceBuffer b8 = ctx.allocate(n * k);
             DeviceBuffer c = ctx.allocate(m * n * 2);
             DeviceBuffer scalars = ctx.allocate(256)) {
            TensorView av = TensorView.of(a, m, k, DType.BF16);
            TensorView bv = TensorView.of(b, n, k, DType.BF16);
            TensorView cv = TensorView.of(c, m, n, DType.BF16);
            // Uniform in [-1, 1): inside E4M3's range with scale 1, so quantization neither saturates nor underflows.
            kernels.fillRandom(av, System.nanoTime(), 1f, s);
            kernels.fillRandom(bv, System.nanoTime() + 1, 1f, s);
            QuantizedGemmOperands q = QuantizedGemmOperands.quantize(kernels, fp8, av, bv, a8, b8, scalars, s);
            TensorView a8v = q.a8();
            TensorView b8v = q.b8();
            Gemm.Fp8Scales scales = q.scales();
            Gemm.Options fast = Gemm.Options.NT.withFp8FastAccumulation(true);
            LinkedHashMap<String, Runnable> work = new LinkedHashMap<>();
            work.put(METHODS.get(0), () -> gemm.multiply(av, bv, cv, 1f, 0f, Gemm.Options.NT, s));
            work.put(METHODS.get(1), () -> gemm.multiply(a8v, b8v, cv, 1f, 0f, Gemm.Options.NT, scales, s));
            work.put(METHODS.get(2), () -> gemm.multiply(a8v, b8v, cv, 1f, 0f, fast, scales, s));
            EventTimer.Timing timed = timing.time(ctx, s, m, n, k, work);
            Map<String, DescriptiveStatistics> st = timed.stats();
            double flop = 2.0 * m * n * k;
            double bf16Ms = st.get(METHODS.get(0)).getPercentile(50);
            List<String> line = new ArrayList<>();
            for (String method : METHODS) {
                DescriptiveStatistics d = st.get(method);
                double ms = d.getPercentile(50);
                double tflops = flop / (ms * 1e-3) / 1e12;
                line.add(String.format(Locale.ROOT, "%s %.4f ms %.0f TFLOP/s", method, ms, tflops));
                Map<String, Object> rec = ResultsFile.record("gemm", method, 1,
                        method.equals(METHODS.get(0)) ? "bf16" : "fp8_e4m3", m, n, k, ms);
                rec.put("p10_ms", d.getPercentile(10));
                rec.put("p90_ms", d.getPercentile(90));
                rec.put("tflops", tflops);
                rec.put("speedup_vs_bf16", bf16Ms / ms);
                rec.put("layout", "nt");
                rec.put("out_dtype", "bf16");
                timing.record(rec, timed);
                rec.put("tuned", tuned);
                rec.put("cublaslt", Gemm.cublasLtVersion());
                rf.add(rec);
            }
            System.out.printf(Locale.ROOT, "gemm %dx%dx%d (M,N,K): %s; fp8/bf16 throughput %.2fx (fast %.2fx);"
                    + " cuBLASLt %s%n", m, n, k, String.join(", ", line), bf16Ms / st.get(METHODS.get(1)).getPercentile(50),
                    bf16Ms / st.get(METHODS.get(2)).getPercentile(50), Gemm.cublasLtVersion());
        }
    }
}
