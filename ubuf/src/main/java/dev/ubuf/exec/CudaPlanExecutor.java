package dev.ubuf.exec;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UbufTimeoutException;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.MatrixSpec;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.TraceSpan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * Issues a {@link Plan} onto CUDA streams: GEMMs through cuBLASLt, copies and signals by the strategies chosen once
 * from the {@link ExecutionSettings} ({@link DataMover}: copy engines or SM copies; {@link Signalling}: stream memory
 * operations or graph-safe kernels). Every run forks from and joins back to the caller's stream, so it composes
 * with the caller's work, and waits for the previous run's join, so consecutive runs from different caller streams
 * never overlap on the scratch or the user buffer. Owns its streams, events, GEMM workspaces and scratch; the user
 * buffer and flags are shared (owned by the op that made this executor).
 */
public final class CudaPlanExecutor implements AutoCloseable {
    private final Plan plan;
    /**
     * Whether a Reduce carries the AddBias after it ({@link #biasFusedSteps}); the system property
     * {@code ubuf.fuseReduceBias=false} issues them apart, for A/B timing in one process.
     */
    static final boolean FUSE_REDUCE_BIAS = !"false".equals(System.getProperty("ubuf.fuseReduceBias"));
    /**
     * Whether a GEMM into a bf16 or fp16 result carries the AddBias after it in its epilogue ({@link #biasFusedSteps});
     * {@code ubuf.fuseGemmBias=false} issues them apart, for A/B timing in one process.
     */
    static final boolean FUSE_GEMM_BIAS = !"false".equals(System.getProperty("ubuf.fuseGemmBias"));
    /** Per step: a Reduce or GEMM that also adds the bias of the AddBias right after it, which then issues nothing. */
    private final boolean[] biasFused;
    /**
     * Whether signals, and waits, that a stream makes in a row go to the signalling strategy as runs
     * ({@link #flagRuns}); {@code ubuf.fuseFlagRuns=false} issues them one by one, for A/B timing.
     */
    static final boolean FUSE_FLAG_RUNS = !"false".equals(System.getProperty("ubuf.fuseFlagRuns"));
    /** Per step: the length of the run of signals or waits it starts, -1 inside a run (issued with it), else 0. */
    private final int[] flagRun;
    private final TpCommunicator comm;
    private final UserBuffer ubuf;
    private final FlagRegion flags;
    private final DeviceKernels kernels;
    private final ExecutionSettings settings;
    private final Signalling signalling;
    private final DataMover mover;
    private final CudaStream[] streams;
    private final Gemm[] gemms;
    private final CudaEvent fork;
    /** Recorded on the caller's stream after a run's joins; the next run's streams wait for it. */
    private final CudaEvent done;
    private final CudaEvent[] joins;
    private final CudaEvent[] events;
    private final DeviceBuffer scratch;
    /** The output before its quantization, for a plan with an FP8 output (else null). */
    private final DeviceBuffer staged;
    /** The quantize kernel, for a plan with an FP8 output (else null). */
    private final dev.ubuf.devicekernels.Fp8Kernels fp8Kernels;
    private final int[][] sendsPerCall;
    private final int[][] sentThisCall;
    private int calls;
    private boolean doneRecorded;
    private boolean closed;
    /** Everything this executor made, in order of making: freed in reverse by {@link #close()}. */
    private final Closer owned = new Closer("plan executor");
    /** Set when streams still ran after the domain's waits were released: their memory must stay allocated. */
    private boolean undrained;
    /** Per-step timing events when tracing (start, end), plus the call's start; null when off. */
    private CudaEvent[][] traceEvents;
    private CudaEvent traceOrigin;

    private final int[] senderOfFlag;
    /** Per stream: the flag and value its last issued wait needs, for timeout reports (-1: none). */
    private final int[] pendingFlag;
    private final int[] pendingValue;
    /** The launcher of the plan's atomic GEMM steps (null when it has none), and the first step's arrival flag. */
    private final AtomicGemmLauncher atomic;
    private final int atomicArrivalFlag;

