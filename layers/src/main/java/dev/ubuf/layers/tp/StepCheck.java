package dev.ubuf.layers.tp;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.op.Candidate;
import dev.ubuf.op.CandidateTimes;
import dev.ubuf.op.Planner;
import dev.ubuf.op.PlannerSettings;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.timing.InterleavedRounds;
import dev.ubuf.timing.TimingStats;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The planner's choices checked in whole steps, at initialisation ({@link TpContext#initialize}; collective). The
 * planner times each op alone, where chunk GEMMs on several streams can tie with the same GEMMs on one stream; in a
 * step they also contend with the other ops' copies, reductions and GEMMs. So where the planner chose a candidate
 * with several compute streams and a one-stream candidate timed within {@link #WINDOW} of it alone, whole training
 * steps (every layer's forward and backward, collectives on, random inputs) run with the planner's choices and with
 * the one-stream candidates, alternating in {@link #ROUNDS} rounds of {@link #STEPS} timed steps (each the maximum
 * over ranks); the one-stream candidates stay only if their median step is faster by more than {@link #MARGIN}, and
 * the planner then caches them for those shapes. Rank 0's measurements decide; every rank runs the same.
 *
 * <p>Opt-in ({@code UB_STEP_CHECK=1}): at 4996259 (2026-11-27, 4x H200 and 4x H100) the 70B LayerNormMLP demo at
 * tp 2 hung in 4 of 4 runs in which a check had closed and remade ops (both ranks waiting on their streams, during
 * the check's steps or 3-13 training steps later) and ran through in the one run without a check; earlier the same
 * day two 70B runs and several 8B runs with a check ran through. Why is not known (docs/status.md, eighth session,
 * has what was ruled out and the next experiments).
 */
public final class StepCheck {
    /** Alone, a one-stream candidate at most this much slower than the planner's choice is tried in steps. */
    static final double WINDOW = 0.05;
    /** The one-stream candidates replace the planner's choices when their steps are faster by more than this. */
    static final double MARGIN = 0.005;
    static final int ROUNDS = 3;
    static final int STEPS = 3;
    private static final System.Logger LOG = System.getLogger(StepCheck.class.getName());

    private StepCheck() {
    }

    /**
     * What the check measured.
     *
     * @param planner       per op tried ("fc1_fprop | ag tp2 ..."), the planner's choice
     * @param oneStream     per op tried, the one-stream candidate
     * @param plannerMs     median step with the planner's choices, ms (maximum over ranks)
     * @param oneStreamMs   median step with the one-stream candidates
     * @param oneStreamKept whether the one-stream candidates run from now on
     */
    public record Result(Map<String, String> planner, Map<String, String> oneStream, double plannerMs,
                         double oneStreamMs, boolean oneStreamKept) {
        public Result {
            planner = Map.copyOf(planner);
            oneStream = Map.copyOf(oneStream);
        }

        /** One line for logs: both step times and what runs. */
        public String describe() {
            StringBuilder sb = new StringBuilder(String.format(java.util.Locale.ROOT,
                    "step check: planner's choices %.3f ms, one-stream %.3f ms a step: %s", plannerMs, oneStreamMs,
                    oneStreamKept ? "one-stream kept" : "planner's choices kept"));
            oneStream.forEach((op, label) -> sb.append("; ").append(op).append(": ").append(planner.get(op))
                    .append(" / ").append(label));
            return sb.toString();
        }
    }

    /**
     * Whether a check runs: asked for ({@code UB_STEP_CHECK=1}), the planner measured choices in this context, and no
     * FP8 (steps move amaxes).
     */
    static boolean applies(TpContext tc, PlannerSettings settings) {
        return settings.stepCheck() && !tc.fp8()
                && tc.planned().stream().anyMatch(p -> !p.decision().measured().isEmpty());
    }

    /**
     * Runs the check on {@code operands} (each layer's input and output gradient, overwritten with random values)
     * and leaves the winning candidates' ops made and tuned; null when no planned op has a one-stream candidate to try.
     */
    static Result run(TpContext tc, List<? extends TpLayer> layers, List<TensorView[]> operands, CudaStream stream) {
        TpCommunicator comm = tc.comm();
        Map<String, TpContext.PlannedOp> byKey = new LinkedHashMap<>();
        for (TpContext.PlannedOp p : tc.planned()) {
            byKey.put(TpContext.plannedKey(p.gemm(), p.shape()), p);
        }
        Map<String, Candidate> alt = agreedAlternatives(tc, byKey);
        if (alt.isEmpty()) {
            return null;
        }
        Set<GemmName> gemms = new LinkedHashSet<>();
        alt.keySet().forEach(k -> gemms.add(byKey.get(k).gemm()));
        CudaContext ctx = tc.makeCurrent();
        for (int i = 0; i < operands.size(); i++) {
            tc.kernels().fillRandom(operands.get(i)[0], TpLayer.shardSeed(0x5EED + i, comm.rank()), 1f, stream);
            tc.kernels().fillRandom(operands.get(i)[1], TpLayer.shardSeed(0xD1 + i, comm.rank()), 1f, stream);
        }
        // This rank's step times, [0] the planner's choices, [1] the one-stream candidates; the maximum over ranks is
        // taken once at the end. Steps are timed unheld (StreamHold cannot hold a whole step), host time included.
        double[][] mine = new double[2][ROUNDS * STEPS];
        boolean altRunning = false;
        try (CudaEvent start = ctx.createEvent(true); CudaEvent end = ctx.createEvent(true)) {
            for (int r = 0; r < ROUNDS; r++) {
                for (int v = 0; v < 2; v++) {
                    boolean useAlt = (v == 0) == (r % 2 == 1); // planner first in even rounds
                    if (useAlt != altRunning) {
                        use(tc, layers, operands, stream, useAlt ? alt : Map.of(), gemms);
                        altRunning = useAlt;
                    }
                    timeSteps(tc, layers, operands, stream, start, end, mine[useAlt ? 1 : 0], r * STEPS);
                }
            }
        }
        Map<String, TimingStats> stats = InterleavedRounds.maxOverRanks(comm.bootstrap(),
                List.of("planner", "one-stream"), mine);
        double plannerMs = stats.get("planner").median();
        double oneStreamMs = stats.get("one-stream").median();
        boolean keep = oneStreamMs < plannerMs * (1 - MARGIN);
        if (keep != altRunning) {
            use(tc, layers, operands, stream, keep ? alt : Map.of(), gemms);
        }
        Map<String, String> plannerLabels = new LinkedHashMap<>();
        Map<String, String> altLabels = new LinkedHashMap<>();
        for (var e : alt.entrySet()) {
            TpContext.PlannedOp p = byKey.get(e.getKey());
            plannerLabels.put(e.getKey(), p.decision().chosen().label());
            altLabels.put(e.getKey(), e.getValue().label());
            if (keep) {
                tc.planner().remember(comm, p.shape(), p.exec(), e.getValue());
            }
        }
        Result result = new Result(plannerLabels, altLabels, plannerMs, oneStreamMs, keep);
        if (comm.rank() == 0) {
            LOG.log(System.Logger.Level.INFO, "ubuf: " + result.describe());
        }
        return result;
    }

    /** Rank 0's alternatives (op key to one-stream candidate), the same on every rank. */
    private static Map<String, Candidate> agreedAlternatives(TpContext tc, Map<String, TpContext.PlannedOp> byKey) {
        TpCommunicator comm = tc.comm();
        Planner planner = tc.planner();
        StringBuilder mine = new StringBuilder();
        if (comm.rank() == 0) {
            for (var e : byKey.entrySet()) {
                TpContext.PlannedOp p = e.getValue();
                Candidate c = oneStreamAlternative(p.decision().chosen(), p.decision().measured(),
                        planner.candidates(p.shape(), comm.context().device(), p.exec()));
                if (c != null) {
                    mine.append(e.getKey()).append('\t').append(c.label()).append('\n');
                }
            }
        }
        byte[] b = comm.bootstrap().broadcast(comm.rank() == 0 ? mine.toString().getBytes(StandardCharsets.UTF_8)
                : null, 0);
        Map<String, Candidate> agreed = new LinkedHashMap<>();
        for (String line : new String(b, StandardCharsets.UTF_8).split("\n")) {
            if (line.isEmpty()) {
                continue;
            }
            String[] kv = line.split("\t", 2);
            TpContext.PlannedOp p = byKey.get(kv[0]);
            if (p == null) {
                throw new IllegalStateException("step check: rank 0 planned '" + kv[0] + "', this rank did not");
            }
            Candidate c = planner.candidates(p.shape(), comm.context().device(), p.exec()).stream()
                    .filter(x -> x.label().equals(kv[1])).findFirst()
                    .orElseThrow(() -> new IllegalStateException("step check: no candidate " + kv[1] + " for "
                            + kv[0] + " on rank " + comm.rank()));
            agreed.put(kv[0], c);
        }
        return agreed;
    }

    /**
     * The fastest of {@code candidates} with one compute stream that the planner measured ({@code t}), when its
     * choice {@code chosen} runs several compute streams and that candidate was within {@link #WINDOW} of it alone;
     * else null.
     */
    static Candidate oneStreamAlternative(Candidate chosen, CandidateTimes t, List<Candidate> candidates) {
        Double chosenMs = t.medianMs().get(chosen.label());
        if (chosenMs == null || computeStreams(chosen) <= 1) {
            return null;
        }
        Candidate best = null;
        double bestMs = Double.POSITIVE_INFINITY;
        for (Candidate c : candidates) {
            Double ms = t.medianMs().get(c.label());
            if (ms != null && ms < bestMs && computeStreams(c) == 1) {
                best = c;
                bestMs = ms;
            }
        }
        return best != null && bestMs <= chosenMs * (1 + WINDOW) ? best : null;
    }

    /** The GEMM streams of a candidate's plan (rank 0's; every rank's plan has the same streams); NCCL: 1. */
    static int computeStreams(Candidate c) {
        return c.schedule().map(s -> (int) s.plan(0).streams().stream().filter(r -> r == StreamRole.COMPUTE).count())
                .orElse(1);
    }

    /** Runs {@code replace} (none: the planner's choices) from now on: ops made again, their GEMMs tuned. */
    private static void use(TpContext tc, List<? extends TpLayer> layers, List<TensorView[]> operands,
                            CudaStream stream, Map<String, Candidate> replace, Set<GemmName> gemms) {
        tc.comm().await(stream, () -> "the step check's steps");
        tc.override(replace, gemms);
        for (TpLayer l : layers) {
            l.prepare();
        }
        tc.tunePass(layers, operands, stream);
    }

    /** One untimed step, then {@link #STEPS} timed ones on this rank, into {@code into} from {@code at}, ms. */
    private static void timeSteps(TpContext tc, List<? extends TpLayer> layers, List<TensorView[]> operands,
                                  CudaStream stream, CudaEvent start, CudaEvent end, double[] into, int at) {
        TpCommunicator comm = tc.comm();
        for (int i = 0; i <= STEPS; i++) {
            comm.bootstrap().barrier(); // every rank starts the step together
            start.record(stream);
            for (int l = 0; l < layers.size(); l++) {
                layers.get(l).forward(operands.get(l)[0], stream);
                layers.get(l).backward(operands.get(l)[1], stream);
            }
            end.record(stream);
            comm.await(stream, () -> "a step of the step check");
            if (i > 0) {
                into[at + i - 1] = end.elapsedMillisSince(start);
            }
        }
    }
}
