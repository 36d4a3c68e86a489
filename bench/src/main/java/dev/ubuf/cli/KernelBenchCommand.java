package dev.ubuf.cli;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.layers.kernels.LayerKernels;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * The layer kernels at the per-rank shapes LayerNormMLP runs them at (bench/torch/torch_kernels.py times PyTorch's
 * equivalents on the same shapes): each kernel and two device-to-device copies of the same bytes (the driver's and the
 * SM copy kernel; the faster is the reference), interleaved in the same iterations as CUDA graphs of back-to-back runs
 * ({@link EventTimer}), so {@code pct_of_copy_bw} is not a ratio of two runs. Bytes are what the kernel must at least
 * read and write; a kernel that mostly reads (bias gradient) may pass 100%: reads alone outrun a copy.
 */
@Command(name = "kernels", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = "Time the layer kernels (LayerNorm, SwiGLU, GELU, bias, bias gradient, FP8 quantize) at"
                + " LayerNormMLP's per-rank shapes against a device-to-device copy of the same bytes (records op"
                + " kernel, method = kernel, with gbps and pct_of_copy_bw).")
final class KernelBenchCommand implements Callable<Integer> {
    /** Every kernel the benchmark times, in order. */
    static final List<String> KERNELS = List.of("layernorm_fwd", "layernorm_bwd", "swiglu_fwd", "swiglu_bwd",
            "bias_swiglu_fwd", "bias_swiglu_bwd", "gelu_fwd", "gelu_bwd", "bias_gelu_fwd", "bias_gelu_bwd", "bias_add",
            "bias_grad", "fp8_quantize", "fp8_quantize_transpose", "fp8_transpose", "rs_sum", "rs_sum_f32");
    /** Model dimensions: hidden and ffn of Llama-3 8B and 70B. */
    static final Map<String, long[]> MODELS = Map.of("8b", new long[]{4096, 14336}, "70b", new long[]{8192, 28672});

    @Spec
    CommandSpec spec;

    @Option(names = "--models", split = ",", defaultValue = "8b,70b", paramLabel = "MODEL",
            description = "Model dimensions, comma-separated: 8b (hidden 4096, ffn 14336), 70b (8192, 28672)"
                    + " (default: ${DEFAULT-VALUE}).")
    List<String> models;
    @Option(names = "--tp", split = ",", defaultValue = "2,4", paramLabel = "TP",
            description = "Tensor-parallel sizes, comma-separated, 1..8 (default: ${DEFAULT-VALUE}).")
    List<Integer> tps;
    @Option(names = "--tokens", defaultValue = "8192", paramLabel = "N",
            description = "Tokens (sequence x batch) of the step, divisible by every tp and by 16 x tp"
                    + " (default: ${DEFAULT-VALUE}).")
    long tokens;
    @Option(names = "--kernels", split = ",", paramLabel = "KERNEL",
            description = "Kernels to time, comma-separated (default: all): layernorm_fwd, layernorm_bwd, swiglu_fwd,"
                    + " swiglu_bwd, bias_swiglu_fwd, bias_swiglu_bwd (fc1's bias fused in, as the MLP runs them;"
                    + " no PyTorch twin), gelu_fwd, gelu_bwd, bias_gelu_fwd, bias_gelu_bwd (the same for GELU; no"
                    + " PyTorch twin), bias_add, bias_grad, fp8_quantize,"
                    + " fp8_quantize_transpose, fp8_transpose (the FP8 codes of a gathered [tokens, hidden] tensor"
                    + " transposed, as the FP8 wgrads need them), rs_sum (a reduce-scatter's last reduction at fc2's"
                    + " output shard: tp-1 received partials added to the own one in place, partials in the layer's"
                    + " type; no PyTorch twin), rs_sum_f32 (tp fp32 partials summed into the layer's type).")
    List<String> kernels;
    @Option(names = "--dtype", defaultValue = "bf16", paramLabel = "DTYPE",
            description = "Element type of the layer: bf16, fp16 or fp32 (default: ${DEFAULT-VALUE}).")
    String dtype;
    @Option(names = "--device", defaultValue = "0", paramLabel = "INDEX",
            description = "CUDA device index, >= 0 (default: ${DEFAULT-VALUE}).")
    int device;
    @Option(names = "--warmup", defaultValue = "5", paramLabel = "N",
            description = "Untimed replays of each candidate's graph, >= 0 (default: ${DEFAULT-VALUE}).")
    int warmup;
    @Option(names = "--iters", defaultValue = "30", paramLabel = "N",
            description = "Timed replays (samples) of each candidate's graph of back-to-back runs, >= 1"
                    + " (default: ${DEFAULT-VALUE}).")
    int iters;
    @Option(names = "--heat-ms", defaultValue = "300", paramLabel = "MS",
            description = "Run each shape's candidates back to back this long first, >= 0 (default: ${DEFAULT-VALUE}).")
    long heatMs;
    @Mixin
    ResultsOutput results;