    /**
     * @param senderOfFlag for each of the plan's flags, the rank that signals it (-1 unknown): named in timeout reports
     */
    public CudaPlanExecutor(Plan plan, TpCommunicator comm, UserBuffer ubuf, FlagRegion flags, DeviceKernels kernels,
                            ExecutionSettings settings, int[] senderOfFlag) {
        if (plan.rank() != comm.rank() || plan.tp() != comm.tp()) {
            throw new IllegalArgumentException("plan is for rank " + plan.rank() + " of " + plan.tp()
                    + ", communicator is rank " + comm.rank() + " of " + comm.tp());
        }
        if (plan.matrices().containsKey(BufferRole.UBUF) && plan.matrix(BufferRole.UBUF).bytes() > ubuf.bytes()) {
            throw new IllegalArgumentException("user buffer " + ubuf.name() + " has " + ubuf.bytes()
                    + " bytes, the plan needs " + plan.matrix(BufferRole.UBUF).bytes());
        }
        if (plan.flagCount() > flags.count()) {
            throw new IllegalArgumentException("plan needs " + plan.flagCount() + " flags, region has " + flags.count());
        }
        this.plan = plan;
        this.biasFused = biasFusedSteps(plan.steps(), role -> plan.matrix(role).dtype());
        this.flagRun = flagRuns(plan.steps());
        this.comm = comm;
        this.ubuf = ubuf;
        this.flags = flags;
        this.kernels = kernels;
        this.settings = settings;
        this.mover = settings.useCopyEngine() ? DataMover.copyEngine() : DataMover.smCopy(kernels, settings.smCopyCtas());
        PlanStep.AtomicGemm firstAtomic = (PlanStep.AtomicGemm) plan.steps().stream()
                .filter(st -> st instanceof PlanStep.AtomicGemm).findFirst().orElse(null);
        if (firstAtomic != null && settings.graphSafe()) {
            throw new IllegalArgumentException(plan.op() + "/" + plan.method() + " cannot be made graph-safe yet: its "
                    + "atomic GEMM takes this call's counter values as launch parameters, which a replayed graph "
                    + "would repeat; run it outside CUDA graphs (ExecutionSettings.withGraphSafe(false))");
        }
        this.atomicArrivalFlag = firstAtomic == null ? -1 : firstAtomic.arrivalFlag();
        CudaContext ctx = comm.context().makeCurrent();
        try {
            if (firstAtomic != null) {
                atomic = java.util.ServiceLoader.load(AtomicGemmLauncher.Provider.class,
                                CudaPlanExecutor.class.getClassLoader()).findFirst()
                        .orElseThrow(() -> new dev.ubuf.cuda.KernelsUnavailableException(plan.op() + "/"
                                + plan.method() + " needs the atomic GEMM, but no AtomicGemmLauncher.Provider is "
                                + "registered (is the ubuf-atomic-gemm module on the class path?)"))
                        .open(ctx);
                owned.register("atomic", atomic);
            } else {
                atomic = null;
            }
            signalling = settings.graphSafe()
                    ? new GraphSafeSignalling(flags, kernels, ctx, comm.environment().timeout())
                    : new StreamMemOpSignalling(flags, ctx);
            owned.register("signalling", signalling);
            int n = plan.streams().size();
            streams = new CudaStream[n];
            gemms = new Gemm[n];
            joins = new CudaEvent[n];
            for (int i = 0; i < n; i++) {
                StreamRole role = plan.streams().get(i);
                streams[i] = ctx.createStream(role == StreamRole.COMM ? StreamPriority.HIGH : StreamPriority.NORMAL);
                owned.register("stream " + i, streams[i]);
                joins[i] = ctx.createEvent(false);
                owned.register("join " + i, joins[i]);
                if (usesGemm(i)) {
                    gemms[i] = new Gemm(ctx, comm.gemmTuner());
                    owned.register("GEMM " + i, gemms[i]);
                }
            }
            fork = ctx.createEvent(false);
            owned.register("fork", fork);
            done = ctx.createEvent(false);
            owned.register("done", done);
            events = new CudaEvent[plan.eventCount()];
            for (int e = 0; e < events.length; e++) {
                events[e] = ctx.createEvent(false);
                owned.register("event " + e, events[e]);
            }
            MatrixSpec s = plan.matrices().get(BufferRole.SCRATCH);
            scratch = s == null ? null : ctx.allocate(s.bytes());
            if (scratch != null) {
                owned.register("scratch", scratch);
            }
            MatrixSpec st = plan.matrices().get(BufferRole.STAGED_OUTPUT);
            staged = st == null ? null : ctx.allocate(st.bytes(), plan.op() + "-" + plan.method() + " staged output");
            if (staged != null) {
                owned.register("staged", staged);
            }
            fp8Kernels = st == null ? null : new dev.ubuf.devicekernels.Fp8Kernels(kernels.library());
        } catch (RuntimeException e) {
            throw owned.closeAfter(e);
        }
        sendsPerCall = new int[plan.tp()][plan.flagCount()];
        for (int p = 0; p < plan.tp(); p++) {
            for (int f = 0; f < plan.flagCount(); f++) {
                sendsPerCall[p][f] = plan.signalsSentPerCall(p, f);
            }
        }
        sentThisCall = new int[plan.tp()][plan.flagCount()];
        this.senderOfFlag = senderOfFlag.clone();
        pendingFlag = new int[plan.streams().size()];
        pendingValue = new int[plan.streams().size()];
        Arrays.fill(pendingFlag, -1);
    }

    private boolean usesGemm(int stream) {
        return plan.steps().stream().anyMatch(s -> s instanceof PlanStep.Gemm && s.stream() == stream);
    }

    public Plan plan() {
        return plan;
    }

    public int calls() {
        return calls;
    }

