package dev.ubuf.cli;

import dev.ubuf.bench.EventTimer;
import dev.ubuf.bench.GraphCandidateBench;
import dev.ubuf.bench.ResultsFile;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.gemm.GemmRunner;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.op.OverlapShape;
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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * cuBLASLt GEMM from Java, timed with CUDA events on device-random inputs (the ops' distribution), one shape after
 * another on one GPU. Options are checked before GPU work.
 */
@Command(name = "gemm", mixinStandardHelpOptions = true, version = UbufCli.VERSION,
        description = {"Time C[M,N] = A[M,K] * B[K,N] through cuBLASLt (records op gemm, method cublaslt, one per"
                + " shape).",
                "Shapes: --m/--k/--n (one), --shapes (several), or --from-sweep: the GEMM each rank runs as one call"
                        + " in the sweep's ops (AG: the gathered [M,K] times its [K,N/tp] columns; RS: [M,K/tp] times"
                        + " [K/tp,N]), which is the sweep's gemm_ms and the GEMM PyTorch's torch.matmul is timed on."})
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
    @Option(names = "--shapes", split = ";", arity = "1..*", paramLabel = "M,K,N",
            description = "Several shapes instead of --m/--k/--n: M,K,N words (gemm:M,K,N too), separated by"
                    + " spaces or ';'. Default: none (--m/--k/--n).")
    List<String> shapeWords;
    @Option(names = "--from-sweep", description = "Time the sweep's distinct per-rank GEMMs instead (the same"
            + " --models, --tokens, --small and --tp as bench sweep).")
    boolean fromSweep;
    @Mixin
    SweepSelection sweep;
    @Option(names = "--tp", defaultValue = "2", paramLabel = "N",
            description = "With --from-sweep: the sweep's ranks, 2.." + OverlapBenchOptions.MAX_TP
                    + " (default: ${DEFAULT-VALUE}).")
    int tp;
    @Option(names = "--list-shapes", description = "Print the shapes as gemm:M,K,N words (what the PyTorch"
            + " baseline's --shapes takes) and exit, without a GPU.")
    boolean listShapes;
    @Option(names = "--dtype", defaultValue = "bf16", converter = BenchDTypes.Converter.class,
            completionCandidates = BenchDTypes.class, paramLabel = "TYPE",
            description = "Element type: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    DType t;
    @Option(names = "--device", defaultValue = "0", paramLabel = "INDEX",
            description = "CUDA device index, >= 0 (default: ${DEFAULT-VALUE}).")
    int device;
    @Mixin
    GemmTiming timing;
    @Option(names = "--seed", defaultValue = "20261123", paramLabel = "N",
            description = "Seed of A (B uses seed + 1), as rank 0's operands in the overlap benchmarks"
                    + " (default: ${DEFAULT-VALUE}).")
    long seed;
    @Option(names = "--variant", paramLabel = "MIB:SMS",
            description = "Also time cuBLASLt with this workspace (MiB, 0.." + Variant.MAX_WORKSPACE_MIB + ") and"
                    + " SM_COUNT_TARGET (0 = not set), interleaved round-robin with the default ("
                    + (GemmRunner.RECOMMENDED_WORKSPACE_BYTES >> 20) + " MiB, not set) on the same operands; each is"
                    + " recorded as method cublaslt:ws<MIB>m:sm<SMS> with the heuristic's first algorithm."
                    + " Replayed in turn, two different kernels run at other clocks than each alone at the power"
                    + " limit (cuBLASLt's first at 16384x13824x5120 read 5% slow beside another; H200): compare"
                    + " different algorithms in plain runs. Repeatable. Default: none.")
    List<String> variantWords;
    @Option(names = "--call", paramLabel = "MIB:SMS",
            description = "The workspace (MiB) and SM_COUNT_TARGET (0 = not set) of the main cuBLASLt call (method"
                    + " cublaslt, tuned as UB_GEMM_TUNING says), e.g. 0:132 for the settings PyTorch passes."
                    + " Default: " + (GemmRunner.RECOMMENDED_WORKSPACE_BYTES >> 20) + ":0, what ubuf's GEMMs use.")
    String callWord;
    @Option(names = "--serve", description = "Read shapes (M,K,N or gemm:M,K,N) from standard input, one per line,"
            + " and answer each on standard output with its records, one JSON object per line after 'RECORD ', then a"
            + " line 'DONE' (errors: 'ERROR message'). For scripts/gemm-parity.py, which alternates this with"
            + " bench/torch/torch_gemm_serve.py shape by shape on one GPU.")
    boolean serve;
    @Option(names = "--retune", description = "Before timing a shape, tune its GEMM again offline: time every"
            + " candidate cuBLASLt proposes (graph replays after the heat, round-robin), then time the best few each"
            + " in its own steady state, as this command times a GEMM, and keep the fastest in the tuning file"
            + " (UB_GEMM_TUNING_FILE or the cache directory), replacing what the online tuner chose there, for every"
            + " later run of that GEMM kind (the ops' too). Needs GEMM tuning on. Each shape is retuned once per"
            + " process.")
    boolean retune;
    @Option(names = "--retune-margin", defaultValue = "0.01", paramLabel = "FRACTION",
            description = "With --retune: how much faster than cuBLASLt's first choice another candidate must time"
                    + " to replace it, 0 to 0.5 (default: ${DEFAULT-VALUE}).")
    double retuneMargin;
    @Option(names = "--fp8", paramLabel = "ACCUMULATION",
            description = "Time the FP8 GEMM instead, as torch._scaled_mm runs it: E4M3 A[M,K] times E4M3 B[N,K]^T"
                    + " into bf16 C[M,N] (the layout FP8 needs on Hopper), both quantized with scale 1 from the bf16"
                    + " operands this command draws (B drawn as [N,K]); ACCUMULATION is split (Transformer Engine's"
                    + " setting for dgrad and wgrad) or fast (its forward setting). Records dtype fp8_e4m3 and"
                    + " fp8_accumulation. Dimensions must be multiples of 16. Not with --dtype other than bf16,"
                    + " --variant or --retune. Default: none.")
    String fp8Word;
    @Mixin
    ResultsOutput results;

    /** The accumulation of --fp8 (null without it), and the dtype name the records carry. */
    private Boolean fp8Fast;
    private String dtypeName;

    /** A cuBLASLt call setting timed beside the default: its workspace and SM_COUNT_TARGET. */
    record Variant(long workspaceMib, int smCountTarget) {
        static final long MAX_WORKSPACE_MIB = 1024;

        static Variant parse(String word) {
            String[] parts = word.split(":", -1);
            if (parts.length != 2) {
                throw new IllegalArgumentException("a variant is MIB:SMS (e.g. 0:132), got '" + word + "'");
            }
            long mib;
            int sms;
            try {
                mib = Long.parseLong(parts[0].trim());
                sms = Integer.parseInt(parts[1].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("a variant is MIB:SMS with two integers, got '" + word + "'");
            }
            if (mib < 0 || mib > MAX_WORKSPACE_MIB) {
                throw new IllegalArgumentException("workspace MiB must be 0.." + MAX_WORKSPACE_MIB + ", got '" + word
                        + "'");
            }
            if (sms < 0) {
                throw new IllegalArgumentException("SM_COUNT_TARGET must be >= 0 (0 = not set), got '" + word + "'");
            }
            return new Variant(mib, sms);
        }

        String method() {
            return "cublaslt:ws" + workspaceMib + "m:sm" + smCountTarget;
        }
    }

    List<Variant> variants() {
        List<Variant> vs = new ArrayList<>();
        if (variantWords != null) {
            for (String w : variantWords) {
                try {
                    Variant v = Variant.parse(w);
                    if (!vs.contains(v)) {
                        vs.add(v);
                    }
                } catch (IllegalArgumentException e) {
                    throw OptionChecks.invalid(spec, "--variant: " + e.getMessage());
                }
            }
        }
        return vs;
    }

    /** M, K, N of each shape to time, in order, without repeats. */
    List<long[]> shapes() {
        boolean single = OptionChecks.given(spec, "--m") || OptionChecks.given(spec, "--n")
                || OptionChecks.given(spec, "--k");
        if ((shapeWords != null ? 1 : 0) + (fromSweep ? 1 : 0) + (single ? 1 : 0) > 1) {
            throw OptionChecks.invalid(spec, "give shapes one way: --m/--k/--n, --shapes or --from-sweep");
        }
        if (!fromSweep) {
            for (String o : new String[]{"--tp", "--tokens", "--models", "--small"}) {
                if (OptionChecks.given(spec, o)) {
                    throw OptionChecks.invalid(spec, o + " selects sweep shapes: it needs --from-sweep");
                }
            }
        }
        List<long[]> all = new ArrayList<>();
        if (fromSweep) {
            OptionChecks.within(spec, "--tp", tp, 2, OverlapBenchOptions.MAX_TP);
            for (OverlapShape s : sweep.shapes(tp, t)) {
                all.add(new long[]{s.m(), s.k(), s.n()}); // what the op's one-call GEMM multiplies, per rank
            }
        } else if (shapeWords != null) {
            for (String phrase : shapeWords) {
                for (String word : phrase.trim().split("\\s+")) {
                    if (word.isEmpty()) {
                        continue;
                    }
                    try {
                        all.add(BenchShapes.mkn(word.startsWith("gemm:") ? word.substring(5) : word));
                    } catch (IllegalArgumentException e) {
                        throw OptionChecks.invalid(spec, "--shapes: " + e.getMessage());
                    }
                }
            }
            if (all.isEmpty()) {
                throw OptionChecks.invalid(spec, "--shapes: no shape given");
            }
        } else {
            OptionChecks.atLeast(spec, "--m", m, 1);
            OptionChecks.atLeast(spec, "--n", n, 1);
            OptionChecks.atLeast(spec, "--k", k, 1);
            all.add(new long[]{m, k, n});
        }
        Set<List<Long>> seen = new LinkedHashSet<>();
        for (long[] s : all) {
            try {
                checkFp8Shape(s);
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, e.getMessage());
            }
            seen.add(List.of(s[0], s[1], s[2]));
        }
        return seen.stream().map(s -> new long[]{s.get(0), s.get(1), s.get(2)}).toList();
    }

    @Override
    public Integer call() throws Exception {
        if (serve && (shapeWords != null || fromSweep || listShapes)) {
            throw OptionChecks.invalid(spec, "--serve reads its shapes from standard input: leave out --shapes,"
                    + " --from-sweep and --list-shapes");
        }
        checkFp8Options();
        List<long[]> shapes = serve ? List.of() : shapes();
        List<Variant> variants = variants();
        Variant call = new Variant(GemmRunner.RECOMMENDED_WORKSPACE_BYTES >> 20, 0);
        if (callWord != null) {
            try {
                call = Variant.parse(callWord);
            } catch (IllegalArgumentException e) {
                throw OptionChecks.invalid(spec, "--call: " + e.getMessage());
            }
        }
        Gemm.Options callOptions = fp8Fast == null ? Gemm.Options.NN.withSmCountTarget(call.smCountTarget())
                : Gemm.Options.NT.withSmCountTarget(call.smCountTarget()).withFp8FastAccumulation(fp8Fast);
        if (listShapes) {
            spec.commandLine().getOut().println(String.join(" ", shapes.stream()
                    .map(s -> "gemm:" + s[0] + "," + s[1] + "," + s[2]).toList()));
            return 0;
        }
        OptionChecks.atLeast(spec, "--device", device, 0);
        timing.check();
        Optional<Path> out = results.checkWritable();
        GemmTuning tuning = GemmTuning.from(UbufEnvironment.fromSystem()); // bad variables fail before GPU work
        if (OptionChecks.given(spec, "--retune-margin") && !retune) {
            throw OptionChecks.invalid(spec, "--retune-margin applies to --retune");
        }
        if (retune) {
            if (!(retuneMargin >= 0 && retuneMargin <= 0.5)) {
                throw OptionChecks.invalid(spec, "--retune-margin must be 0 to 0.5, got " + retuneMargin);
            }
            if (!tuning.enabled()) {
                throw OptionChecks.invalid(spec, "--retune keeps its choices in the GEMM tuning file, but tuning is"
                        + " off (UB_GEMM_TUNING=0)");
            }
        }
        // UB_GEMM_TUNING applies as it does to the ops' GEMMs, so parity is measured on what they run.
        GemmTuner tuner = new GemmTuner(tuning);
        CudaContext ctx = CudaContext.retainPrimary(device);
        List<Gemm> variantGemms = new ArrayList<>();
        try (KernelLibrary lib = KernelLibrary.load(ctx);
             CudaStream s = ctx.createStream(StreamPriority.NORMAL);
             Gemm gemm = new Gemm(ctx, call.workspaceMib() << 20, tuner)) {
            for (Variant v : variants) {
                // Heuristic-first: the variants show what the call's settings do, not what tuning picks.
                variantGemms.add(new Gemm(ctx, v.workspaceMib() << 20, GemmTuner.disabled()));
            }
            DeviceKernels kernels = new DeviceKernels(lib);
            Fp8Kernels fp8Kernels = new Fp8Kernels(lib);
            ResultsFile rf = new ResultsFile(ctx.device().name(), ResultsFile.commitFromEnvironment());
            String version = Gemm.cublasLtVersion();
            java.util.Iterator<long[]> source = serve ? servedShapes() : shapes.iterator();
            Map<List<Long>, String> algorithms = new java.util.HashMap<>();
            while (source.hasNext()) {
                long[] shape = source.next();
                List<Map<String, Object>> made = new ArrayList<>();
                long sm = shape[0];
                long sk = shape[1];
                long sn = shape[2];
                boolean fp8 = fp8Fast != null;
                try (DeviceBuffer a = ctx.allocate(sm * sk * t.bytes());
                     DeviceBuffer b = ctx.allocate(sk * sn * t.bytes());
                     DeviceBuffer c = ctx.allocate(sm * sn * t.bytes());
                     DeviceBuffer a8 = fp8 ? ctx.allocate(sm * sk) : null;
                     DeviceBuffer b8 = fp8 ? ctx.allocate(sk * sn) : null;
                     DeviceBuffer scalars = fp8 ? ctx.allocate(256) : null) {
                    TensorView av = TensorView.of(a, sm, sk, t);
                    // FP8 on Hopper takes B as [N,K]: drawn in that shape, so PyTorch's side draws the same matrix.
                    TensorView bv = fp8 ? TensorView.of(b, sn, sk, t) : TensorView.of(b, sk, sn, t);
                    TensorView cv = TensorView.of(c, sm, sn, t);
                    // The overlap benchmarks' operands (OperandBuffers): uniform in [-1, 1), B scaled by 1/sqrt(K).
                    kernels.fillRandom(av, seed, 1f, s);
                    kernels.fillRandom(bv, seed + 1, 1f / (float) Math.sqrt(sk), s);
                    Runnable multiply;
                    if (fp8) {
                        QuantizedGemmOperands q = QuantizedGemmOperands.quantize(kernels, fp8Kernels, av, bv, a8, b8, scalars, s);
                        multiply = () -> gemm.multiply(q.a8(), q.b8(), cv, 1f, 0f, callOptions, q.scales(), s);
                    } else {
                        multiply = () -> gemm.multiply(av, bv, cv, 1f, 0f, callOptions, s);
                    }
                    GemmTuner.Retuned retuned = null;
                    double[] screen = null;
                    if (retune && !algorithms.containsKey(List.of(sm, sk, sn))) { // once per shape and process
                        GraphCandidateBench bench = timing.candidates(ctx, s, sm, sn, sk);
                        retuned = gemm.retune(av, bv, cv, 0f, callOptions, bench, retuneMargin);
                        screen = bench.lastScreen();
                        algorithms.put(List.of(sm, sk, sn), "retuned");
                        GemmTuner.Retuned r = retuned;
                        (serve ? spec.commandLine().getErr() : spec.commandLine().getOut()).printf(
                                "retuned %dx%dx%d (MxKxN): candidate %d of %d, %.4f ms (cuBLASLt's first %.4f ms)%n",
                                sm, sk, sn, r.chosen(), r.millis().size(), r.millis().get(r.chosen()),
                                r.millis().get(0));
                    }
                    int timedBefore = tuner.timedCount();
                    int reusedBefore = tuner.reusedCount();
                    LinkedHashMap<String, Runnable> candidates = new LinkedHashMap<>();
                    Map<String, Variant> settings = new java.util.HashMap<>();
                    candidates.put("cublaslt", multiply);
                    settings.put("cublaslt", call);
                    for (int i = 0; i < variants.size(); i++) {
                        Gemm g = variantGemms.get(i);
                        Variant v = variants.get(i);
                        Gemm.Options o = Gemm.Options.NN.withSmCountTarget(v.smCountTarget());
                        candidates.put(v.method(), () -> g.multiply(av, bv, cv, 1f, 0f, o, s));
                        settings.put(v.method(), v);
                    }
                    EventTimer.Timing timed = timing.time(ctx, s, sm, sn, sk, candidates);
                    Map<String, DescriptiveStatistics> stats = timed.stats();
                    // A shape served again runs the plan this process made the first time: keep that label.
                    String algorithm = algorithms.computeIfAbsent(List.of(sm, sk, sn), key -> !tuning.enabled()
                            ? "heuristic-first" : tuner.timedCount() > timedBefore ? "tuned-now"
                            : tuner.reusedCount() > reusedBefore ? "tuned-reused" : "heuristic-only-candidate");
                    for (var e : stats.entrySet()) {
                        boolean main = e.getKey().equals("cublaslt");
                        Map<String, Object> rec = record(e.getKey(), e.getValue(), sm, sk, sn, settings.get(e.getKey()),
                                main ? algorithm : "heuristic-first", tuning.enabled() && main, version,
                                List.copyOf(stats.keySet()), timed);
                        if (main && !fp8) { // the rank is reported for GEMMs that are not FP8
                            gemm.heuristicRank(av, bv, cv, 0f, callOptions)
                                    .ifPresent(r -> rec.put("heuristic_rank", r)); // 0: cuBLASLt's first choice
                            if (retuned != null) {
                                // Steady-state times of the finalists; null: screened out or failed (JSON has no
                                // NaN or Infinity). The screen's round-robin times of every candidate beside them.
                                rec.put("retune_candidates_ms", retuned.millis().stream()
                                        .map(x -> Double.isFinite(x) ? x : null).toList());
                                rec.put("retune_screen_ms", java.util.Arrays.stream(screen)
                                        .mapToObj(x -> Double.isFinite(x) ? x : null).toList());
                                rec.put("retune_chosen", retuned.chosen());
                                rec.put("retune_margin", retuneMargin);
                            }
                        }
                        rf.add(rec);
                        made.add(rec);
                    }
                    if (out.isPresent()) {
                        rf.write(out.get()); // after every shape, as the sweep does
                    }
                }
                if (serve) {
                    for (Map<String, Object> rec : made) {
                        spec.commandLine().getOut().println("RECORD " + ResultsFile.jsonLine(rec));
                    }
                    spec.commandLine().getOut().println("DONE");
                    spec.commandLine().getOut().flush();
                }
            }
        } finally {
            RuntimeException failure = null;
            for (int i = variantGemms.size() - 1; i >= 0; i--) {
                try {
                    variantGemms.get(i).close();
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
            ctx.close();
            if (failure != null) {
                throw failure;
            }
        }
        return 0;
    }

    /** Checks --fp8 against the options it excludes and sets the accumulation and the records' dtype name. */
    private void checkFp8Options() {
        if (fp8Word == null) {
            fp8Fast = null;
            dtypeName = t.shortName();
            return;
        }
        fp8Fast = switch (fp8Word.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "split" -> false;
            case "fast" -> true;
            default -> throw OptionChecks.invalid(spec, "--fp8 is split or fast, got '" + fp8Word + "'");
        };
        if (t != DType.BF16) {
            throw OptionChecks.invalid(spec, "--fp8 quantizes bf16 operands and writes bf16: --dtype must be bf16,"
                    + " got " + t.shortName());
        }
        if (variantWords != null) {
            throw OptionChecks.invalid(spec, "--variant is not supported with --fp8");
        }
        if (retune) {
            throw OptionChecks.invalid(spec, "--retune is not supported with --fp8");
        }
        dtypeName = "fp8_e4m3";
    }

    /** With --fp8, a shape whose dimensions are not all multiples of 16 (what FP8 needs on Hopper) is refused. */
    private long[] checkFp8Shape(long[] mkn) {
        if (fp8Fast != null && (mkn[0] % 16 != 0 || mkn[1] % 16 != 0 || mkn[2] % 16 != 0)) {
            throw new IllegalArgumentException("--fp8: every dimension must be a multiple of 16 for FP8 on Hopper,"
                    + " got " + mkn[0] + "," + mkn[1] + "," + mkn[2]);
        }
        return mkn;
    }

    /** Shapes read from standard input as they come (--serve); a line that is not a shape is answered with ERROR. */
    private java.util.Iterator<long[]> servedShapes() {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in,
                java.nio.charset.StandardCharsets.UTF_8));
        return new java.util.Iterator<>() {
            private long[] next;

            @Override
            public boolean hasNext() {
                while (next == null) {
                    String line;
                    try {
                        line = in.readLine();
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    if (line == null) {
                        return false;
                    }
                    String word = line.trim();
                    if (word.isEmpty()) {
                        continue;
                    }
                    try {
                        next = checkFp8Shape(BenchShapes.mkn(word.startsWith("gemm:") ? word.substring(5) : word));
                    } catch (IllegalArgumentException e) {
                        spec.commandLine().getOut().println("ERROR " + e.getMessage());
                        spec.commandLine().getOut().flush();
                    }
                }
                return true;
            }

            @Override
            public long[] next() {
                if (!hasNext()) {
                    throw new java.util.NoSuchElementException();
                }
                long[] s = next;
                next = null;
                return s;
            }
        };
    }

    private Map<String, Object> record(String method, DescriptiveStatistics st, long sm, long sk, long sn, Variant v,
                                       String algorithm, boolean tuned, String version, List<String> timedTogether,
                                       EventTimer.Timing timed) {
        double ms = st.getPercentile(50);
        double tflops = 2.0 * sm * sn * sk / (ms * 1e-3) / 1e12;
        (serve ? spec.commandLine().getErr() : spec.commandLine().getOut()).printf(
                "gemm %s %dx%dx%d (MxKxN) %s: median %.4f ms (p10 %.4f, p90 %.4f) %.1f TFLOP/s, cuBLASLt %s, %s%n",
                dtypeName, sm, sk, sn, method, ms, st.getPercentile(10), st.getPercentile(90), tflops, version,
                algorithm);
        Map<String, Object> rec = ResultsFile.record("gemm", method, 1, dtypeName, sm, sn, sk, ms);
        rec.put("p10_ms", st.getPercentile(10));
        rec.put("p90_ms", st.getPercentile(90));
        rec.put("tflops", tflops);
        timing.record(rec, timed);
        rec.put("timing", "sequential"); // the GEMM alone, not inside an op (round-robin over the methods)
        if (timedTogether.size() > 1) {
            rec.put("interleaved_with", timedTogether);
        }
        rec.put("seed", seed);
        rec.put("init", "uniform");
        rec.put("tuned", tuned);
        rec.put("algorithm", algorithm);
        rec.put("cublaslt", version);
        rec.put("workspace_mib", v.workspaceMib());
        rec.put("sm_count_target", v.smCountTarget());
        if (fp8Fast != null) {
            rec.put("fp8_accumulation", fp8Fast ? "fast" : "split");
            rec.put("layout", "nt");
            rec.put("out_dtype", t.shortName());
            rec.put("quantize_scale", 1.0);
        }
        if (fromSweep) {
            rec.put("sweep", true);
        }
        return rec;
    }
}
