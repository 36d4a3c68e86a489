package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * GEMM→ReduceScatter by scattered pushes: every chunk's partial goes straight to its owner, and the owner sums them
 * at the end. No GEMM waits for a peer, so the GEMMs run back to back on one stream and the transfers hide under
 * them; the ring ({@link RingExchangeGemmReduceScatter}) instead makes each step's GEMM wait for the running sum
 * its neighbour sends, a chain that the copies lengthen wherever a chunk's transfer outlasts its GEMM (tp 4 on
 * H100s). This is Transformer Engine's peer-to-peer reduce-scatter schedule.
 *
 * <p>Rank r computes chunk c_i = (r + i + 1) mod tp at step i = 0..tp-1 (its own chunk last), each cut into
 * {@code ringSubChunks} row sub-chunks:
 * <ul>
 *   <li>steps 0..tp-2: the GEMM writes the partial into SCRATCH row block i; a copy stream of its own (one per
 *       peer, so the pushes to different peers run side by side on the copy engines; or, with
 *       {@code serial=1}, one copy stream for all of them, so that each rank sends to one peer at a time) copies it
 *       into receive slot i of c_i's user buffer (slot d-1 holds the partial from rank r-d) and signals it
 *       there;</li>
 *   <li>step tp-1: the GEMM of the own rows, cut into {@code ownPieces} row pieces ({@code tail}; as many as the
 *       sub-chunks unless named), then on a reduce stream, per piece as soon as every peer's sub-chunks holding
 *       its rows have arrived: the sum of the own partial and the tp-1 received ones, rounded once into OUTPUT,
 *       then the bias. The reduction of piece t runs beside the GEMM of piece t+1, so what is exposed after the
 *       last GEMM is one piece's reduction and whatever of the last push outlasts the own GEMM. Cutting only the
 *       own step finer shortens that tail without making the tp-1 GEMMs before it smaller.</li>
 * </ul>
 * With {@code fuse=1} (partials in the output's type) the own GEMM of each piece first waits for slot 0, the
 * partial of rank r-1 that was pushed at its first step, and adds it as its C operand: the reduction after it
 * reads one source fewer, and at tp 2 there is none.
 * Partials travel in {@code ringPartialDtype}: fp32 by default (the sum rounds once); in the output's type
 * ({@code lowp=1}, half the bytes) the own GEMM writes OUTPUT directly and the reduction adds the received
 * partials to it, so each partial is rounded once and their sum once more, in fp32.
 *
 * <p>Flags on rank r ({@link PlanParts}' layout): flag s counts sub-chunks received from sender s
 * ({@code ringSubChunks} per call), flag tp + q credits from reader q (one per call, sent as q's call starts: q
 * has summed everything this rank sent it in the previous call). Each push stream first waits for its peer's credit
 * of this call, at the op's start. SCRATCH is
 * private and rewritten only by the next call, which the executor orders after this one.
 */
public final class ScatterGemmReduceScatter implements RsOverlapMethod {
    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public ScatterGemmReduceScatter() {
    }

    @Override
    public String name() {
        return "scatter";
    }

    @Override
    public Optional<String> whyUnsupported(RsShape shape, RsOptions options) {
        String limit = PlanParts.pullLimit(name(), shape);
        if (limit != null) {
            return Optional.of(limit);
        }
        if (options.ringFusedTail() && options.ringPartialDtype() != shape.dtype()) {
            return Optional.of("scatter: fuse=1 adds the first partial to arrive as the own GEMM's C operand, which"
                    + " cuBLASLt reads in the output's type: it needs lowp=1 (partials in " + shape.dtype().shortName()
                    + ")");
        }
        if (options.ringSubChunks() > shape.rowsPerRank()) {
            return Optional.of("scatter: sub=" + options.ringSubChunks() + " exceeds m/tp=" + shape.rowsPerRank()
                    + " rows per chunk");
        }
        return options.ownStepPieces() > shape.rowsPerRank()
                ? Optional.of("scatter: tail=" + options.ownStepPieces() + " exceeds m/tp=" + shape.rowsPerRank()
                              + " rows per chunk")
                : Optional.empty();
    }

    @Override
    public Plan plan(RsShape shape, RsOptions options, int rank) {
        PlanParts.checkRank(shape, rank);
        int tp = shape.tp();
        long mc = shape.rowsPerRank();
        long n = shape.n();
        int sub = options.ringSubChunks();
        boolean outputTyped = options.ringPartialDtype() == shape.dtype();

        PlanBuilder b = new PlanBuilder("rs", name(), rank, tp);
        PlanParts.declareOperands(b, shape);
        PlanParts.declareOutput(b, shape);
        b.matrix(BufferRole.UBUF, options.ringPartialDtype(), (tp - 1) * mc, n);
        b.matrix(BufferRole.SCRATCH, options.ringPartialDtype(), (outputTyped ? tp - 1 : tp) * mc, n);
        PlanParts.declarePullFlags(b, sub);
        int compute = b.stream(StreamRole.COMPUTE);
        int reduce = b.stream(StreamRole.COMM);
        int[] push = PlanParts.peerStreams(b, options.serialPushes());
        Region w = Region.rows(BufferRole.WEIGHT, rank, 0, shape.k(), n);

        // This call's credits first: every slot the peers pushed into in the previous call was summed before that call
        // returned, so each peer may push again; sent as the call starts, ahead of the first GEMM (a signal kernel
        // beside a GEMM that holds every SM would wait for it), not after the last sum. Then the peers' credits, while
        // the first GEMM runs: a push into a peer's slot waits for them, and waiting right before the push would add
        // the wait's own latency to the push's.
        PlanParts.signalPeers(b, compute, PlanParts.creditFlag(shape, rank));
        for (int i = 0; i < tp - 1; i++) {
            b.add(new PlanStep.WaitSignal(push[i], PlanParts.creditFlag(shape, (rank + i + 1) % tp), 1));
        }
        for (int i = 0; i < tp - 1; i++) {
            int owner = (rank + i + 1) % tp;
            for (int j = 0; j < sub; j++) {
                long lo = RingExchangeGemmReduceScatter.subChunkStart(mc, sub, j);
                long rows = RingExchangeGemmReduceScatter.subChunkStart(mc, sub, j + 1) - lo;
                Region partial = Region.rows(BufferRole.SCRATCH, rank, i * mc + lo, rows, n);
                b.add(PlanParts.gemm(shape, compute,
                        Region.rows(BufferRole.INPUT, rank, owner * mc + lo, rows, shape.k()), w, partial, false));
                b.order(compute, push[i]);
                // From the owner's side this rank is d = i + 1 ranks behind: its slot d - 1 = i.
                b.add(new PlanStep.Copy(push[i], partial,
                        Region.rows(BufferRole.UBUF, owner, i * mc + lo, rows, n)));
                b.add(new PlanStep.Signal(push[i], owner, PlanParts.readyFlag(rank)));
            }
        }
        int pieces = options.ownStepPieces();
        boolean fuse = options.ringFusedTail();
        for (int t = 0; t < pieces; t++) {
            long lo = RingExchangeGemmReduceScatter.subChunkStart(mc, pieces, t);
            long hi = RingExchangeGemmReduceScatter.subChunkStart(mc, pieces, t + 1);
            long rows = hi - lo;
            // Every sender's sub-chunks up to the one holding this piece's last row.
            int needed = subChunksThrough(mc, sub, hi);
            Region out = Region.rows(BufferRole.OUTPUT, rank, lo, rows, n);
            Region x = Region.rows(BufferRole.INPUT, rank, rank * mc + lo, rows, shape.k());
            List<Region> sources = new ArrayList<>();
            if (fuse) {
                // Slot 0 holds rank r-1's partial, pushed at its first step: here long before the own step.
                b.add(new PlanStep.WaitSignal(compute, PlanParts.readyFlag(Math.floorMod(rank - 1, tp)), needed));
                b.add(PlanParts.gemmAdd(shape, compute, x, w, Region.rows(BufferRole.UBUF, rank, lo, rows, n), out));
            } else {
                Region own = outputTyped ? out : Region.rows(BufferRole.SCRATCH, rank, (tp - 1) * mc + lo, rows, n);
                b.add(PlanParts.gemm(shape, compute, x, w, own, false));
                if (!outputTyped) {
                    sources.add(own);
                }
            }
            b.order(compute, reduce);
            for (int d = fuse ? 2 : 1; d < tp; d++) {
                int sender = Math.floorMod(rank - d, tp);
                b.add(new PlanStep.WaitSignal(reduce, PlanParts.readyFlag(sender), needed));
                sources.add(Region.rows(BufferRole.UBUF, rank, (d - 1) * mc + lo, rows, n));
            }
            if (!sources.isEmpty()) {
                b.add(new PlanStep.Reduce(reduce, sources, out, outputTyped));
            }
            if (shape.bias()) {
                b.add(new PlanStep.AddBias(reduce, out));
            }
        }
        return shape.finish(b.build());
    }

    /** How many of a push's {@code sub} sub-chunks (rows cut as the pushes cut them) hold rows below {@code hi}. */
    static int subChunksThrough(long mc, int sub, long hi) {
        int c = 1;
        while (RingExchangeGemmReduceScatter.subChunkStart(mc, sub, c) < hi) {
            c++;
        }
        return c;
    }

    @Override
    public List<String> keys() {
        return List.of("sub", "tail", "lowp", "fuse", "sm", "serial", "free");
    }

    /**
     * Partials in the op's dtype with 1, 2 and 4 sub-chunks (as m/tp allows), and fp32 partials with 1 and 2: the op's
     * dtype halves the bytes on the links, fp32 rounds only once, and more sub-chunks start the pushes and the
     * reduction earlier at the price of smaller GEMMs; and at tp above 2, whole-chunk pushes in the op's dtype with the
     * first partial to arrive added by the own GEMM ({@code fuse=1}), whole or in 4 pieces ({@code tail=4}: a short
     * tail at the price of the own GEMM alone being cut). Three named options stay out. An SM left free per push stream
     * ({@code free=tp-1}): timed as graph replays, as the layers run their ops, it tied with or lost to the same
     * options without it (8B FP8 fc2 on 4 H200s: 0.3125 against 0.2967 ms, 0.3048 against 0.3037). SM-copy pushes
     * ({@code sm}): on 4 H100s they lost to the copy engines at every shape measured, communication-bound ones
     * included: the chunk GEMMs slowed on the SMs they had left, and the SM copies moved the partials no faster. Pushes
     * on one stream ({@code serial=1}): in the tp 4 sweep of 2026-11-27 (44 shapes, 2 rounds) they took 0.998x the time
     * of a stream per peer (median; 0.91-1.15x, no pattern beyond noise), although alone one peer at a time moves more
     * bytes per second; as a candidate they would only lengthen planning.
     */
    @Override
    public List<Map<String, String>> tuningSpace(OverlapShape shape) {
        if (!(shape instanceof RsShape rs)) {
            return List.of();
        }
        List<Map<String, String>> space = new ArrayList<>();
        for (int sub : new int[]{1, 2, 4}) {
            if (whyUnsupported(rs, RsOptions.DEFAULTS.withRingSubChunks(sub)).isEmpty()) {
                space.add(Map.of("sub", Integer.toString(sub), "lowp", "1"));
                if (sub <= 2) {
                    space.add(Map.of("sub", Integer.toString(sub)));
                }
            }
        }
        RsOptions fused = RsOptions.DEFAULTS.withRingSubChunks(1).withRingPartialDtype(rs.dtype())
                .withRingFusedTail(true);
        if (rs.tp() > 2 && whyUnsupported(rs, fused).isEmpty()) {
            // The first partial to arrive added by the own GEMM, whole or in 4 pieces. At tp 2 slot 0 is the only
            // push, so the own GEMM would wait for all of it; and cutting the own step alone lost there to sub=1 on
            // 6 of 8 GEMM-bound shapes (2x H200, 2026-11-28): the whole push landed only after the own GEMM.
            space.add(Map.of("sub", "1", "lowp", "1", "fuse", "1"));
            if (whyUnsupported(rs, fused.withOwnPieces(4)).isEmpty()) {
                space.add(Map.of("sub", "1", "tail", "4", "lowp", "1", "fuse", "1"));
            }
        }
        return space;
    }

    /**
     * With {@code sm=C} the pushes are SM copy kernels of C blocks each and the GEMMs leave C SMs per push that can
     * run at once (one per peer, or one with {@code serial=1}) to them:
     * a GEMM launched on every SM holds them until it ends, so a push would wait for the SMs behind it. With
     * {@code free=F} the GEMMs leave F more for the signal and wait kernels. A caller's own GEMM budget is kept.
     */
    @Override
    public ExecutionSettings settings(RsSchedule schedule, ExecutionSettings base, int smCount) {
        int ctas = schedule.rsOptions().pushCtas();
        int atOnce = schedule.rsOptions().serialPushes() ? 1 : schedule.shape().tp() - 1;
        int pushSms = ctas * atOnce;
        ExecutionSettings sm = ctas == 0 ? base : base.withCopyEngine(false).withSmCopyCtas(ctas);
        int free = schedule.rsOptions().freeSms();
        String what = ctas == 0 ? "free=" + free
                : atOnce + " pushes of " + ctas + " blocks" + (free == 0 ? "" : " and free=" + free);
        return sm.leavingSmsFree(pushSms + free, smCount, schedule.label() + ": " + what);
    }
}