    /** Issues one call of the plan, forked from and joined back into {@code caller}. Returns without waiting. */
    public void run(OperandBindings b, CudaStream caller) {
        if (closed) {
            throw new IllegalStateException(plan.op() + "/" + plan.method() + " is closed");
        }
        comm.context().makeCurrent();
        bind(b);
        comm.requireHealthy(plan.op() + "/" + plan.method() + " call " + calls);
        boolean capturing = caller.isCapturing();
        if (atomic != null && capturing) {
            throw new IllegalStateException(plan.op() + "/" + plan.method() + ": the caller's stream is capturing a "
                    + "CUDA graph, but the atomic GEMM's counter values are launch parameters that a replay would "
                    + "repeat: atomic methods are not graph-safe yet");
        }
        if (!signalling.graphSafe() && capturing) {
            throw new IllegalStateException(plan.op() + "/" + plan.method() + ": the caller's stream is capturing a "
                    + "CUDA graph, but this op signals with host sequence numbers that a replay would repeat; create it"
                    + " with ExecutionSettings.withGraphSafe(true)");
        }
        if (atomic != null && doneRecorded && done.isComplete()) {
            // An expired arrival wait of the last call ends the kernel early with D incomplete: say so now, naming the
            // chunk and counter, rather than let a caller that never awaits the op go on (a benchmark's loop).
            checkKernelErrors();
        }
        if (!capturing) {
            // Every GEMM's algorithm is chosen before any step of this call is enqueued. A communicator's GEMMs are
            // tuned only at initialisation (TpCommunicator.tuneGemms): timing waits for the GPU, which could sit
            // behind this call's waits on peers while the peers wait for us (a deadlock across GPUs).
            for (int i = 0; i < plan.steps().size(); i++) {
                if (plan.steps().get(i) instanceof PlanStep.Gemm g) {
                    TensorView bias = biasFused[i] ? fusedBias(i, b) : null;
                    if (g.addend() != null) {
                        gemms[g.stream()].prepareAdd(view(g.a(), b), view(g.b(), b), view(g.addend(), b),
                                view(g.c(), b), gemmOptions(b), scales(g, b), bias, caller);
                    } else {
                        gemms[g.stream()].prepare(view(g.a(), b), view(g.b(), b), view(g.c(), b),
                                g.accumulate() ? 1f : 0f, gemmOptions(b), scales(g, b), bias, caller);
                    }
                }
            }
        }
        for (int[] row : sentThisCall) {
            Arrays.fill(row, 0);
        }
        Arrays.fill(pendingFlag, -1);
        signalling.beginCall(caller);
        fork.record(caller);
        if (traceOrigin != null) {
            traceOrigin.recordTimestamp(caller);
        }
        for (CudaStream s : streams) {
            s.waitEvent(fork);
            // The previous run may have been issued from another caller stream: its steps on our other streams
            // still read the scratch and the user buffer that this run's first steps write. (Inside a capture the
            // graph orders replays itself, and an event recorded outside it may not be waited on.)
            if (doneRecorded && !capturing) {
                s.waitEvent(done);
            }
        }
        for (int i = 0; i < plan.steps().size(); i++) {
            PlanStep step = plan.steps().get(i);
            if (traceEvents != null) {
                traceEvents[i][0].recordTimestamp(streams[step.stream()]);
            }
            if (biasFused[i] && step instanceof PlanStep.Gemm g) {
                issueGemm(g, fusedBias(i, b), b);
            } else if (biasFused[i]) {
                issueReduce((PlanStep.Reduce) step, (PlanStep.AddBias) plan.steps().get(i + 1), b);
            } else if (flagRun[i] > 0) {
                issueFlagRun(plan.steps().subList(i, i + flagRun[i]));
            } else if ((i == 0 || !biasFused[i - 1]) && flagRun[i] == 0) {
                issue(step, b);
            }
            if (traceEvents != null) {
                traceEvents[i][1].recordTimestamp(streams[step.stream()]);
            }
        }
        for (int i = 0; i < streams.length; i++) {
            joins[i].record(streams[i]);
            caller.waitEvent(joins[i]);
        }
        if (!capturing) {
            done.record(caller);
            doneRecorded = true;
        }
        calls++;
    }

    /**
     * Records timing events around every step from the next call on (costs two event records per step), so
     * {@link #traceReport()} can show when each step started and ended on its stream: where the overlap leaks.
     */
    public void enableTrace() {
        if (traceEvents != null) {
            return;
        }
        CudaContext ctx = comm.context().makeCurrent();
        traceOrigin = owned.register("trace origin", ctx.createEvent(true));
        traceEvents = new CudaEvent[plan.steps().size()][2];
        for (CudaEvent[] pair : traceEvents) {
            pair[0] = owned.register("trace start", ctx.createEvent(true));
            pair[1] = owned.register("trace end", ctx.createEvent(true));
        }
    }

    /** The last traced call's steps: stream, kind, start and end in ms from the call's start, and what each did. */
    public List<TraceSpan> trace() {
        requireTrace();
        return trace(traceOrigin);
    }