    static final String DRIVER_COPY = "copy";
    static final String SM_COPY = "sm_copy";

    /** One kernel at one shape: rows x cols of its main operand, and the bytes it must at least move. */
    record Case(String model, int tp, String kernel, long rows, long cols, long bytes) {
    }

    @Override
    public Integer call() throws Exception {
        DType t = checkDtype(spec, dtype);
        List<Case> cases = cases(spec, models, tps, tokens, kernels == null ? KERNELS : kernels, t);
        OptionChecks.atLeast(spec, "--device", device, 0);
        OptionChecks.atLeast(spec, "--warmup", warmup, 0);
        OptionChecks.atLeast(spec, "--iters", iters, 1);
        OptionChecks.atLeast(spec, "--heat-ms", heatMs, 0);
        Optional<Path> out = results.checkWritable();
        CudaContext ctx = CudaContext.retainPrimary(device);
        try (KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL)) {
            ResultsFile rf = new ResultsFile(ctx.device().name(), ResultsFile.commitFromEnvironment());
            Bench b = new Bench(ctx, lib, s, t);
            for (Case c : cases) {
                rf.add(b.run(c));
            }
            if (out.isPresent()) {
                rf.write(out.get());
                System.out.println("wrote " + rf.size() + " records to " + out.get());
            }
        } finally {
            ctx.close();
        }
        return 0;
    }

    static DType checkDtype(CommandSpec spec, String dtype) {
        return switch (dtype) {
            case "bf16" -> DType.BF16;
            case "fp16" -> DType.FP16;
            case "fp32" -> DType.FP32;
            default -> throw OptionChecks.invalid(spec, "--dtype is bf16, fp16 or fp32, got '" + dtype + "'");
        };
    }

    /**
     * The cases, checked before GPU work: LayerNormMLP's per-rank shapes under sequence parallelism (tokens T, tp,
     * hidden h, ffn f, F = f/tp): LayerNorm and the FP8 quantize of its output on the sequence shard [T/tp, h]; SwiGLU
     * on fc1's output [T, 2F] into [T, F]; GELU on [T, F]; bias add and bias gradient on fc1's output [T, 2F]; the FP8
     * quantize with transpose of fc1's output gradient [T, 2F] (y and yT, as the FP8 backward quantizes dY).
     */
    static List<Case> cases(CommandSpec spec, List<String> models, List<Integer> tps, long tokens, List<String> kernels,
                            DType t) {
        if (kernels.isEmpty()) {
            throw OptionChecks.invalid(spec, "--kernels: name at least one kernel; kernels: " + String.join(", ", KERNELS));
        }
        for (String k : kernels) {
            if (!KERNELS.contains(k)) {
                throw OptionChecks.invalid(spec, "--kernels: unknown kernel '" + k + "'; kernels: "
                        + String.join(", ", KERNELS));
            }
        }
        if (kernels.stream().distinct().count() != kernels.size()) {
            throw OptionChecks.invalid(spec, "--kernels: a kernel is listed twice: " + String.join(",", kernels));
        }
        for (String m : models) {
            if (!MODELS.containsKey(m)) {
                throw OptionChecks.invalid(spec, "--models: unknown model '" + m + "'; models: 8b, 70b");
            }
        }
        OptionChecks.atLeast(spec, "--tokens", tokens, 1);
        List<Case> cases = new ArrayList<>();
        int e = t.bytes();
        for (String m : models) {
            long h = MODELS.get(m)[0];
            long f = MODELS.get(m)[1];
            for (int tp : tps) {
                OptionChecks.within(spec, "--tp", tp, 1, 8);
                if (tokens % (16L * tp) != 0) {
                    throw OptionChecks.invalid(spec, "--tokens " + tokens + " must be a multiple of 16 x tp = " + 16 * tp
                            + " (every rank holds tokens/tp rows; FP8 needs multiples of 16)");
                }
                long shard = tokens / tp;
                long ff = f / tp;
                for (String k : kernels) {
                    if (tp == 1 && k.startsWith("rs_sum")) {
                        throw OptionChecks.invalid(spec, "--kernels " + k + " is a reduce-scatter's reduction: it needs"
                                + " every --tp at least 2, got 1");
                    }
                    cases.add(switch (k) {
                        // x read, y written; gamma, beta read; mean and rstd (fp32) written
                        case "layernorm_fwd" -> new Case(m, tp, k, shard, h, 2 * shard * h * e + 2 * h * e + 8 * shard);
                        // dy, x read, dx written; mean, rstd, gamma read; dgamma, dbeta (fp32) written
                        case "layernorm_bwd" -> new Case(m, tp, k, shard, h, 3 * shard * h * e + 8 * shard + h * e + 8 * h);
                        case "swiglu_fwd" -> new Case(m, tp, k, tokens, 2 * ff, 3 * tokens * ff * e);
                        case "swiglu_bwd" -> new Case(m, tp, k, tokens, 2 * ff, 5 * tokens * ff * e);
                        // the same as swiglu's, the bias row aside
                        case "bias_swiglu_fwd" -> new Case(m, tp, k, tokens, 2 * ff, 3 * tokens * ff * e + 2 * ff * e);
                        // swiglu_bwd's, the bias read and its fp32 gradient written (not the partial sums)
                        case "bias_swiglu_bwd" -> new Case(m, tp, k, tokens, 2 * ff,
                                5 * tokens * ff * e + 2 * ff * e + 2 * ff * 4);
                        case "gelu_fwd" -> new Case(m, tp, k, tokens, ff, 2 * tokens * ff * e);
                        case "gelu_bwd" -> new Case(m, tp, k, tokens, ff, 3 * tokens * ff * e);
                        case "bias_gelu_fwd" -> new Case(m, tp, k, tokens, ff, 2 * tokens * ff * e + ff * e);
                        // gelu_bwd's, the bias read and its fp32 gradient written (not the partial sums)
                        case "bias_gelu_bwd" -> new Case(m, tp, k, tokens, ff, 3 * tokens * ff * e + ff * e + ff * 4);
                        case "bias_add" -> new Case(m, tp, k, tokens, 2 * ff, 2 * tokens * 2 * ff * e + 2 * ff * e);
                        case "bias_grad" -> new Case(m, tp, k, tokens, 2 * ff, tokens * 2 * ff * e + 2 * ff * 4);
                        case "fp8_quantize" -> new Case(m, tp, k, shard, h, shard * h * (e + 1));
                        case "fp8_quantize_transpose" -> new Case(m, tp, k, tokens, 2 * ff, tokens * 2 * ff * (e + 2));
                        // one byte read and one written an element, whatever the layer's dtype
                        case "fp8_transpose" -> new Case(m, tp, k, tokens, h, 2 * tokens * h);
                        // tp - 1 received partials and the own one (the destination) read, the sum written
                        case "rs_sum" -> new Case(m, tp, k, shard, h, (tp + 1) * shard * h * e);
                        // tp fp32 partials read, the sum written in the layer's type
                        case "rs_sum_f32" -> new Case(m, tp, k, shard, h, tp * shard * h * 4 + shard * h * e);
                        default -> throw new IllegalStateException(k);
                    });
                }
            }
        }
        return cases;
    }

    /** Graph runs worth about {@link EventTimer#GRAPH_MS} at a nominal 3 TB/s, 1..{@link EventTimer#MAX_RUNS_PER_GRAPH}. */
    static int runsPerGraph(long bytes) {
        double ms = bytes / 3e12 * 1e3;
        return (int) Math.max(1, Math.min(EventTimer.MAX_RUNS_PER_GRAPH, Math.ceil(EventTimer.GRAPH_MS / ms)));
    }

    /** The record of one case, from the kernel's and the copy's median times. */
    static Map<String, Object> record(Case c, DType t, double ms, double driverCopyMs, double smCopyMs,
                                      DescriptiveStatistics k, int runs, int iters, int warmup) {
        double copyMs = Math.min(driverCopyMs, smCopyMs);
        Map<String, Object> r = ResultsFile.record("kernel", c.kernel(), c.tp(), t.shortName(), c.rows(), c.cols(), 0,
                ms);
        double gbps = c.bytes() / (ms * 1e-3) / 1e9;
        double copyGbps = c.bytes() / (copyMs * 1e-3) / 1e9;
        r.put("model", c.model());
        r.put("bytes", c.bytes());
        r.put("gbps", gbps);
        r.put("copy_ms", copyMs);
        r.put("copy_method", driverCopyMs <= smCopyMs ? DRIVER_COPY : SM_COPY);
        r.put("driver_copy_ms", driverCopyMs);
        r.put("sm_copy_ms", smCopyMs);
        r.put("copy_gbps", copyGbps);
        r.put("pct_of_copy_bw", 100 * gbps / copyGbps);
        r.put("p10_ms", k.getPercentile(10));
        r.put("p90_ms", k.getPercentile(90));
        r.put("iters", iters);
        r.put("warmup", warmup);
        r.put("runs", "graph");
        r.put("runs_per_graph", runs);
        return r;
    }

    /** Buffers and launches for the cases, on one device. */
    private final class Bench {
        private final CudaContext ctx;
        private final CudaStream s;
        private final DType t;
        private final DeviceKernels dk;
        private final LayerKernels lk;
        private final Fp8Kernels fp8;

        Bench(CudaContext ctx, KernelLibrary lib, CudaStream s, DType t) {
            this.ctx = ctx;
            this.s = s;
            this.t = t;
            this.dk = new DeviceKernels(lib);
            this.lk = new LayerKernels(lib);
            this.fp8 = new Fp8Kernels(lib);
        }

        Map<String, Object> run(Case c) {
            List<DeviceBuffer> owned = new ArrayList<>();
            try {
                Runnable work = prepare(c, owned);
                long copyBytes = (c.bytes() + 1) / 2; // a copy reads and writes its bytes: c.bytes() moved in all
                DeviceBuffer src = alloc(owned, copyBytes);
                DeviceBuffer dst = alloc(owned, copyBytes);
                LinkedHashMap<String, Runnable> candidates = new LinkedHashMap<>();
                candidates.put(c.kernel(), work);
                // Two copies of the same bytes, the driver's and ubuf's SM copy: at some sizes the driver's ran at
                // 2.4 TB/s where the SM copy and the layer kernels ran at 2.8-3.0, so the faster is the reference.
                candidates.put(DRIVER_COPY, () -> s.copy(dst.address(), src.address(), copyBytes));
                candidates.put(SM_COPY, () -> dk.copyBytes(dst.address(), src.address(), copyBytes, Integer.MAX_VALUE, s));
                int runs = runsPerGraph(c.bytes());
                EventTimer.Timing timing = EventTimer.interleaved(ctx, s, warmup, iters, runs, candidates,
                        Duration.ofMillis(heatMs));
                DescriptiveStatistics k = timing.stats().get(c.kernel());
                double ms = k.getPercentile(50);
                double driverMs = timing.stats().get(DRIVER_COPY).getPercentile(50);
                double smMs = timing.stats().get(SM_COPY).getPercentile(50);
                Map<String, Object> r = record(c, t, ms, driverMs, smMs, k, timing.runsPerGraph(), iters, warmup);
                System.out.printf(Locale.ROOT, "%-4s tp %d %-23s %6d x %-6d %8.1f us %7.0f GB/s  copy %7.0f GB/s"
                                + "  %5.1f%% of copy%n", c.model(), c.tp(), c.kernel(), c.rows(), c.cols(), ms * 1e3,
                        r.get("gbps"), r.get("copy_gbps"), r.get("pct_of_copy_bw"));
                return r;
            } finally {
                s.synchronize();
                owned.forEach(DeviceBuffer::close);
            }
        }

        private DeviceBuffer alloc(List<DeviceBuffer> owned, long bytes) {
            DeviceBuffer b = ctx.allocate(Math.max(16, (bytes + 15) / 16 * 16));
            owned.add(b);
            return b;
        }

        private TensorView matrix(List<DeviceBuffer> owned, long rows, long cols, DType d) {
            TensorView v = TensorView.of(alloc(owned, rows * cols * d.bytes()), rows, cols, d);
            if (d == DType.FP32 || d == DType.FP16 || d == DType.BF16) {
                dk.fillRandom(v, rows * 31 + cols, 1f, s);
            }
            return v;
        }

        /** The case's operands, filled, and its launch (what the layer launches for it). */
        private Runnable prepare(Case c, List<DeviceBuffer> owned) {
            long r = c.rows();
            long n = c.cols();
            switch (c.kernel()) {
                case "layernorm_fwd", "layernorm_bwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView gamma = matrix(owned, 1, n, t);
                    TensorView beta = matrix(owned, 1, n, t);
                    TensorView y = matrix(owned, r, n, t);
                    TensorView mean = matrix(owned, 1, r, DType.FP32);
                    TensorView rstd = matrix(owned, 1, r, DType.FP32);
                    lk.layerNormForward(x, gamma, beta, 1e-5f, false, y, mean, rstd, s);
                    if (c.kernel().equals("layernorm_fwd")) {
                        return () -> lk.layerNormForward(x, gamma, beta, 1e-5f, false, y, mean, rstd, s);
                    }
                    TensorView dy = matrix(owned, r, n, t);
                    TensorView dx = matrix(owned, r, n, t);
                    TensorView grads = matrix(owned, 2, n, DType.FP32);
                    TensorView ws = matrix(owned, LayerKernels.layerNormBackwardWorkspaceRows(r), n, DType.FP32);
                    // As SequenceParallelLayerNorm: fp32 dgamma and dbeta, written (the all-reduce adds them up).
                    return () -> lk.layerNormBackward(dy, x, mean, rstd, gamma, false, dx, grads.rows(0, 1),
                            grads.rows(1, 1), false, ws, s);
                }
                case "swiglu_fwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView y = matrix(owned, r, n / 2, t);
                    return () -> lk.swiglu(x, y, s);
                }
                case "swiglu_bwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView dy = matrix(owned, r, n / 2, t);
                    TensorView dx = matrix(owned, r, n, t);
                    return () -> lk.swigluBackward(dy, x, dx, s);
                }
                case "bias_swiglu_fwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView bias = matrix(owned, 1, n, t);
                    TensorView y = matrix(owned, r, n / 2, t);
                    return () -> lk.biasSwiglu(x, bias, y, s);
                }
                case "bias_swiglu_bwd" -> {
                    // As LayerNormMLP runs it: in place over fc1's output, accumulating fc1's fp32 bias gradient.
                    TensorView x = matrix(owned, r, n, t);
                    TensorView bias = matrix(owned, 1, n, t);
                    TensorView dy = matrix(owned, r, n / 2, t);
                    TensorView db = matrix(owned, 1, n, DType.FP32);
                    TensorView ws = matrix(owned, LayerKernels.biasGradWorkspaceRows(r), n, DType.FP32);
                    return () -> lk.biasSwigluBackward(dy, x, bias, x, db, true, ws, s);
                }
                case "gelu_fwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView y = matrix(owned, r, n, t);
                    return () -> lk.gelu(x, y, s);
                }
                case "gelu_bwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView dy = matrix(owned, r, n, t);
                    TensorView dx = matrix(owned, r, n, t);
                    return () -> lk.geluBackward(dy, x, dx, s);
                }
                case "bias_gelu_fwd" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView bias = matrix(owned, 1, n, t);
                    TensorView y = matrix(owned, r, n, t);
                    return () -> lk.biasGelu(x, bias, y, null, s);
                }
                case "bias_gelu_bwd" -> {
                    // As bias_swiglu_bwd: in place over fc1's output, accumulating fc1's fp32 bias gradient.
                    TensorView x = matrix(owned, r, n, t);
                    TensorView bias = matrix(owned, 1, n, t);
                    TensorView dy = matrix(owned, r, n, t);
                    TensorView db = matrix(owned, 1, n, DType.FP32);
                    TensorView ws = matrix(owned, LayerKernels.biasGradWorkspaceRows(r), n, DType.FP32);
                    return () -> lk.biasGeluBackward(dy, x, bias, x, db, true, ws, s);
                }
                case "bias_add" -> {
                    // In place, as ColumnParallelLinear adds it; repeated runs only grow the values.
                    TensorView y = matrix(owned, r, n, t);
                    TensorView bias = matrix(owned, 1, n, t);
                    return () -> dk.addBias(y, bias, s);
                }
                case "bias_grad" -> {
                    TensorView dy = matrix(owned, r, n, t);
                    TensorView db = matrix(owned, 1, n, DType.FP32);
                    TensorView ws = matrix(owned, LayerKernels.biasGradWorkspaceRows(r), n, DType.FP32);
                    return () -> lk.biasGrad(dy, db, true, ws, s);
                }
                case "fp8_quantize", "fp8_quantize_transpose" -> {
                    TensorView x = matrix(owned, r, n, t);
                    TensorView y = matrix(owned, r, n, DType.FP8_E4M3);
                    TensorView scalars = matrix(owned, 1, 4, DType.FP32);
                    dk.fillBits(scalars, Float.floatToIntBits(1f), s);
                    TensorView scale = scalars.cols(0, 1);
                    TensorView amax = scalars.cols(1, 1);
                    if (c.kernel().equals("fp8_quantize")) {
                        // Delayed scaling's launch: the scale known, the amax collected.
                        return () -> fp8.quantize(x, scale, y, amax, null, s);
                    }
                    TensorView yT = matrix(owned, n, r, DType.FP8_E4M3);
                    return () -> fp8.quantizeTransposed(x, scale, y, yT, amax, null, s);
                }
                case "fp8_transpose" -> {
                    TensorView q = matrix(owned, r, n, DType.FP8_E4M3);
                    TensorView qT = matrix(owned, n, r, DType.FP8_E4M3);
                    return () -> fp8.transpose(q, qT, s);
                }
                case "rs_sum", "rs_sum_f32" -> {
                    // As the reduce-scatters' tail launches it: separate slots of one user buffer in scatter, the
                    // destination accumulated in place when the partials are in its type.
                    boolean wide = c.kernel().equals("rs_sum_f32");
                    int sources = wide ? c.tp() : c.tp() - 1;
                    List<TensorView> partials = new ArrayList<>();
                    for (int i = 0; i < sources; i++) {
                        partials.add(matrix(owned, r, n, wide ? DType.FP32 : t));
                    }
                    TensorView out = matrix(owned, r, n, t);
                    return () -> dk.sum(partials, out, !wide, s);
                }
                default -> throw new IllegalStateException(c.kernel());
            }
        }
    }
}
