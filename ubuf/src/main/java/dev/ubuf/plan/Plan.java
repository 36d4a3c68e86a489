package dev.ubuf.plan;

import dev.ubuf.tensor.DType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.IntUnaryOperator;

/**
 * The schedule of one overlapped op on one rank, as data: per-stream steps with explicit dependencies.
 * Built once per (shape, dtype, method, rank); run by the CUDA executor on GPUs and by the host executor on
 * Java arrays in CI. Immutable and validated on construction.
 *
 * @param op                   "ag" or "rs" (results-file vocabulary)
 * @param method               "ring", "aggregate", "pipeline", "bulk", "oneshot", ...
 * @param rank                 this rank's index in the domain
 * @param tp                   ranks in the domain
 * @param streams              role of each stream index used by the steps
 * @param matrices             the matrices the steps address (one spec per role)
 * @param flagsReceivedPerCall for each flag index, how many signals this rank receives on it per call
 * @param eventCount           events used (indices 0..eventCount-1)
 * @param steps                issue order; a WaitEvent always follows its RecordEvent
 */
public record Plan(String op, String method, int rank, int tp, List<StreamRole> streams,
                   Map<BufferRole, MatrixSpec> matrices, List<Integer> flagsReceivedPerCall, int eventCount,
                   List<PlanStep> steps) {

    public Plan {
        Objects.requireNonNull(op, "op");
        Objects.requireNonNull(method, "method");
        streams = List.copyOf(streams);
        matrices = Map.copyOf(new EnumMap<>(matrices));
        flagsReceivedPerCall = List.copyOf(flagsReceivedPerCall);
        steps = List.copyOf(steps);
        if (tp < 1 || rank < 0 || rank >= tp) {
            throw new IllegalArgumentException("rank " + rank + " outside domain of " + tp);
        }
        validate(rank, tp, streams, matrices, flagsReceivedPerCall.size(), eventCount, steps);
        for (PlanStep s : steps) {
            if (s instanceof PlanStep.AtomicGemm g) {
                for (int f : new int[]{g.arrivalFlag(), g.doneFlag()}) {
                    for (int i = 0; f >= 0 && i < g.chunks(); i++) {
                        if (flagsReceivedPerCall.get(f + i) != 1) {
                            throw new IllegalArgumentException(s + ": the atomic GEMM's chunk flag " + (f + i)
                                    + " must receive exactly one signal per call (one value for every chunk), not "
                                    + flagsReceivedPerCall.get(f + i));
                        }
                    }
                }
            }
        }
    }

    public int flagCount() {
        return flagsReceivedPerCall.size();
    }

    public MatrixSpec matrix(BufferRole role) {
        MatrixSpec m = matrices.get(role);
        if (m == null) {
            throw new IllegalArgumentException(op + "/" + method + " plan has no " + role + " matrix");
        }
        return m;
    }

    /** How many signals this rank sends to (peer, flag) per call: the sender's absolute-value arithmetic. */
    public int signalsSentPerCall(int peer, int flag) {
        int n = 0;
        for (PlanStep s : steps) {
            if (s instanceof PlanStep.Signal sig && sig.peer() == peer && sig.flag() == flag) {
                n++;
            } else if (s instanceof PlanStep.AtomicGemm g && g.doneFlag() >= 0 && peer == rank
                    && flag >= g.doneFlag() && flag < g.doneFlag() + g.chunks()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Whether the AddBias {@code ab}, issued right after GEMM {@code g}, can be added in the GEMM's epilogue: it adds
     * the bias to the GEMM's result on the GEMM's stream, and the result and the bias are both bf16 or both fp16 (what
     * cuBLASLt's bias epilogue takes here, {@code dev.ubuf.gemm.Gemm}). Nothing runs between two consecutive steps of
     * one stream, so the plan's order is kept.
     */
    public static boolean biasInEpilogue(PlanStep.Gemm g, PlanStep.AddBias ab,
                                         Function<BufferRole, DType> dtypes) {
        if (g.stream() != ab.stream() || !g.c().equals(ab.dst())) {
            return false;
        }
        DType out = dtypes.apply(g.c().buffer());
        return (out == DType.BF16 || out == DType.FP16)
                && dtypes.apply(BufferRole.BIAS) == out;
    }

    /**
     * Whether step {@code i} of {@code steps} is a GEMM whose next step is an AddBias that {@link
     * #biasInEpilogue(PlanStep.Gemm, PlanStep.AddBias, Function)} lets ride in its epilogue.
     */
    public static boolean biasInEpilogue(List<PlanStep> steps, int i, Function<BufferRole, DType> dtypes) {
        return i + 1 < steps.size() && steps.get(i) instanceof PlanStep.Gemm g
                && steps.get(i + 1) instanceof PlanStep.AddBias ab && biasInEpilogue(g, ab, dtypes);
    }

    /**
     * This plan's GEMMs alone, back to back on one compute stream, with no copies, signals or reductions: the op's own
     * GEMM decomposition, which benchmarks time to bound what the overlap could reach. Its results are not the op's;
     * a GEMM that stores into a peer's user buffer stores into this rank's instead (the GEMMs alone move nothing).
     */
    public Plan gemmsOnly() {
        return gemmsAlone("-gemms", stream -> 0);
    }

    /**
     * This plan's GEMMs alone, each on its own compute stream as the op issues it (streams renumbered in order of
     * first use), with no copies, signals, reductions or the waits between them: the op's GEMMs as concurrent as its
     * streams allow, which can beat both the whole GEMM and {@link #gemmsOnly} (one GEMM's last wave filled by
     * another's). Benchmarks time it for the ideal; its results are not the op's (GEMMs that accumulate into one
     * region may race).
     */
    public Plan gemmsOnTheirStreams() {
        Map<Integer, Integer> renumbered = new HashMap<>();
        return gemmsAlone("-gemms-streams", stream -> renumbered.computeIfAbsent(stream, k -> renumbered.size()));
    }

    /**
     * The GEMM steps alone, GEMM i on compute stream {@code streamOf(its stream)}; streams 0..max are COMPUTE. A bias
     * that rides in a GEMM's epilogue ({@link #biasInEpilogue}) stays with it: the GEMM kind runs (and is tuned) as
     * the op runs it.
     */
    private Plan gemmsAlone(String suffix, IntUnaryOperator streamOf) {
        List<PlanStep> gemms = new ArrayList<>();
        int streamCount = 0;
        for (int i = 0; i < steps.size(); i++) {
            PlanStep s = steps.get(i);
            if (s instanceof PlanStep.Gemm || s instanceof PlanStep.AtomicGemm) {
                int stream = streamOf.applyAsInt(s.stream());
                streamCount = Math.max(streamCount, stream + 1);
                gemms.add(s instanceof PlanStep.Gemm g ? g.onStream(stream).writingLocally(rank)
                        : ((PlanStep.AtomicGemm) s).withoutFlags(stream));
                if (biasInEpilogue(steps, i, role -> matrix(role).dtype())) {
                    gemms.add(new PlanStep.AddBias(stream, ((PlanStep.AddBias) steps.get(i + 1)).dst()));
                }
            }
        }
        if (gemms.isEmpty()) {
            throw new IllegalStateException(op + "/" + method + " has no GEMM");
        }
        return new Plan(op, method + suffix, rank, tp, Collections.nCopies(streamCount, StreamRole.COMPUTE), matrices,
                List.of(), 0, gemms);
    }

    /**
     * This plan with an FP8 output: every step that wrote or read OUTPUT uses STAGED_OUTPUT instead (the same matrix
     * in the output's wide type, private to the rank), and at the end, once every stream has finished, stream 0
     * quantizes it into OUTPUT, now declared {@code fp8} ({@link PlanStep.Quantize}). Written once for every method
     * of a family: its own steps never see the FP8 output.
     *
     * @param fp8 FP8_E4M3 or FP8_E5M2
     */
    public Plan withFp8Output(dev.ubuf.tensor.DType fp8) {
        if (fp8 == null || !fp8.isReserved()) {
            throw new IllegalArgumentException("an fp8 output is fp8e4m3 or fp8e5m2, got "
                    + (fp8 == null ? null : fp8.shortName()));
        }
        MatrixSpec out = matrix(BufferRole.OUTPUT);
        if (out.dtype().isReserved()) {
            throw new IllegalArgumentException(op + "/" + method + ": the output is already " + out.dtype().shortName());
        }
        if (matrices.containsKey(BufferRole.STAGED_OUTPUT)) {
            throw new IllegalArgumentException(op + "/" + method + " already stages its output");
        }
        Map<BufferRole, MatrixSpec> m = new EnumMap<>(matrices);
        m.put(BufferRole.STAGED_OUTPUT, new MatrixSpec(BufferRole.STAGED_OUTPUT, out.dtype(), out.rows(), out.cols()));
        m.put(BufferRole.OUTPUT, new MatrixSpec(BufferRole.OUTPUT, fp8, out.rows(), out.cols()));
        List<PlanStep> s = new ArrayList<>();
        for (PlanStep step : steps) {
            s.add(staged(step));
        }
        int events = eventCount;
        for (int stream = 1; stream < streams.size(); stream++) {
            s.add(new PlanStep.RecordEvent(stream, events));
            s.add(new PlanStep.WaitEvent(0, events));
            events++;
        }
        s.add(new PlanStep.Quantize(0, new Region(BufferRole.STAGED_OUTPUT, rank, 0, out.rows(), 0, out.cols()),
                new Region(BufferRole.OUTPUT, rank, 0, out.rows(), 0, out.cols())));
        return new Plan(op, method, rank, tp, streams, m, flagsReceivedPerCall, events, s);
    }

    private static Region staged(Region r) {
        return r.buffer() == BufferRole.OUTPUT
                ? new Region(BufferRole.STAGED_OUTPUT, r.rank(), r.row(), r.rows(), r.col(), r.cols()) : r;
    }

    private static PlanStep staged(PlanStep step) {
        return switch (step) {
            case PlanStep.Gemm g -> new PlanStep.Gemm(g.stream(), staged(g.a()), staged(g.b()), staged(g.c()),
                    g.accumulate(), g.fp8(), g.addend() == null ? null : staged(g.addend()));
            case PlanStep.Copy c -> new PlanStep.Copy(c.stream(), staged(c.src()), staged(c.dst()));
            case PlanStep.Reduce r -> new PlanStep.Reduce(r.stream(), r.sources().stream().map(Plan::staged).toList(),
                    staged(r.dst()), r.accumulate());
            case PlanStep.AddBias b -> new PlanStep.AddBias(b.stream(), staged(b.dst()));
            case PlanStep.AtomicGemm g -> new PlanStep.AtomicGemm(g.stream(), staged(g.a()), staged(g.b()),
                    staged(g.c()), g.accumulate(), g.chunks(), g.firstChunk(), g.arrivalFlag(), g.doneFlag(),
                    g.kernel());
            case PlanStep.Quantize q -> throw new IllegalArgumentException("the plan already quantizes: " + q);
            case PlanStep.Signal x -> x;
            case PlanStep.WaitSignal x -> x;
            case PlanStep.RecordEvent x -> x;
            case PlanStep.WaitEvent x -> x;
        };
    }

    public String describe() {
        StringBuilder sb = new StringBuilder(op + "/" + method + " rank " + rank + " of " + tp + ", streams "
                + streams + ", flags/call " + flagsReceivedPerCall + "\n");
        for (int i = 0; i < steps.size(); i++) {
            sb.append(String.format("  %3d %s%n", i, steps.get(i)));
        }
        return sb.toString();
    }

    private static void validate(int rank, int tp, List<StreamRole> streams, Map<BufferRole, MatrixSpec> matrices,
                                 int flagCount, int eventCount, List<PlanStep> steps) {
        boolean[] recorded = new boolean[eventCount];
        for (int i = 0; i < steps.size(); i++) {
            PlanStep s = steps.get(i);
            String at = "step " + i + " (" + s + "): ";
            if (s.stream() < 0 || s.stream() >= streams.size()) {
                throw new IllegalArgumentException(at + "stream out of range");
            }
            switch (s) {
                case PlanStep.Gemm g -> {
                    checkRegion(at, g.a(), rank, tp, matrices, false);
                    checkRegion(at, g.b(), rank, tp, matrices, false);
                    // A GEMM may store its result straight into a peer's user buffer (its epilogue writes over
                    // NVLink); it reads only this rank's memory.
                    checkRegion(at, g.c(), rank, tp, matrices, !g.accumulate());
                    if (g.addend() != null) {
                        checkRegion(at, g.addend(), rank, tp, matrices, false);
                    }
                    checkGemmTypes(at, g, matrices);
                }
                case PlanStep.Copy c -> {
                    checkRegion(at, c.src(), rank, tp, matrices, true);
                    checkRegion(at, c.dst(), rank, tp, matrices, true);
                    if (c.src().rank() != rank && c.dst().rank() != rank) {
                        throw new IllegalArgumentException(at + "a copy must touch this rank's memory");
                    }
                }
                case PlanStep.Signal sig -> {
                    if (sig.peer() < 0 || sig.peer() >= tp || sig.flag() < 0 || sig.flag() >= flagCount) {
                        throw new IllegalArgumentException(at + "peer or flag out of range");
                    }
                }
                case PlanStep.WaitSignal w -> {
                    if (w.flag() < 0 || w.flag() >= flagCount) {
                        throw new IllegalArgumentException(at + "flag out of range");
                    }
                }
                case PlanStep.Reduce r -> {
                    for (Region src : r.sources()) {
                        checkRegion(at, src, rank, tp, matrices, true);
                    }
                    checkRegion(at, r.dst(), rank, tp, matrices, false);
                }
                case PlanStep.RecordEvent e -> {
                    if (e.event() < 0 || e.event() >= eventCount || recorded[e.event()]) {
                        throw new IllegalArgumentException(at + "event out of range or recorded twice");
                    }
                    recorded[e.event()] = true;
                }
                case PlanStep.WaitEvent e -> {
                    if (e.event() < 0 || e.event() >= eventCount || !recorded[e.event()]) {
                        throw new IllegalArgumentException(at + "waits for an event not recorded before it");
                    }
                }
                case PlanStep.AtomicGemm g -> {
                    checkRegion(at, g.a(), rank, tp, matrices, false);
                    checkRegion(at, g.b(), rank, tp, matrices, false);
                    checkRegion(at, g.c(), rank, tp, matrices, false);
                    for (int f : new int[]{g.arrivalFlag(), g.doneFlag()}) {
                        if (f >= 0 && f + g.chunks() > flagCount) {
                            throw new IllegalArgumentException(at + "chunk flags " + f + ".." + (f + g.chunks() - 1)
                                    + " out of range");
                        }
                    }
                    if (g.arrivalFlag() >= 0 && g.doneFlag() >= 0 && g.arrivalFlag() < g.doneFlag() + g.chunks()
                            && g.doneFlag() < g.arrivalFlag() + g.chunks()) {
                        throw new IllegalArgumentException(at + "arrival and done flags overlap");
                    }
                }
                case PlanStep.AddBias b -> {
                    checkRegion(at, b.dst(), rank, tp, matrices, false);
                    if (!matrices.containsKey(BufferRole.BIAS)) {
                        throw new IllegalArgumentException(at + "no BIAS matrix declared");
                    }
                }
                case PlanStep.Quantize q -> {
                    checkRegion(at, q.src(), rank, tp, matrices, false);
                    checkRegion(at, q.dst(), rank, tp, matrices, false);
                    if (matrices.get(q.src().buffer()).dtype().isReserved()
                            || !matrices.get(q.dst().buffer()).dtype().isReserved()) {
                        throw new IllegalArgumentException(at + "quantizes a bf16, fp16 or fp32 matrix into an fp8 one,"
                                + " got " + matrices.get(q.src().buffer()).dtype().shortName() + " -> "
                                + matrices.get(q.dst().buffer()).dtype().shortName());
                    }
                }
            }
        }
    }

    /** An FP8 GEMM reads FP8 A and B and writes a wider type; any other GEMM touches no FP8 matrix. */
    private static void checkGemmTypes(String at, PlanStep.Gemm g, Map<BufferRole, MatrixSpec> matrices) {
        boolean fa = matrices.get(g.a().buffer()).dtype().isReserved();
        boolean fb = matrices.get(g.b().buffer()).dtype().isReserved();
        boolean fc = matrices.get(g.c().buffer()).dtype().isReserved();
        if (g.isFp8() && (!fa || !fb)) {
            throw new IllegalArgumentException(at + "an fp8 GEMM needs fp8 A and B, got "
                    + matrices.get(g.a().buffer()).dtype().shortName() + " and "
                    + matrices.get(g.b().buffer()).dtype().shortName());
        }
        if (!g.isFp8() && (fa || fb)) {
            throw new IllegalArgumentException(at + "reads an fp8 matrix but has no fp8 scaling (its operands would"
                    + " not be dequantized)");
        }
        if (fc) {
            throw new IllegalArgumentException(at + "writes an fp8 matrix: plan GEMMs write bf16, fp16 or fp32"
                    + " (partial sums are never fp8)");
        }
        if (g.addend() != null
                && matrices.get(g.addend().buffer()).dtype() != matrices.get(g.c().buffer()).dtype()) {
            // cuBLASLt reads C in D's type when D is not FP8.
            throw new IllegalArgumentException(at + "adds a " + matrices.get(g.addend().buffer()).dtype().shortName()
                    + " addend into a " + matrices.get(g.c().buffer()).dtype().shortName() + " result: they must"
                    + " have one type");
        }
    }

    private static void checkRegion(String at, Region r, int rank, int tp, Map<BufferRole, MatrixSpec> matrices,
                                    boolean peerAllowed) {
        MatrixSpec m = matrices.get(r.buffer());
        if (m == null) {
            throw new IllegalArgumentException(at + r.buffer() + " not declared");
        }
        if (r.endRow() > m.rows() || r.endCol() > m.cols()) {
            throw new IllegalArgumentException(at + r + " outside " + m.rows() + "x" + m.cols());
        }
        if (r.rank() >= tp) {
            throw new IllegalArgumentException(at + r + " names a rank outside the domain");
        }
        if (r.rank() != rank && !(peerAllowed && r.buffer().peerVisible())) {
            throw new IllegalArgumentException(at + r + " is another rank's memory, not reachable here");
        }
    }

    /** Checks that a domain's plans agree: every (receiver, flag) has one sender sending what the receiver expects. */
    public static void validateDomain(List<Plan> plans) {
        int tp = plans.size();
        for (int r = 0; r < tp; r++) {
            Plan p = plans.get(r);
            if (p.rank() != r || p.tp() != tp) {
                throw new IllegalArgumentException("plan " + r + " is for rank " + p.rank() + " of " + p.tp());
            }
        }
        for (int recv = 0; recv < tp; recv++) {
            Plan rp = plans.get(recv);
            for (int f = 0; f < rp.flagCount(); f++) {
                List<Integer> senders = new ArrayList<>();
                int sent = 0;
                for (Plan sp : plans) {
                    int n = sp.signalsSentPerCall(recv, f);
                    if (n > 0) {
                        senders.add(sp.rank());
                        sent += n;
                    }
                }
                if (senders.size() > 1) {
                    throw new IllegalArgumentException("flag " + f + " of rank " + recv + " has several senders " + senders);
                }
                if (sent != rp.flagsReceivedPerCall().get(f)) {
                    throw new IllegalArgumentException("flag " + f + " of rank " + recv + " receives " + sent
                            + " signals per call but the plan expects " + rp.flagsReceivedPerCall().get(f));
                }
            }
        }
    }
}