    /**
     * The last traced call's steps, timed from {@code origin}: a timing event of this executor's context recorded
     * (and completed) before the call, e.g. a step start shared by several ops, so their spans share one time axis.
     * Call after the call completed.
     */
    public List<TraceSpan> trace(CudaEvent origin) {
        requireTrace();
        if (calls == 0) {
            throw new IllegalStateException(plan.op() + "/" + plan.method() + " has not run yet: nothing to trace");
        }
        List<TraceSpan> spans = new ArrayList<>();
        for (int i = 0; i < traceEvents.length; i++) {
            PlanStep st = plan.steps().get(i);
            spans.add(new TraceSpan(st.stream(), plan.streams().get(st.stream()).name().toLowerCase(Locale.ROOT),
                    kind(st), st.getClass().getSimpleName() + describe(st),
                    traceEvents[i][0].elapsedMillisSince(origin), traceEvents[i][1].elapsedMillisSince(origin),
                    details(st)));
        }
        return spans;
    }

    private void requireTrace() {
        if (traceEvents == null) {
            throw new IllegalStateException("tracing is off: call enableTrace() before the call");
        }
    }

    static SpanKind kind(PlanStep st) {
        return switch (st) {
            case PlanStep.Gemm g -> SpanKind.GEMM;
            case PlanStep.Copy c -> SpanKind.COPY;
            case PlanStep.Signal x -> SpanKind.SIGNAL;
            case PlanStep.WaitSignal w -> SpanKind.WAIT;
            case PlanStep.Reduce r -> SpanKind.REDUCE;
            case PlanStep.RecordEvent e -> SpanKind.EVENT;
            case PlanStep.WaitEvent e -> SpanKind.EVENT;
            case PlanStep.AddBias ab -> SpanKind.KERNEL;
            case PlanStep.AtomicGemm g -> SpanKind.GEMM;
            case PlanStep.Quantize q -> SpanKind.KERNEL;
        };
    }

    /** A GEMM's shape (m, n from c; k from a) and regions, for trace files. */
    private static void gemmDetails(Map<String, Object> d, Region a, Region b, Region c, boolean accumulate) {
        d.put("m", c.rows());
        d.put("n", c.cols());
        d.put("k", a.cols());
        d.put("a", a.toString());
        d.put("b", b.toString());
        d.put("c", c.toString());
        d.put("accumulate", accumulate);
    }

