package dev.ubuf.layers.tp;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.HardwareQueues;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.kernels.LayerKernels;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.MethodRegistry;
import dev.ubuf.op.OverlapOp;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.devicekernels.Fp8Kernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.Tracer;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What the tensor-parallel layers of one rank share (Transformer Engine's {@code initialize_ub}, as an object): the
 * communicator, the overlap configuration and each GEMM's {@link OverlapChoice}, the dtype, the maximum token count
 * every layer sizes its buffers and ops for, the kernels, one GEMM for the caller's stream, and a high-priority side
 * stream on which bulk collectives run beside the layers' GEMMs. Each layer owns its ops ({@link OpTable}); the
 * context owns nothing of theirs. Not thread-safe: one rank's layers run on one thread. Close it after its layers.
 */
public final class TpContext implements AutoCloseable {
    private final TpCommunicator comm;
    private final UbConfig config;
    private final DType dtype;
    private final long maxTokens;
    private final PlannerSettings plannerSettings;
    private final Map<GemmName, OverlapChoice> choices = new EnumMap<>(GemmName.class);
    private final KernelLibrary library;
    private final DeviceKernels kernels;
    private final LayerKernels layerKernels;
    private final Gemm gemm;
    private final CudaStream side;
    private final CudaEvent forked;
    private final CudaEvent joined;
    private final MethodRegistry registry;
    /** The FP8 scales of the layers' tensors when the configuration turns FP8 on, else null. */
    private final Fp8DeviceScales fp8;
    /** How this context's collectives run, chosen when it was made. */
    private final Collectives configured;
    /** How they run now: {@link #configured}, except during {@link #initialize}'s tuning pass (none). */
    private Collectives collectives;
    private Planner planner;
    /** The ops of the layers made with this context, one table per linear layer, in order of making. */
    private final List<OpTable<OverlapOp>> opTables = new ArrayList<>();
    /** Each {@code method: auto} op the planner decided, by {@link #plannedKey}, in order of deciding. */
    private final Map<String, PlannedOp> planned = new LinkedHashMap<>();
    /** Candidates that replace the planner's choice for a planned op ({@link StepCheck}), by {@link #plannedKey}. */
    private Map<String, Candidate> overrides = Map.of();
    private StepCheck.Result stepCheck;
    /** Where the layers' work is traced. Not owned. */
    private Tracer tracer = Tracer.NOOP;
    /** Whether the ops signal with graph-safe kernels, so that a step can be captured as a CUDA graph. */
    private final boolean graphCapturable;
    /** Where the layers' gradient reductions go while deferred ({@link #deferGradientReductions}), else null. */
    private GradientReductions deferred;
    private boolean closed;

    private TpContext(TpCommunicator comm, UbConfig config, DType dtype, long maxTokens, PlannerSettings ps,
                      Collectives collectives, boolean graphCapturable) {
        this.comm = comm;
        this.graphCapturable = graphCapturable;
        this.configured = collectives;
        this.collectives = configured;
        this.config = config;
        this.dtype = dtype;
        this.maxTokens = maxTokens;
        this.plannerSettings = ps;
        for (GemmName g : GemmName.values()) {
            choices.put(g, OverlapChoice.resolve(config, g));
        }
        boolean overlapped = choices.values().stream().anyMatch(OverlapChoice::overlapped);
        Map<String, String> env = HardwareQueues.effective(System.getenv());
        oneHardwareQueue(env, overlapped).or(() -> fewQueuesForGraphs(env, graphCapturable && overlapped))
                .ifPresent(why -> {
                    throw new IllegalStateException(why);
                });
        this.registry = MethodRegistry.load();
        CudaContext ctx = comm.context().makeCurrent();
        KernelLibrary lib = KernelLibrary.load(ctx);
        Gemm g = null;
        CudaStream s = null;
        CudaEvent f = null;
        try {
            g = new Gemm(ctx, comm.gemmTuner());
            s = ctx.createStream(StreamPriority.HIGH);
            f = ctx.createEvent(false);
            this.joined = ctx.createEvent(false);
        } catch (RuntimeException e) {
            for (AutoCloseable c : new AutoCloseable[]{f, s, g}) {
                closeQuietly(c, e);
            }
            lib.close();
            throw e;
        }
        this.library = lib;
        this.kernels = new DeviceKernels(lib);
        this.layerKernels = new LayerKernels(lib);
        this.gemm = g;
        this.side = s;
        this.forked = f;
        this.fp8 = config.fp8().map(r -> new Fp8DeviceScales(this, new Fp8ScaleTable(r), new Fp8Kernels(lib)))
                .orElse(null);
    }

    /**
     * The context of this rank (collective only through the ops its layers make later).
     *
     * @param config    the ub_* configuration; its {@code tensor_model_parallel_size} must be the communicator's tp
     * @param maxTokens the most tokens (sequence x batch) any call will use, a multiple of tp
     * @param planner   how {@code method: auto} GEMMs are planned
     */
    public static TpContext create(TpCommunicator comm, UbConfig config, DType dtype, long maxTokens,
                                   PlannerSettings planner) {
        Objects.requireNonNull(comm, "comm");
        checkArguments(comm.tp(), config, dtype, maxTokens);
        return create(comm, config, dtype, maxTokens, planner, Collectives.nccl());
    }

    /**
     * A context whose layers communicate as {@code collectives} says ({@link #create} uses
     * {@link Collectives#nccl()}). Making and closing the layers' ops is collective whatever it says.
     */
    public static TpContext create(TpCommunicator comm, UbConfig config, DType dtype, long maxTokens,
                                   PlannerSettings planner, Collectives collectives) {
        return create(comm, config, dtype, maxTokens, planner, collectives, false);
    }

    /**
     * A context whose steps can be captured as CUDA graphs ({@code graphCapturable}, for
     * {@link dev.ubuf.layers.train.Trainer#capture}): its ops signal with one-thread kernels that count calls on the
     * device instead of stream memory operations with host sequence numbers ({@link ExecutionSettings#graphSafe}), and
     * the planner measures and chooses among such ops (atomic methods are not graph-safe and are left out). Eager
     * steps run as well on such a context.
     */
    public static TpContext create(TpCommunicator comm, UbConfig config, DType dtype, long maxTokens,
                                   PlannerSettings planner, Collectives collectives, boolean graphCapturable) {
        Objects.requireNonNull(comm, "comm");
        checkArguments(comm.tp(), config, dtype, maxTokens);
        return new TpContext(comm, config, dtype, maxTokens, Objects.requireNonNull(planner, "planner"),
                Objects.requireNonNull(collectives, "collectives"), graphCapturable);
    }

    /** Whether this context's steps can be captured as CUDA graphs (its ops are graph-safe). */
    public boolean graphCapturable() {
        return graphCapturable;
    }

    /** How this context's layers communicate (as it was made). */
    public Collectives collectives() {
        return configured;
    }

    /**
     * Initialises this rank's layers (collective, TE's {@code initialize_ub}; call it once, after making every layer
     * of the context and before the first step, with the stream the steps will use): makes every op for the maximum
     * token count (the planner measures the candidates of {@code method: auto} GEMMs now), then tunes every GEMM a
     * step at the maximum token count runs (fprop, dgrad and wgrad, each chunk of each overlapped op with its SM
     * budget) in one forward and backward of each layer on zeros with its collectives off, and the ranks agree on
     * each algorithm ({@link TpCommunicator#tuneGemms}). From then on no step times a GEMM or waits for the GPU to
     * tune: a GEMM the initialisation did not see (another token count, an input at another alignment) runs
     * cuBLASLt's first choice untimed and is reported ({@link dev.ubuf.gemm.GemmTuner#untunedCount()}).
     *
     * <p>With {@code UB_STEP_CHECK=1}, where the planner measured a choice that runs its chunk GEMMs on several
     * streams, whole steps check it against the one-stream candidates ({@link StepCheck}, with the collectives on, on
     * random inputs; opt-in while a hang after it is not understood): the planner
     * times each op alone, where GEMMs on several streams may tie with one stream, but in a step they contend with
     * what else runs. Set the parameters first ({@link TpLayer#initialize}) so the check multiplies real weights.
     *
     * <p>Parameters keep their values and every gradient is zero afterwards. FP8 scales are as before and the amaxes
     * zero: the tuning pass quantizes zero inputs and whatever the weights hold then (with FP8 the parameters are set
     * after this), so its amaxes are discarded rather than left for the first step to record (the check does not run
     * with FP8).
     */
    public void initialize(List<? extends TpLayer> layers, CudaStream stream) {
        Objects.requireNonNull(layers, "layers");
        makeCurrent();
        for (TpLayer l : layers) {
            l.prepare();
        }
        List<DeviceBuffer> zeros = new ArrayList<>();
        try {
            List<TensorView[]> operands = new ArrayList<>();
            for (TpLayer l : layers) {
                operands.add(new TensorView[]{zeros(zeros, l.inputShape(maxTokens), stream),
                        zeros(zeros, l.outputShape(maxTokens), stream)});
            }
            tunePass(layers, operands, stream);
            if (StepCheck.applies(this, plannerSettings)) {
                stepCheck = StepCheck.run(this, layers, operands, stream);
            }
            for (TpLayer l : layers) {
                l.zeroGrad(stream);
            }
            if (fp8 != null) {
                fp8.resetAmaxes(stream);
            }
            comm.await(stream, () -> "layer initialisation");
        } finally {
            makeCurrent();
            for (int i = zeros.size() - 1; i >= 0; i--) {
                zeros.get(i).close();
            }
        }
    }

    /**
     * One forward and backward of each layer on {@code operands} (input, output gradient) with the collectives off,
     * tuning every GEMM it runs (collective, {@link TpCommunicator#tuneGemms}).
     */
    void tunePass(List<? extends TpLayer> layers, List<TensorView[]> operands, CudaStream stream) {
        collectives = Collectives.none(); // nothing waits on a peer while GEMMs are timed
        try {
            comm.tuneGemms(stream, () -> {
                for (int i = 0; i < layers.size(); i++) {
                    layers.get(i).forward(operands.get(i)[0], stream);
                    layers.get(i).backward(operands.get(i)[1], stream);
                }
            });
        } finally {
            collectives = configured;
        }
    }

    /** What {@link #initialize}'s check of the planner's choices in whole steps found, if one ran. */
    public Optional<StepCheck.Result> stepCheck() {
        return Optional.ofNullable(stepCheck);
    }

    /** An op the planner decided: the GEMM, its shape, how it executes and the decision. */
    record PlannedOp(GemmName gemm, OverlapShape shape, ExecutionSettings exec, Planner.Decision decision) {
    }

    static String plannedKey(GemmName gemm, OverlapShape shape) {
        return gemm.teName() + " | " + shape.key();
    }

    /**
     * What each {@code method: auto} GEMM runs, in order of deciding: "gemm | shape" to the method's label and where
     * the choice came from (the planner's measurement or its cache, or the step check that replaced it). Empty until
     * {@link #initialize} (or a step) made the ops.
     */
    public Map<String, String> autoChoices() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, PlannedOp> e : planned.entrySet()) {
            Candidate replaced = overrides.get(e.getKey());
            Planner.Decision d = e.getValue().decision();
            out.put(e.getKey(), replaced != null ? replaced.label() + " (step check; the planner chose "
                    + d.chosen().label() + ")" : d.chosen().label() + " (" + d.source() + ")");
        }
        return java.util.Collections.unmodifiableMap(out);
    }

    /** The planner's decisions so far, in order of deciding. */
    List<PlannedOp> planned() {
        return List.copyOf(planned.values());
    }

    /**
     * Makes {@code replace} (by {@link #plannedKey}) the candidates those ops run instead of the planner's choice,
     * and closes the ops of their GEMMs in every layer, so they are made again (collective: every rank the same).
     */
    void override(Map<String, Candidate> replace, Set<GemmName> gemms) {
        overrides = Map.copyOf(replace);
        for (OpTable<OverlapOp> t : opTables) {
            t.discard(gemms);
        }
    }

    /** A layer's op table, tracked so that {@link #override} can close its ops. */
    OpTable<OverlapOp> opTable(long maxTokens) {
        OpTable<OverlapOp> t = new OpTable<>(tp(), maxTokens);
        opTables.add(t);
        return t;
    }

    private TensorView zeros(List<DeviceBuffer> owned, TpLayer.Shape shape, CudaStream stream) {
        DeviceBuffer b = makeCurrent().allocate(shape.rows() * shape.cols() * dtype.bytes(), "initialisation zeros");
        owned.add(b);
        TensorView v = TensorView.of(b, shape.rows(), shape.cols(), dtype);
        kernels.fillBits(v, 0, stream);
        return v;
    }

    /** What {@link #create} checks before touching the GPU. */
    public static void checkArguments(int tp, UbConfig config, DType dtype, long maxTokens) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(dtype, "dtype");
        if (tp < 2) {
            throw new IllegalArgumentException("tensor-parallel layers need tp >= 2, the communicator has " + tp
                    + " rank(s)");
        }
        if (config.tensorModelParallelSize() != tp) {
            throw new IllegalArgumentException("the configuration's tensor_model_parallel_size is "
                    + config.tensorModelParallelSize() + " but the communicator has " + tp + " ranks");
        }
        if (dtype != DType.FP32 && dtype != DType.FP16 && dtype != DType.BF16) {
            throw new IllegalArgumentException("dtype must be fp32, fp16 or bf16, got " + dtype.shortName());
        }
        if (maxTokens < tp || maxTokens % tp != 0) {
            throw new IllegalArgumentException("maxTokens = " + maxTokens + " must be a positive multiple of tp = "
                    + tp);
        }
        if (config.fp8Enabled() && maxTokens % FP8_ALIGNMENT != 0) {
            throw new IllegalArgumentException("maxTokens = " + maxTokens + " must be a multiple of "
                    + FP8_ALIGNMENT + " with fp8: the wgrad GEMMs multiply over the tokens, and cuBLASLt's FP8 GEMMs"
                    + " need 16-byte rows");
        }
    }

    /**
     * Why overlapped layers must not run with {@code env}: CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron-LM sets it for its
     * own overlap) puts every stream of the context on one hardware queue, and the overlapped LayerNormMLP step then
     * never finished (8B dims, tp 4, 2 of 2 runs on 4x H200 at 4870ee0; the ops alone, measured by the planner at
     * initialisation, completed). Refused before any GPU work rather than left to hang; ubuf orders its streams with
     * events and, unset, sets 32 queues ({@link HardwareQueues}). Empty when fine or when nothing overlaps.
     */
    static Optional<String> oneHardwareQueue(Map<String, String> env, boolean overlapped) {
        String v = env.get(HardwareQueues.VARIABLE);
        if (!overlapped || v == null || !v.trim().equals("1")) {
            return Optional.empty();
        }
        return Optional.of("CUDA_DEVICE_MAX_CONNECTIONS=1 puts every CUDA stream on one hardware queue, and the"
                + " overlapped layer step hangs there (a known open bug): unset it (ubuf then uses "
                + HardwareQueues.MOST + " queues; its streams are ordered by events), or turn overlap off"
                + " (ub_tp_comm_overlap: false)");
    }

    /**
     * Why graph-capturable overlapped layers must not run with {@code env}: their ops wait for peers with spinning
     * one-thread kernels, and a stream's work behind such a wait holds its hardware queue; with the driver's default
     * of 8 queues for a context's many streams, a signal a peer waits for can sit in a queue behind such work. At 8,
     * 70B-dims LayerNormMLP steps at tp 4 deadlocked in 4 of 4 runs (replays and eager calls) and a 2-layer block at
     * tp 2 at its first call in 2 of 2; at 32 every run completed (session 10, 4x H100). ubuf sets 32 where the
     * variable is unset ({@link HardwareQueues}); {@code env} is as the driver reads it. Empty when
     * fine.
     */
    public static Optional<String> fewQueuesForGraphs(Map<String, String> env, boolean graphOverlapped) {
        if (!graphOverlapped) {
            return Optional.empty();
        }
        String v = env.get(HardwareQueues.VARIABLE);
        try {
            if (v != null && Integer.parseInt(v.trim()) >= HardwareQueues.MOST) {
                return Optional.empty();
            }
        } catch (NumberFormatException e) {
            // reported below with the value
        }
        return Optional.of("graph-capturable overlapped layers need " + HardwareQueues.VARIABLE + "="
                + HardwareQueues.MOST
                + " (set before the process first uses CUDA; it is "
                + (v == null ? "unset, so " + HardwareQueues.DRIVER_DEFAULT : "'" + v + "'")
                + "): their ops wait for peers with spinning kernels, and with fewer hardware queues a signal a peer"
                + " waits for can queue behind such a wait (the steps deadlocked at 8)");
    }

    /** FP8 GEMM dimensions (inner and output columns, and the tokens the wgrad sums over) are multiples of this. */
    public static final int FP8_ALIGNMENT = dev.ubuf.op.Fp8Operands.ALIGNMENT;

    /**
     * With fp8: a GEMM dimension {@code value} named {@code what} must be a multiple of 16 (cuBLASLt's FP8 kernels read
     * 16-byte rows); checked before any GPU work.
     */
    static void checkFp8Dimension(boolean fp8, String layer, String what, long value) {
        if (fp8 && value % FP8_ALIGNMENT != 0) {
            throw new IllegalArgumentException(layer + ": " + what + " = " + value + " must be a multiple of "
                    + FP8_ALIGNMENT + " with fp8 (cuBLASLt's FP8 GEMMs need 16-byte rows of every operand)");
        }
    }

    public TpCommunicator comm() {
        return comm;
    }

    public int tp() {
        return comm.tp();
    }

    public int rank() {
        return comm.rank();
    }

    public UbConfig config() {
        return config;
    }

    public DType dtype() {
        return dtype;
    }

    public long maxTokens() {
        return maxTokens;
    }

    /** How {@code gemm}'s communication runs under this context's configuration. */
    public OverlapChoice choice(GemmName gemm) {
        return choices.get(gemm);
    }

    public DeviceKernels kernels() {
        return kernels;
    }

    /** Whether the layers' GEMMs run in FP8 (the configuration's {@code fp8}). */
    public boolean fp8() {
        return fp8 != null;
    }

    /**
     * The FP8 bookkeeping of this context's layers (their scales and amax histories) as of the last
     * {@link #fp8EndStep}; empty with FP8 off. Under delayed scaling the device keeps the scales and the host table
     * replays the steps' amaxes as they come back, so this waits (UB_TIMEOUT's deadline) for the ended steps' read-backs:
     * call it between steps. A graph-capturable context under delayed scaling keeps that state on the device only
     * and refuses (a replayed step leaves the host no trace).
     */
    public java.util.Optional<Fp8ScaleTable> fp8Table() {
        if (fp8 == null) {
            return java.util.Optional.empty();
        }
        makeCurrent();
        return java.util.Optional.of(fp8.syncedTable());
    }

    /**
     * Puts the FP8 scale tables on the device (once, queued on {@code stream}) before a step is captured as a CUDA
     * graph, so that their first upload is not part of every replay; nothing with FP8 off.
     */
    public void fp8Prepare(CudaStream stream) {
        if (fp8 != null) {
            makeCurrent();
            fp8.prepare(stream);
        }
    }

    Fp8DeviceScales fp8Scales() {
        if (fp8 == null) {
            throw new IllegalStateException("FP8 is off in this context's configuration");
        }
        return fp8;
    }

    /**
     * Ends a training step for FP8 (call after the step's backward, on the stream the layers ran on): under delayed
     * scaling every FP8 tensor's amax of the step is reduced over the TP group and the next step's scales are set on
     * the device (TE does this once per iteration), all queued on the stream without waiting for it; under current
     * scaling, or with FP8 off, it does nothing.
     */
    public void fp8EndStep(CudaStream stream) {
        if (fp8 != null) {
            makeCurrent();
            fp8.endStep(stream);
        }
    }

    /**
     * The end of a training step beside {@code work}: {@code gradients}' reductions (null or empty: none; the
     * all-reduce of the sequence-parallel gradients and their additions), then {@link #fp8EndStep}'s amax reduction and
     * scale update, go on this context's side stream, forked from {@code stream} now, while {@code work} issues on
     * {@code stream} whatever reads neither those gradients nor the FP8 state (the update of every other parameter);
     * then {@code stream} waits for the side stream. With neither, only {@code work} runs. The step's small
     * all-reduces then hide under the update instead of ending the step.
     */
    public void endStepBeside(CudaStream stream, GradientReductions gradients, Runnable work) {
        boolean grads = gradients != null && !gradients.isEmpty();
        if (fp8 == null && !grads) {
            work.run();
            return;
        }
        makeCurrent();
        CudaStream side = fork(stream);
        if (grads) {
            gradients.reduce(side);
        }
        if (fp8 != null) {
            makeCurrent();
            fp8.endStep(side);
        }
        makeCurrent();
        work.run();
        makeCurrent();
        join(stream);
    }

    public LayerKernels layerKernels() {
        return layerKernels;
    }

    /** The GEMM for work on the caller's stream (one at a time: it has one workspace). */
    Gemm gemm() {
        return gemm;
    }

    NcclCommunicator nccl() {
        return comm.nccl();
    }

    /** Makes this communicator's CUDA context current on the calling thread (kernels and allocations need it). */
    CudaContext makeCurrent() {
        return comm.context().makeCurrent();
    }

    /** Options of a layer GEMM that leaves {@code margin} SMs to a collective beside it (0: the whole GPU). */
    private Gemm.Options options(boolean transA, boolean transB, int margin) {
        int sms = margin == 0 ? 0 : Math.max(1, comm.context().device().smCount() - margin);
        return new Gemm.Options(transA, transB, sms, false);
    }

    /** The side stream starts after everything issued so far on {@code main}. */
    CudaStream fork(CudaStream main) {
        forked.record(main);
        side.waitEvent(forked);
        return side;
    }

    /** {@code main} continues after everything issued so far on the side stream. */
    void join(CudaStream main) {
        joined.record(side);
        main.waitEvent(joined);
    }

    /**
     * Traces the layers' work into {@code tracer} from now on: every op call (with its steps on the op's streams),
     * every GEMM, NCCL collective and kernel they issue; {@link Tracer#NOOP} (the default) stops. Names the side
     * stream "side" in the trace. A {@link dev.ubuf.trace.StepTracer} adds two event records per span, so trace a
     * step of its own, not a timed one.
     */
    public void trace(Tracer tracer) {
        this.tracer = Objects.requireNonNull(tracer, "tracer");
        tracer.nameStream(side, "side");
    }

    /** Where the layers' work is traced now ({@link Tracer#NOOP} when it is not). */
    public Tracer tracer() {
        return tracer;
    }

    /** A span around what is issued on {@code stream} until the scope closes, in the context's tracer. */
    public Tracer.Scope span(String name, SpanKind kind, CudaStream stream) {
        return tracer.span(stream, name, kind, null);
    }

    /** Issues {@code op} ({@code gemm}'s) on {@code stream} as the context's {@link Collectives} say. */
    void call(GemmName gemm, OverlapOp op, OperandBindings operands, CudaStream stream) {
        collectives.call(new OverlapCall(gemm, op, operands), tracer, stream);
    }

    /**
     * {@code gemm}'s GEMM on the caller's stream through the context's GEMM: c = op(a) op(b) (+ beta c), where op
     * transposes as {@code transA} / {@code transB} say, leaving {@code margin} SMs to a collective beside it (0: the
     * whole GPU); traced with its shape. FP8 operands make it an FP8 GEMM, dequantized by the scales they carry, each
     * read in the layout cuBLASLt's one FP8 form wants (A[m, k] B[n, k]^T: a transposed copy where the plain layout
     * is the other); c is then in the layer's dtype or fp32. Plain and FP8 operands do not mix.
     */
    void multiply(GemmName gemm, Operand a, boolean transA, Operand b, boolean transB, TensorView c, float beta,
                  int margin, CudaStream stream) {
        switch (a) {
            case Operand.Plain pa when b instanceof Operand.Plain pb -> {
                Gemm.Options o = options(transA, transB, margin);
                try (Tracer.Scope t = tracer.span(stream, gemm.teName() + " GEMM", SpanKind.GEMM,
                        gemmArgs(pa.data(), c, o))) {
                    this.gemm.multiply(pa.data(), pb.data(), c, 1f, beta, o, stream);
                }
            }
            case Operand.Fp8 qa when b instanceof Operand.Fp8 qb -> {
                TensorView x = qa.as(transA, gemm.teName() + " A");
                TensorView y = qb.as(!transB, gemm.teName() + " B");
                Gemm.Options o = options(false, true, margin);
                try (Tracer.Scope t = tracer.span(stream, gemm.teName() + " FP8 GEMM", SpanKind.GEMM,
                        gemmArgs(x, c, o))) {
                    this.gemm.multiply(x, y, c, 1f, beta, o, Gemm.Fp8Scales.of(qa.scaleInverse().address(),
                            qb.scaleInverse().address()), stream);
                }
            }
            default -> throw new IllegalArgumentException(gemm.teName() + ": one GEMM's operands are either all FP8"
                    + " or none, got " + a.getClass().getSimpleName() + " x " + b.getClass().getSimpleName());
        }
    }

    private static Map<String, Object> gemmArgs(TensorView a, TensorView c, Gemm.Options o) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("m", c.rows());
        m.put("n", c.cols());
        m.put("k", o.transA() ? a.rows() : a.cols());
        m.put("transA", o.transA());
        m.put("transB", o.transB());
        if (o.smCountTarget() > 0) {
            m.put("sms", o.smCountTarget());
        }
        return m;
    }

    /**
     * NCCL all-gather of {@code src} (this rank's rows) into {@code dst}; nothing in a timing-only context. FP8 bytes
     * move unchanged as 16-bit words (rows of 16-byte multiples): NCCL has no FP8 type on every version.
     */
    void allGather(TensorView src, TensorView dst, CudaStream stream) {
        if (src.dtype().isReserved()) {
            collectives.allGather(this::nccl, src, dst, src.elements() / 2, DType.FP16, tracer, stream);
        } else {
            collectives.allGather(this::nccl, src, dst, src.elements(), src.dtype(), tracer, stream);
        }
    }

    /** In-place NCCL max of an fp32 tensor over the ranks (FP8 amaxes); nothing in a timing-only context. */
    void allReduceMaxFp32(TensorView t, CudaStream stream) {
        collectives.allReduce(this::nccl, List.of(t), NcclRedOp.MAX, tracer, stream);
    }

    /**
     * Adds the sum over the TP group of {@code partial} (each rank's fp32 partial sums of a sequence-parallel
     * gradient) into {@code grads}, the gradients of {@code parameters}: now, on {@code stream}, or, while a
     * {@link #deferGradientReductions} is open, when it reduces. {@code partial} must keep its values until then.
     */
    void reduceIntoGradients(String name, TensorView partial, TensorView grads, List<Parameter> parameters,
                             CudaStream stream) {
        GradientReductions.Pending p = new GradientReductions.Pending(name, partial, grads, parameters);
        if (deferred != null) {
            deferred.add(p);
            return;
        }
        reduce(List.of(p), stream);
    }

    /**
     * One all-reduce (an NCCL group) of every partial, then each added into its gradients; nothing in NCCL when none.
     */
    void reduce(List<GradientReductions.Pending> pending, CudaStream stream) {
        if (pending.isEmpty()) {
            return;
        }
        makeCurrent();
        List<TensorView> partials = new ArrayList<>(pending.size());
        for (GradientReductions.Pending p : pending) {
            partials.add(p.partial());
        }
        collectives.allReduce(this::nccl, partials, NcclRedOp.SUM, tracer, stream);
        for (GradientReductions.Pending p : pending) {
            try (Tracer.Scope t = span(p.name() + " grads +=", SpanKind.KERNEL, stream)) {
                kernels.sum(List.of(p.partial()), p.grads(), true, stream);
            }
        }
    }

    /**
     * From now until the returned object {@link GradientReductions#reduce reduces} them, the layers' backward leaves
     * the all-reduces of their sequence-parallel gradients (the LayerNorms' gamma and beta, and under FP8 a
     * row-parallel bias, which it sums from each rank's dY shard) to it: Megatron-LM's reduction of such gradients
     * after the backward, issued as one NCCL group, which a training step can run beside the other parameters'
     * update ({@link #endStepBeside}). One at a time.
     */
    public GradientReductions deferGradientReductions() {
        if (deferred != null) {
            throw new IllegalStateException("this context's gradient reductions are already deferred");
        }
        deferred = new GradientReductions(this);
        return deferred;
    }

    /** Called by {@code g} when it stops deferring. */
    void stopDeferring(GradientReductions g) {
        if (deferred == g) {
            deferred = null;
        }
    }

    /** The op for {@code gemm}'s communication on {@code shape}, as this context's choice says (collective). */
    OverlapOp makeOp(GemmName gemm, OverlapShape shape) {
        OverlapChoice c = choice(gemm);
        ExecutionSettings exec = graphCapturable ? c.settings().withGraphSafe(true) : c.settings();
        return switch (c.kind()) {
            case NCCL -> OverlapOp.ncclReference(comm, shape, kernels);
            case PLANNER -> {
                String key = plannedKey(gemm, shape);
                PlannedOp p = planned.get(key);
                if (p == null) {
                    p = new PlannedOp(gemm, shape, exec, planner().decide(comm, shape, kernels, exec));
                    planned.put(key, p);
                }
                yield overrides.getOrDefault(key, p.decision().chosen()).create(comm, shape, kernels, exec);
            }
            case METHOD -> OverlapOp.create(comm, registry.schedule(shape, c.variant().orElseThrow()), kernels,
                    exec);
        };
    }

    /** The planner of {@code method: auto} GEMMs, made on first use. */
    Planner planner() {
        if (planner == null) {
            planner = new Planner(registry, plannerSettings);
        }
        return planner;
    }

    /**
     * Frees the side stream, events, GEMM and kernels after the side stream drained, and the FP8 scale tables after
     * their last copy (queued by {@link #fp8EndStep} on the caller's stream) finished. A graph-capturable context
     * under delayed scaling copies nothing back, so nothing of the caller's stream is tracked there: close it after
     * the steps (and replays) have finished, as the layers' own buffers require anyway.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        makeCurrent();
        RuntimeException failure = null;
        try {
            comm.await(side, () -> "layer side stream (closing)");
        } catch (RuntimeException e) {
            failure = e;
        }
        for (AutoCloseable c : new AutoCloseable[]{fp8, joined, forked, side, gemm, library}) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void closeQuietly(AutoCloseable c, RuntimeException into) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            into.addSuppressed(e);
        }
    }
}
