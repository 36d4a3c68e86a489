package dev.ubuf.cli;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.apache.commons.math3.stat.descriptive.DescriptiveStatistics;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/** cuBLASLt GEMM from Java, timed with CUDA events on fresh random inputs. Options are checked before GPU work. */
@Command(name = "gemm", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "Time C[M,N] = A[M,K] * B[K,N] through cuBLASLt (records op gemm, method cublaslt).")
final class GemmBenchCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--m", defaultValue = "8192", paramLabel = "M",
            description = "Rows of A and C, >= 1 (default: ${DEFAULT-VALUE}).")
    long m;
    @Option(names = "--n", defaultValue = "8192", paramLabel = "N",
            description = "Columns of B and C, >= 1 (default: ${DEFAULT-VALUE}).")
    long n;
    @Option(names = "--k", defaultValue = "8192", paramLabel = "K",
            description = "Columns of A, rows of B, >= 1 (default: ${DEFAULT-VALUE}).")
    long k;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Element type: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType t;
    @Option(names = "--device", defaultValue = "0", paramLabel = "INDEX",
            description = "CUDA device index, >= 0 (default: ${DEFAULT-VALUE}).")
    int device;
    @Option(names = "--warmup", defaultValue = "10", paramLabel = "N",
            description = "Untimed runs first, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "50", paramLabel = "N",
            description = "Timed runs, >= 1 (default: ${DEFAULT-VALUE}).")
    int iters;
    @Mixin
    ResultsOutput results;

    @Override
    public Integer call() throws Exception {
        OptionChecks.atLeast(spec, "--m", m, 1);
        OptionChecks.atLeast(spec, "--n", n, 1);
        OptionChecks.atLeast(spec, "--k", k, 1);
        OptionChecks.atLeast(spec, "--device", device, 0);
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        Optional<Path> out = results.checkWritable();
        GemmTuning tuning = GemmTuning.from(UbufEnvironment.fromSystem()); // bad variables fail before GPU work
        CudaContext ctx = CudaContext.retainPrimary(device);
        try (KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer a = ctx.allocate(m * k * t.bytes());
             DeviceBuffer b = ctx.allocate(k * n * t.bytes());
             DeviceBuffer c = ctx.allocate(m * n * t.bytes());
             // UB_GEMM_TUNING applies as it does to the ops' GEMMs, so parity is measured on what they run.
             Gemm gemm = new Gemm(ctx, new GemmTuner(tuning))) {
            DeviceKernels kernels = new DeviceKernels(lib);
            TensorView av = TensorView.of(a, m, k, t);
            TensorView bv = TensorView.of(b, k, n, t);
            TensorView cv = TensorView.of(c, m, n, t);
            kernels.fillRandom(av, System.nanoTime(), 1f, s);
            kernels.fillRandom(bv, System.nanoTime() + 1, 1f / (float) Math.sqrt(k), s);
            DescriptiveStatistics st = EventTimer.time(ctx, s, warmup, iters, () -> gemm.multiply(av, bv, cv, s));
            double ms = st.getPercentile(50);
            double tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12;
            System.out.printf("gemm %s %dx%dx%d: median %.4f ms (p10 %.4f, p90 %.4f) %.1f TFLOP/s, cuBLASLt %s%n",
                    t.shortName(), m, n, k, ms, st.getPercentile(10), st.getPercentile(90), tflops, Gemm.cublasLtVersion());
            if (out.isPresent()) {
                ResultsFile rf = new ResultsFile(ctx.device().name(), ResultsFile.commitFromEnvironment());
                Map<String, Object> rec = ResultsFile.record("gemm", "cublaslt", 1, t.shortName(), m, n, k, ms);
                rec.put("p10_ms", st.getPercentile(10));
                rec.put("p90_ms", st.getPercentile(90));
                rec.put("tflops", tflops);
                rec.put("iters", iters);
                rec.put("tuned", tuning.enabled());
                rf.add(rec);
                rf.write(out.get());
            }
        } finally {
            ctx.close();
        }
        return 0;
    }
}