    /** A step's detail for trace files: its regions, shapes and bytes moved, flags and peers. */
    private Map<String, Object> details(PlanStep st) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("op", plan.op() + "/" + plan.method());
        switch (st) {
            case PlanStep.Gemm g -> {
                gemmDetails(d, g.a(), g.b(), g.c(), g.accumulate());
                if (g.addend() != null) {
                    d.put("addend", g.addend().toString());
                }
                if (g.isFp8()) {
                    d.put("fp8", true);
                }
            }
            case PlanStep.Copy c -> {
                d.put("src", c.src().toString());
                d.put("dst", c.dst().toString());
                d.put("bytes", bytes(c.dst()));
                d.put("engine", settings.useCopyEngine() ? "copy engine" : "SM copy");
            }
            case PlanStep.Signal x -> {
                d.put("peer", x.peer());
                d.put("flag", x.flag());
            }
            case PlanStep.WaitSignal w -> {
                d.put("flag", w.flag());
                d.put("count", w.count());
                if (w.flag() < senderOfFlag.length && senderOfFlag[w.flag()] >= 0) {
                    d.put("from", senderOfFlag[w.flag()]);
                }
            }
            case PlanStep.Reduce r -> {
                d.put("sources", r.sources().stream().map(Region::toString).toList().toString());
                d.put("dst", r.dst().toString());
                d.put("bytes", bytes(r.dst()) * r.sources().size());
                d.put("accumulate", r.accumulate());
            }
            case PlanStep.RecordEvent e -> d.put("event", e.event());
            case PlanStep.WaitEvent e -> d.put("event", e.event());
            case PlanStep.AddBias ab -> d.put("dst", ab.dst().toString());
            case PlanStep.Quantize q -> {
                d.put("src", q.src().toString());
                d.put("dst", q.dst().toString());
                d.put("bytes", bytes(q.src()) + bytes(q.dst()));
            }
            case PlanStep.AtomicGemm g -> {
                gemmDetails(d, g.a(), g.b(), g.c(), g.accumulate());
                d.put("chunks", g.chunks());
                d.put("firstChunk", g.firstChunk());
                d.put("arrivalFlag", g.arrivalFlag());
                d.put("doneFlag", g.doneFlag());
            }
        }
        return d;
    }

    /** Bytes of a region, in its buffer's element type (0 when the plan does not describe the buffer). */
    private long bytes(Region r) {
        MatrixSpec m = plan.matrices().get(r.buffer());
        return m == null ? 0 : r.rows() * r.cols() * m.dtype().bytes();
    }

    static String describe(PlanStep st) {
        return switch (st) {
            case PlanStep.Gemm g -> " " + g.c() + (g.accumulate() ? " +=" : " =")
                    + (g.addend() == null ? "" : " " + g.addend() + " +") + " " + g.a().rows() + "x"
                    + g.b().cols() + "x" + g.a().cols();
            case PlanStep.Copy c -> " " + c.src() + " -> " + c.dst();
            case PlanStep.Signal x -> " peer " + x.peer() + " flag " + x.flag();
            case PlanStep.WaitSignal w -> " flag " + w.flag() + " count " + w.count();
            case PlanStep.Reduce r -> " " + r.sources().size() + " sources -> " + r.dst();
            case PlanStep.RecordEvent e -> " " + e.event();
            case PlanStep.WaitEvent e -> " " + e.event();
            case PlanStep.AddBias ab -> " " + ab.dst();
            case PlanStep.Quantize q -> " " + q.src() + " -> " + q.dst();
            case PlanStep.AtomicGemm g -> " " + g.c() + (g.accumulate() ? " +=" : " =") + " " + g.a().rows() + "x"
                    + g.b().cols() + "x" + g.a().cols() + " in " + g.chunks() + " chunks from " + g.firstChunk()
                    + (g.arrivalFlag() >= 0 ? " arrival flags " + g.arrivalFlag() + "+" : "")
                    + (g.doneFlag() >= 0 ? " done flags " + g.doneFlag() + "+" : "")
                    + (g.kernel().equals(PlanStep.AtomicGemm.AUTO_KERNEL) ? "" : " kernel " + g.kernel());
        };
    }

    /**
     * What the last call's streams wait on, for timeout reports: per stream the flag, the rank that signals it, the
     * value needed and the value this rank's flag holds now.
     */
    public String pendingWaits() {
        StringBuilder sb = new StringBuilder(plan.op() + "/" + plan.method() + " call " + (calls - 1) + ":");
        String unreadable = null; // once one read gets no answer, the next would not either: no more waiting
        for (int i = 0; i < pendingFlag.length; i++) {
            int f = pendingFlag[i];
            if (f < 0) {
                continue;
            }
            String observed;
            if (unreadable != null) {
                observed = unreadable;
            } else {
                try {
                    observed = Integer.toString(flags.read(f));
                } catch (RuntimeException e) {
                    observed = unreadable = "unreadable (" + e.getMessage() + ")";
                }
            }
            sb.append(" stream ").append(i).append(" waits for flag ").append(f)
                    .append(senderOfFlag[f] >= 0 ? " from rank " + senderOfFlag[f] : "")
                    .append(": expected >= ").append(pendingValue[i]).append(", observed ").append(observed).append(';');
        }
        if (atomic != null) {
            try {
                atomic.error(this::peerOfChunk).ifPresent(e -> sb.append(' ').append(e.getMessage()).append(';'));
            } catch (RuntimeException e) {
                sb.append(" atomic GEMM error slot unreadable (").append(e.getMessage()).append(");");
            }
        }
        return sb.toString();
    }

    private String peerOfChunk(int chunk) {
        int f = atomicArrivalFlag < 0 ? -1 : atomicArrivalFlag + chunk;
        return f >= 0 && f < senderOfFlag.length && senderOfFlag[f] >= 0 ? "rank " + senderOfFlag[f]
                : "the rank that sends chunk " + chunk;
    }

    /**
     * After the last call's streams completed: throws when an atomic GEMM's arrival wait of that call expired (its
     * output is incomplete), naming the chunk and the rank that was to send it. Nothing to check without one.
     */
    public void checkKernelErrors() {
        if (atomic != null) {
            comm.context().makeCurrent();
            java.util.Optional<RuntimeException> e = atomic.error(this::peerOfChunk);
            if (e.isPresent()) {
                throw e.get();
            }
        }
    }

    private void bind(OperandBindings b) {
        check(BufferRole.INPUT, b.input(), false);
        check(BufferRole.OUTPUT, b.output(), false);
        check(BufferRole.BIAS, b.bias(), false);
        check(BufferRole.WEIGHT, b.weight(), b.weightTransposed());
        checkFp8(b);
        checkOutputScaling(b);
        checkAddends(b);
    }

    /** A GEMM's addend shares its result's layout in cuBLASLt: a bound matrix with another row stride is refused. */
    private void checkAddends(OperandBindings b) {
        for (PlanStep st : plan.steps()) {
            if (st instanceof PlanStep.Gemm g && g.addend() != null) {
                TensorView addend = view(g.addend(), b);
                TensorView c = view(g.c(), b);
                if (addend.ld() != c.ld()) {
                    throw new IllegalArgumentException(plan.op() + "/" + plan.method() + " adds " + g.addend()
                            + " (row stride " + addend.ld() + ") into " + g.c() + " (row stride " + c.ld() + "): bind"
                            + " a " + g.c().buffer() + " with row stride " + addend.ld());
                }
            }
        }
    }

    /** A plan with an FP8 output needs its quantization scale bound; any other plan takes none. */
    private void checkOutputScaling(OperandBindings b) {
        String what = plan.op() + "/" + plan.method();
        if (fp8Kernels == null) {
            if (b.outputScaling() != null) {
                throw new IllegalArgumentException(what + " writes no fp8 output, but an fp8 output scaling was given");
            }
            return;
        }
        if (b.outputScaling() == null) {
            throw new IllegalArgumentException(what + " writes an fp8 output: bind its scale (and optionally amax and"
                    + " scale_inv) with OperandBindings.withOutputScaling");
        }
        b.outputScaling().scale().memory().assertOpen();
    }

    private Gemm.Options gemmOptions(OperandBindings b) {
        return new Gemm.Options(false, b.weightTransposed(), settings.gemmSmBudget(), false);
    }

    private static Gemm.Fp8Scales scales(PlanStep.Gemm g, OperandBindings b) {
        return g.isFp8() ? b.scales().forGemm(g.fp8()) : null;
    }

    /**
     * An FP8 plan needs the scales, the weight stored [n, k] and 16-byte aligned operands with 16-byte rows (what
     * cuBLASLt's FP8 kernels take); a plan that is not FP8 takes no scales. All checked before any GPU work.
     */
    private void checkFp8(OperandBindings b) {
        boolean fp8 = plan.steps().stream().anyMatch(s -> s instanceof PlanStep.Gemm g && g.isFp8());
        String what = plan.op() + "/" + plan.method();
        if (!fp8) {
            if (b.scales() != null) {
                throw new IllegalArgumentException(what + " is not an fp8 op, but fp8 scales were given");
            }
            return;
        }
        if (b.scales() == null) {
            throw new IllegalArgumentException(what + " multiplies fp8 operands: bind their dequantization scales"
                    + " (OperandBindings.withScales)");
        }
        if (!b.weightTransposed()) {
            throw new IllegalArgumentException(what + ": fp8 GEMMs take the weight stored [n, k] (weightTransposed,"
                    + " the NT layout cuBLASLt runs fp8 in); quantize it with Fp8Kernels.quantizeTransposed");
        }
        for (TensorView t : new TensorView[]{b.input(), b.weight(), b.output()}) {
            if (t == null) {
                continue;
            }
            if (Long.remainderUnsigned(t.address(), 16) != 0 || (t.ld() * t.dtype().bytes()) % 16 != 0) {
                throw new IllegalArgumentException(what + ": fp8 GEMMs need 16-byte aligned operands with rows a "
                        + "multiple of 16 bytes apart, got " + t);
            }
        }
    }

    private void check(BufferRole role, TensorView t, boolean transposed) {
        MatrixSpec m = plan.matrices().get(role);
        String what = plan.op() + "/" + plan.method();
        if (m == null) {
            if (t != null) {
                throw new IllegalArgumentException(what + " takes no " + role.name().toLowerCase() + " tensor, but "
                        + "one was given (" + t + ")" + (role == BufferRole.BIAS ? ": make the op with a bias" : ""));
            }
            return;
        }
        if (t == null) {
            throw new IllegalArgumentException(what + " needs a " + role.name().toLowerCase() + " tensor");
        }
        long rows = transposed ? m.cols() : m.rows();
        long cols = transposed ? m.rows() : m.cols();
        t.requireShape(rows, cols, role.name().toLowerCase() + (transposed ? " (stored transposed)" : ""));
        t.requireDType(m.dtype(), role.name().toLowerCase());
        t.memory().assertOpen();
    }

    private TensorView view(Region r, OperandBindings b) {
        TensorView base = switch (r.buffer()) {
            case INPUT -> b.input();
            case OUTPUT -> b.output();
            case BIAS -> b.bias();
            case WEIGHT -> b.weight();
            case UBUF -> {
                MatrixSpec m = plan.matrix(BufferRole.UBUF);
                yield TensorView.of(ubuf.peer(r.rank()), m.rows(), m.cols(), m.dtype());
            }
            case SCRATCH -> {
                MatrixSpec m = plan.matrix(BufferRole.SCRATCH);
                yield TensorView.of(scratch, m.rows(), m.cols(), m.dtype());
            }
            case STAGED_OUTPUT -> {
                MatrixSpec m = plan.matrix(BufferRole.STAGED_OUTPUT);
                yield TensorView.of(staged, m.rows(), m.cols(), m.dtype());
            }
        };
        if (r.buffer() == BufferRole.WEIGHT && b.weightTransposed()) {
            return base.rows(r.col(), r.cols()).cols(r.row(), r.rows());
        }
        return base.rows(r.row(), r.rows()).cols(r.col(), r.cols());
    }

    private void issue(PlanStep step, OperandBindings b) {
        CudaStream s = streams[step.stream()];
        switch (step) {
            case PlanStep.Gemm g -> issueGemm(g, null, b);
            case PlanStep.Copy c -> mover.copy(view(c.src(), b), view(c.dst(), b), s);
            case PlanStep.Signal sig -> {
                Signalling.Send x = send(sig);
                signalling.signal(s, x.peer(), x.flag(), x.perCall(), x.k(), x.absolute());
            }
            case PlanStep.WaitSignal w -> {
                Signalling.Wait x = await(w);
                signalling.await(s, x.flag(), x.perCall(), x.count(), x.absolute());
            }
            case PlanStep.Reduce r -> issueReduce(r, null, b);
            case PlanStep.RecordEvent e -> events[e.event()].record(s);
            case PlanStep.WaitEvent e -> s.waitEvent(events[e.event()]);
            case PlanStep.AddBias ab -> {
                TensorView dst = view(ab.dst(), b);
                kernels.addBias(dst, b.bias().cols(ab.dst().col(), ab.dst().cols()), s);
            }
            case PlanStep.Quantize q -> {
                OutputScaling o = b.outputScaling();
                fp8Kernels.quantize(view(q.src(), b), o.scale(), view(q.dst(), b), o.amax(), o.scaleInv(), s);
            }
            case PlanStep.AtomicGemm g -> {
                // Every chunk flag receives one signal per call (Plan checks it), so one value serves all chunks.
                int value = calls + 1;
                atomic.launch(view(g.a(), b), view(g.b(), b),
                        g.b().buffer() == BufferRole.WEIGHT && b.weightTransposed(), view(g.c(), b),
                        g.accumulate(), g.chunks(), g.firstChunk(),
                        g.arrivalFlag() < 0 ? 0 : flags.address(flags.rank(), g.arrivalFlag()), value,
                        atomicTimeout(), g.doneFlag() < 0 ? 0 : flags.address(flags.rank(), g.doneFlag()), value,
                        g.kernel(), s);
            }
        }
    }

    /** This call's next signal to (peer, flag): its number k among them, counted. */
    private Signalling.Send send(PlanStep.Signal sig) {
        int k = ++sentThisCall[sig.peer()][sig.flag()];
        int perCall = sendsPerCall[sig.peer()][sig.flag()];
        return new Signalling.Send(sig.peer(), sig.flag(), perCall, k, calls * perCall + k);
    }

    /** A wait of this call, noted as its stream's pending wait for timeout reports. */
    private Signalling.Wait await(PlanStep.WaitSignal w) {
        int perCall = plan.flagsReceivedPerCall().get(w.flag());
        int value = calls * perCall + w.count();
        pendingFlag[w.stream()] = w.flag();
        pendingValue[w.stream()] = value;
        return new Signalling.Wait(w.flag(), perCall, w.count(), value);
    }

    /** A run of signals, or of waits, of one stream ({@link #flagRuns}), given to the strategy whole. */
    private void issueFlagRun(List<PlanStep> run) {
        CudaStream s = streams[run.getFirst().stream()];
        if (run.getFirst() instanceof PlanStep.Signal) {
            List<Signalling.Send> sends = new ArrayList<>(run.size());
            for (PlanStep st : run) {
                sends.add(send((PlanStep.Signal) st));
            }
            signalling.signalRun(s, sends);
        } else {
            List<Signalling.Wait> waits = new ArrayList<>(run.size());
            for (PlanStep st : run) {
                waits.add(await((PlanStep.WaitSignal) st));
            }
            signalling.awaitRun(s, waits);
        }
    }

    /**
     * Runs of two or more signals, or of two or more waits, next to each other in the plan on one stream (a
     * reduce-scatter's waits for every peer before its reduction, its credits to every peer after): nothing runs
     * between them on their stream, so issuing them as one operation orders nothing differently. A run's signals go
     * to distinct (peer, flag) pairs: two values for one flag written at once could land in either order. Per step
     * the run's length where one starts, -1 for the rest of the run, 0 elsewhere.
     */
    static int[] flagRuns(List<PlanStep> steps) {
        int[] runs = new int[steps.size()];
        for (int i = 0; FUSE_FLAG_RUNS && i < steps.size(); ) {
            PlanStep first = steps.get(i);
            int end = i + 1;
            if (first instanceof PlanStep.Signal || first instanceof PlanStep.WaitSignal) {
                java.util.Set<Long> signalled = new java.util.HashSet<>();
                if (first instanceof PlanStep.Signal x) {
                    signalled.add(((long) x.peer() << 32) | x.flag());
                }
                while (end < steps.size() && steps.get(end).getClass() == first.getClass()
                        && steps.get(end).stream() == first.stream()
                        && !(steps.get(end) instanceof PlanStep.Signal x
                             && !signalled.add(((long) x.peer() << 32) | x.flag()))) {
                    end++;
                }
            }
            if (end - i > 1) {
                runs[i] = end - i;
                Arrays.fill(runs, i + 1, end, -1);
            }
            i = end;
        }
        return runs;
    }

    /** A GEMM, its epilogue adding {@code bias} when given (the AddBias that follows it). */
    private void issueGemm(PlanStep.Gemm g, TensorView bias, OperandBindings b) {
        CudaStream s = streams[g.stream()];
        if (g.addend() != null) {
            gemms[g.stream()].multiplyAdd(view(g.a(), b), view(g.b(), b), view(g.addend(), b), view(g.c(), b),
                    gemmOptions(b), scales(g, b), bias, s);
        } else {
            gemms[g.stream()].multiply(view(g.a(), b), view(g.b(), b), view(g.c(), b), 1f, g.accumulate() ? 1f : 0f,
                    gemmOptions(b), scales(g, b), bias, s);
        }
    }

    /** The bias columns of the AddBias after fused step i. */
    private TensorView fusedBias(int i, OperandBindings b) {
        Region dst = ((PlanStep.AddBias) plan.steps().get(i + 1)).dst();
        return b.bias().cols(dst.col(), dst.cols());
    }

    /** A Reduce, and with {@code bias} the AddBias that follows it, as one kernel (the same bits as two). */
    private void issueReduce(PlanStep.Reduce r, PlanStep.AddBias bias, OperandBindings b) {
        List<TensorView> src = new ArrayList<>(r.sources().size());
        for (Region x : r.sources()) {
            src.add(view(x, b));
        }
        kernels.sum(src, view(r.dst(), b), r.accumulate(),
                bias == null ? null : b.bias().cols(bias.dst().col(), bias.dst().cols()), streams[r.stream()]);
    }

    /**
     * Where a Reduce or a GEMM is followed directly, on its stream, by the AddBias of its destination (the
     * reduce-scatters' last reduction, or the ring's last GEMMs that add the received sums): the bias rides on the
     * Reduce's kernel, or in the GEMM's epilogue, saving a pass over the destination. Nothing runs between two
     * consecutive steps of one stream, so what the plan orders is unchanged. A GEMM's epilogue adds the bias where
     * {@link Plan#biasInEpilogue} allows it, rounding as cuBLASLt does ({@link Gemm#multiplyAdd}).
     */
    static boolean[] biasFusedSteps(List<PlanStep> steps, Function<BufferRole, DType> dtypes) {
        boolean[] fused = new boolean[steps.size()];
        for (int i = 0; i + 1 < steps.size(); i++) {
            if (steps.get(i) instanceof PlanStep.Reduce r && steps.get(i + 1) instanceof PlanStep.AddBias ab) {
                fused[i] = FUSE_REDUCE_BIAS && r.stream() == ab.stream() && r.dst().equals(ab.dst());
            } else {
                fused[i] = FUSE_GEMM_BIAS && Plan.biasInEpilogue(steps, i, dtypes);
            }
        }
        return fused;
    }

    /**
     * How long one chunk's arrival wait in the atomic GEMM may take: half the UB_TIMEOUT deadline, so the kernel
     * gives up (and reports the chunk and its sender) before the host's watchdog declares the domain dead.
     */
    private java.time.Duration atomicTimeout() {
        java.time.Duration t = comm.environment().timeout().dividedBy(2);
        return t.isZero() ? java.time.Duration.ofMillis(1) : t;
    }

    /**
     * Waits, with the UB_TIMEOUT deadline, until every step this executor issued has completed. When the domain has
     * failed, first makes the waits that a failed peer will never satisfy pass (the flags are written locally), so
     * the streams drain and their memory can be freed; a timeout here aborts the domain and is rethrown.
     */
    public void drain() {
        comm.context().makeCurrent();
        if (comm.isAborted()) {
            releaseWaits();
        }
        for (CudaStream s : streams) {
            try {
                comm.await(s, this::pendingWaits);
            } catch (RuntimeException e) {
                // The domain is aborted now: release what can never arrive, then wait once more, bounded.
                if (!releaseWaits()) {
                    undrained = true;
                    e.addSuppressed(new UbufTimeoutException("rank " + comm.rank() + ": the local writes that release"
                            + " the stuck waits did not complete within " + comm.environment().timeout().toSeconds()
                            + " s (UB_TIMEOUT): the GPU's queues are stuck"));
                    throw e;
                }
                try {
                    comm.awaitAfterAbort(s, this::pendingWaits);
                } catch (RuntimeException stuck) {
                    undrained = true;
                    e.addSuppressed(stuck);
                }
                throw e;
            }
        }
    }

    /** False when streams were still running after the domain failed and its waits were released. */
    public boolean drained() {
        return !undrained;
    }

    /** Whether the release completed within UB_TIMEOUT. */
    private boolean releaseWaits() {
        int[] completed = new int[plan.flagCount()];
        for (int f = 0; f < completed.length; f++) {
            completed[f] = calls * plan.flagsReceivedPerCall().get(f);
        }
        return signalling.releaseWaits(completed, comm.environment().timeout());
    }

    /**
     * Frees this executor's streams, events, workspaces and scratch after {@link #drain()}ing them. The caller (the
     * op) makes close collective: it frees nothing a peer can reach before every rank has drained.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        try {
            drain();
        } catch (RuntimeException e) {
            failure = e;
        }
        if (undrained) {
            // Steps still run after the waits were released: freeing their memory now could corrupt whatever
            // reuses it, so it stays allocated (and the context's ledger shows it).
            throw new UbufTimeoutException(failure.getMessage() + "; " + plan.op() + "/" + plan.method()
                    + " left its streams and scratch allocated because they did not drain");
        }
        comm.context().makeCurrent();
        try {
            owned.close();
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
        if (failure != null) {
            throw failure;
        }
    }
}
