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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Ring-exchange GEMM→ReduceScatter with the reduction folded into the GEMMs, so no tail reduction is exposed.
 *
 * <p>Chunk c is rows [c*m/tp, (c+1)*m/tp). At step i = 0..tp-1 rank r works on chunk c_i = (r + i + 1) mod tp:
 * <ul>
 *   <li>step 0: GEMM of its own partial of c_0 into SCRATCH (fp32, no accumulate);</li>
 *   <li>step i &gt; 0: the running sum of c_i over ranks r+1..r+i arrives from rank r+1 in a receive slot of this
 *       rank's user buffer; the GEMM accumulates this rank's partial onto it in place (beta = 1, fp32 C/D);</li>
 *   <li>steps 0..tp-2: the copy engine sends the running sum to rank r-1's receive slot for its step i+1, which
 *       works on the same chunk ((r-1) + (i+1) + 1 = r + i + 1);</li>
 *   <li>step tp-1: c = r, the slot holds the sum over all ranks: one rounding into OUTPUT, then the bias.</li>
 * </ul>
 * Each step is cut into {@code ringSubChunks} row sub-chunks, so the copy of sub-chunk j overlaps the GEMM of
 * sub-chunk j+1, and the neighbour's next step starts on sub-chunk 0 while we still compute the last one.
 *
 * <p>Slots and credits: the user buffer holds S = min(ringSlots, tp-1) receive slots of [m/tp, n]; step i uses slot
 * (i-1) mod S. Rank r writes into rank r-1's slots only. Rank r-1 sends rank r a credit as each call starts (every
 * slot of the previous call was read before that call returned) and one per sub-chunk it received before the last
 * step, after its copy onward has completed; the last step's slots are read by the call's last GEMMs or cast, whose
 * credit is the next call's first, so nothing follows them. Before rank r writes sub-chunk j of step i+1 into
 * r-1's slot, it waits for the credit of sub-chunk j of step i+1-S (the slot's previous content in this call) or,
 * when i+1-S &lt; 1, for r-1's first credit of this call (one wait covers all of these, the stream being in
 * order). For tp &gt; 2, S must be at
 * least 2: a slot is freed by sending its sum on, which needs a free slot at the next rank, so with one slot every
 * rank would wait on its neighbour round the ring. Data signals and credits each travel on one stream per
 * (rank, flag), in order, so their absolute sequence numbers never go backwards. SCRATCH is private and is only
 * re-written by the next call, which the executor orders after this one on the same rank (fork/join on the
 * caller's stream).
 *
 * <p>Cost: the sums travel in {@code ringPartialDtype} (fp32 by default), twice the bytes of a bf16 ring, so the
 * copies hide behind the GEMMs only while 2·k flops per output element outlast 4 bytes on the link (see
 * {@link RsPlanner}). The only exposed work after the last GEMM is the cast of its sub-chunk. With sums in the output's
 * type the last step rounds its own partial into the output and then adds the received sum (one more read), so a
 * 2-rank ring computes exactly what a GEMM in that type followed by NCCL's reduce-scatter computes.
 *
 * <p>Flags on rank r: {@link #DATA_FLAG} from r+1, {@code (tp-1) * ringSubChunks} per call (sub-chunk j of step i
 * is signal (i-1)*subChunks + j + 1); {@link #CREDIT_FLAG} from r-1, {@code 1 + (tp-2) * ringSubChunks} per call
 * (the call's first, then sub-chunk j of step i &lt; tp-1 as 1 + its data signal's number).
 * Streams: {@code computeStreams} COMPUTE streams (GEMMs round-robin, the final cast rides on its GEMM's stream),
 * then one COMM stream for copies, data signals and credits.
 *
 * <p>Direct ({@link RsOptions#ringDirect()}, sums in the op's dtype): step i's GEMM stores its running sum straight
 * into rank r-1's slot for step i+1 (C = the sum received from r+1, D = the neighbour's slot), waiting first, on its
 * own stream, for the slot's credit; the data signal and the credit for the slot it read follow the GEMM on the comm
 * stream. No copy, no scratch, and the last step adds the received sum as with the fused tail: the sums cross NVLink
 * as the GEMM's epilogue stores them, which slows that GEMM more than a copy beside it costs (measured on 2 H200s:
 * named only, not a planner candidate).
 *
 * <p>Bidirectional ({@link RsOptions#ringBidirectional()}): the ring above carries the first half of every chunk's
 * rows; a mirror ring carries the second half the other way (rank r works at step i on chunk r-i-1 and sends to
 * r+1), with its own data flag (from r-1) and credit flag (from r+1), declared after the first ring's, its own COMM
 * stream, and the second half of every slot and of SCRATCH. Each rank then copies to both neighbours at once, on two
 * copy engines and both directions of the links. The rings' sub-chunks are issued alternately, step by step.
 */
public final class RingExchangeGemmReduceScatter implements RsOverlapMethod {
    /** Flag on which a rank receives running sums from rank r+1. */
    public static final int DATA_FLAG = 0;
    /** Flag on which a rank receives credits (slot free) from rank r-1. */
    public static final int CREDIT_FLAG = 1;

    /** For {@link java.util.ServiceLoader}, which makes the method through this constructor. */
    public RingExchangeGemmReduceScatter() {
    }

    @Override
    public String name() {
        return "ring";
    }

    @Override
    public Optional<String> whyUnsupported(RsShape shape, RsOptions options) {
        if (options.ringDirect() && options.ringPartialDtype() != shape.dtype()) {
            return Optional.of("ring: direct=1 has each GEMM add the received sum as its C operand, which cuBLASLt"
                    + " reads in the result's type: it needs lowp=1 (sums in " + shape.dtype().shortName() + ")");
        }
        if (options.ringFusedTail() && options.ringPartialDtype() != shape.dtype()) {
            return Optional.of("ring: fuse=1 adds the received sum as the last GEMM's C operand, which cuBLASLt reads in"
                    + " the output's type: it needs lowp=1 (sums in " + shape.dtype().shortName() + ")");
        }
        if (options.ringBidirectional() && options.ringSubChunks() > shape.rowsPerRank() / 2) {
            return Optional.of("ring: bidir with ringSubChunks=" + options.ringSubChunks() + " needs that many rows"
                    + " in each half of a chunk, but m/tp=" + shape.rowsPerRank() + " rows per chunk");
        }
        return options.ringSubChunks() > shape.rowsPerRank()
                ? Optional.of("ring: ringSubChunks=" + options.ringSubChunks() + " exceeds m/tp=" + shape.rowsPerRank()
                              + " rows per chunk")
                : Optional.empty();
    }

    /** Receive slots in each rank's user buffer. */
    public static int slots(RsShape shape, RsOptions options) {
        return Math.min(options.ringSlots(), shape.tp() - 1);
    }

    @Override
    public Plan plan(RsShape shape, RsOptions options, int rank) {
        PlanParts.checkRank(shape, rank);
        int tp = shape.tp();
        long mc = shape.rowsPerRank();
        long n = shape.n();
        int slots = slots(shape, options);
        int perCall = (tp - 1) * options.ringSubChunks();
        int creditsPerCall = 1 + (tp - 2) * options.ringSubChunks();

        PlanBuilder b = new PlanBuilder("rs", name(), rank, tp);
        PlanParts.declareOperands(b, shape);
        PlanParts.declareOutput(b, shape);
        b.matrix(BufferRole.UBUF, options.ringPartialDtype(), slots * mc, n);
        if (!options.ringDirect()) {
            b.matrix(BufferRole.SCRATCH, options.ringPartialDtype(), mc, n);
        }
        List<Ring> rings = new ArrayList<>();
        long half = options.ringBidirectional() ? mc / 2 : mc;
        rings.add(new Ring(-1, 0, half, b.flag(perCall), b.flag(creditsPerCall)));
        assert rings.getFirst().dataFlag == DATA_FLAG && rings.getFirst().creditFlag == CREDIT_FLAG;
        if (options.ringBidirectional()) {
            rings.add(new Ring(+1, half, mc - half, b.flag(perCall), b.flag(creditsPerCall)));
        }
        int[] compute = new int[options.computeStreams()];
        for (int s = 0; s < compute.length; s++) {
            compute[s] = b.stream(StreamRole.COMPUTE);
        }
        for (Ring ring : rings) {
            ring.comm = b.stream(StreamRole.COMM);
            ring.creditAwaited = new int[ring.comm + 1];
            Arrays.fill(ring.creditAwaited, -1);
        }
        // This call's first credits: the slots the neighbours wrote in the previous call were all read before that
        // call returned, so they are free now. At tp 2, the call's only credits, sent first on the first compute
        // stream, ahead of its GEMM: a signal kernel issued beside a GEMM that holds every SM waits for the GEMM to
        // give one up, and the neighbour's first send waits for it. With more ranks the in-call credits follow on the
        // comm stream, and every credit to one rank must travel on one stream (in order), so these go there too.
        for (Ring ring : rings) {
            b.add(new PlanStep.Signal(tp == 2 ? compute[0] : ring.comm, ring.previous(rank, tp), ring.creditFlag));
        }

        int gemm = 0;
        for (int step = 0; step < tp; step++) {
            for (int j = 0; j < options.ringSubChunks(); j++) {
                for (Ring ring : rings) {
                    issue(b, shape, options, rank, ring, step, j, compute[gemm++ % compute.length]);
                }
            }
        }
        return shape.finish(b.build());
    }

    /**
     * One direction round the ring over rows [rowLo, rowLo + rows) of every chunk: {@code direction} -1 sends the
     * running sums to rank r-1 (and works at step i on chunk r+i+1), +1 to rank r+1 (chunk r-i-1). Its own data and
     * credit flags and its own comm stream; {@code creditAwaited[s]} is the highest credit stream s has waited for
     * (a wait no higher is moot: the stream runs in order): the comm stream before its copies, or with
     * {@link RsOptions#ringDirect()} each GEMM's stream before the GEMM writes into the neighbour's slot.
     */
    private static final class Ring {
        final int direction;
        final long rowLo;
        final long rows;
        final int dataFlag;
        final int creditFlag;
        int comm;
        int[] creditAwaited;

        Ring(int direction, long rowLo, long rows, int dataFlag, int creditFlag) {
            this.direction = direction;
            this.rowLo = rowLo;
            this.rows = rows;
            this.dataFlag = dataFlag;
            this.creditFlag = creditFlag;
        }

        /** The chunk this ring works on at {@code step} on {@code rank}. */
        long chunk(int rank, int step, int tp) {
            return Math.floorMod(rank - direction * (step + 1), tp);
        }

        /** The rank the running sums go to. */
        int next(int rank, int tp) {
            return Math.floorMod(rank + direction, tp);
        }

        /** The rank the running sums come from, which this rank's credits go to. */
        int previous(int rank, int tp) {
            return Math.floorMod(rank - direction, tp);
        }
    }

    /** Sub-chunk j of ring step {@code step} of {@code ring}: its GEMM, and its copy onward or its final cast. */
    private void issue(PlanBuilder b, RsShape shape, RsOptions options, int rank, Ring ring, int step, int j,
                       int stream) {
        int tp = shape.tp();
        long mc = shape.rowsPerRank();
        long n = shape.n();
        int subChunks = options.ringSubChunks();
        int slots = slots(shape, options);
        int comm = ring.comm;
        int next = ring.next(rank, tp);
        int previous = ring.previous(rank, tp);
        long chunk = ring.chunk(rank, step, tp);
        long lo = ring.rowLo + subChunkStart(ring.rows, subChunks, j);
        long rows = subChunkStart(ring.rows, subChunks, j + 1) - subChunkStart(ring.rows, subChunks, j);
        // Sums in the output's type: the last step adds the received sum to the rounded own partial.
        boolean outputTypedSums = options.ringPartialDtype() == shape.dtype();
        Region x = Region.rows(BufferRole.INPUT, rank, chunk * mc + lo, rows, shape.k());
        Region w = Region.rows(BufferRole.WEIGHT, rank, 0, shape.k(), n);
        Region sum;
        boolean last = step == tp - 1;
        if (step == 0) {
            sum = Region.rows(BufferRole.SCRATCH, rank, lo, rows, n);
        } else {
            sum = Region.rows(BufferRole.UBUF, rank, slotRow(slots, step, mc) + lo, rows, n);
        }
        if (last && outputTypedSums) {
            Region out = Region.rows(BufferRole.OUTPUT, rank, lo, rows, n);
            if (options.ringFusedTail() || options.ringDirect()) {
                // The GEMM waits for the received sum and adds it as its C operand, no pass after it (cuBLASLt rounds
                // its product first: without a bias, the unfused tail's bits); a bias rides in its epilogue.
                b.add(new PlanStep.WaitSignal(stream, ring.dataFlag, sequence(subChunks, step, j)));
                b.add(PlanParts.gemmAdd(shape, stream, x, w, sum, out));
            } else {
                // The own partial is rounded to the output type and then added to the received sum, as an
                // unoverlapped GEMM + reduce-scatter in that type does; and the GEMM need not wait for the data.
                b.add(PlanParts.gemm(shape, stream, x, w, out, false));
                b.add(new PlanStep.WaitSignal(stream, ring.dataFlag, sequence(subChunks, step, j)));
                b.add(new PlanStep.Reduce(stream, List.of(sum), out, true));
            }
            if (shape.bias()) {
                b.add(new PlanStep.AddBias(stream, out));
            }
            return; // the slot's credit is the next call's first
        }
        if (step > 0) {
            b.add(new PlanStep.WaitSignal(stream, ring.dataFlag, sequence(subChunks, step, j)));
        }
        if (!last && options.ringDirect()) {
            // The GEMM writes the running sum into the neighbour's slot itself (reading the received sum as C).
            int nextStep = step + 1;
            awaitCredit(b, ring, stream, subChunks, nextStep - slots, j);
            Region dst = Region.rows(BufferRole.UBUF, next, slotRow(slots, nextStep, mc) + lo, rows, n);
            b.add(step == 0 ? PlanParts.gemm(shape, stream, x, w, dst, false)
                    : PlanParts.gemmAdd(shape, stream, x, w, sum, dst));
            b.order(stream, comm);
            b.add(new PlanStep.Signal(comm, next, ring.dataFlag));
            if (step > 0) {
                b.add(new PlanStep.Signal(comm, previous, ring.creditFlag));
            }
            return;
        }
        b.add(PlanParts.gemm(shape, stream, x, w, sum, step > 0));
        if (!last) {
            b.order(stream, comm);
            int nextStep = step + 1;
            awaitCredit(b, ring, comm, subChunks, nextStep - slots, j);
            Region dst = Region.rows(BufferRole.UBUF, next, slotRow(slots, nextStep, mc) + lo, rows, n);
            b.add(new PlanStep.Copy(comm, sum, dst));
            b.add(new PlanStep.Signal(comm, next, ring.dataFlag));
            if (step > 0) {
                b.add(new PlanStep.Signal(comm, previous, ring.creditFlag));
            }
        } else {
            Region out = Region.rows(BufferRole.OUTPUT, rank, lo, rows, n);
            b.add(new PlanStep.Reduce(stream, List.of(sum), out, false));
            if (shape.bias()) {
                b.add(new PlanStep.AddBias(stream, out));
            }
        }
    }

    /**
     * Before {@code stream} writes sub-chunk j into the neighbour's slot, the credit for that slot's previous content:
     * sub-chunk j of step {@code reused} of this call (credit 1 + its data signal's number), or (reused &lt; 1) the
     * neighbour's first credit of this call, which it sends as the call starts (it has read everything of the last).
     */
    private static void awaitCredit(PlanBuilder b, Ring ring, int stream, int subChunks, int reused, int j) {
        int credit = reused >= 1 ? 1 + sequence(subChunks, reused, j) : 1;
        if (credit > ring.creditAwaited[stream]) {
            b.add(new PlanStep.WaitSignal(stream, ring.creditFlag, credit));
            ring.creditAwaited[stream] = credit;
        }
    }

    /** First row of sub-chunk j of a chunk of mc rows (uneven splits spread the remainder). */
    static long subChunkStart(long mc, int subChunks, int j) {
        return mc * j / subChunks;
    }

    /** Signal number (1-based, within a call) of sub-chunk j of ring step i >= 1. */
    private static int sequence(int subChunks, int step, int j) {
        return (step - 1) * subChunks + j + 1;
    }

    /** First UBUF row of the receive slot of ring step i >= 1. */
    private static long slotRow(int slots, int step, long mc) {
        return ((step - 1) % slots) * mc;
    }

    /** With {@code free=F} the GEMMs leave F SMs to the signal and wait kernels beside them. */
    @Override
    public ExecutionSettings settings(RsSchedule schedule, ExecutionSettings base, int smCount) {
        int free = schedule.rsOptions().freeSms();
        return base.leavingSmsFree(free, smCount, schedule.label() + ": free=" + free);
    }

    @Override
    public List<String> keys() {
        return List.of("cs", "sub", "slots", "lowp", "bidir", "fuse", "direct", "free");
    }

    /**
     * Sub-chunks 1, 2 and 4 (as m/tp allows), each also with partials in the op's dtype, which halves the bytes on the
     * link: with two ranks that is one rounding, as a reduce-scatter of rounded partials does; with more, one rounding
     * a hop, as NCCL's ring reduce-scatter (a candidate too) rounds in the op's dtype at every hop, and as the layers
     * run their rings. And the bidirectional ring with those partials, 1 and 2 sub-chunks a half (the GEMM sizes of 2
     * and 4 sub-chunks), which sends to both neighbours at once. The partials in the op's dtype also on one compute
     * stream, listed first so that a near-tie takes it: chunk GEMMs issued on several streams run side by side inside a
     * layer's step, and the first chunk, whose send starts the ring, finishes last (an 8B, tp 2 layer trace: three
     * 2048-row GEMMs of 160 us alone ended 164, 309 and 464 us after they began, the first-sent last). Not
     * {@code free=1}, named only: timed as graph replays (as the layers run their ops) its candidates tied with the
     * same options without it on 2 and 4 H200s (FP8 8B fc2: 0.4106 against 0.4108 ms at tp 2, 0.3804 against 0.3874
     * at tp 4, neither chosen). Not {@code direct=1}, named only: on 2 H200s at 8B fc2 (8192x7168x4096, bf16) its
     * candidates took 0.714-0.758 ms against 0.654 for the copy-engine ring, the GEMM whose epilogue stores over
     * NVLink running the slower for it (FP8: 0.436-0.481 against 0.401).
     */
    @Override
    public List<Map<String, String>> tuningSpace(OverlapShape shape) {
        if (!(shape instanceof RsShape rs) || whyUnsupported(rs, RsOptions.DEFAULTS
                .withRingSubChunks(1)).isPresent()) {
            return List.of();
        }
        List<Map<String, String>> space = new ArrayList<>();
        for (int sub : new int[]{1, 2, 4}) {
            if (sub <= rs.rowsPerRank()) {
                space.add(Map.of("sub", Integer.toString(sub)));
                space.add(Map.of("sub", Integer.toString(sub), "lowp", "1", "cs", "1"));
                space.add(Map.of("sub", Integer.toString(sub), "lowp", "1"));
                if (sub > 1) {
                    // With one sub-chunk the last GEMM would wait for the whole received sum.
                    space.add(Map.of("sub", Integer.toString(sub), "lowp", "1", "cs", "1", "fuse", "1"));
                }
            }
        }
        for (int sub : new int[]{1, 2}) {
            RsOptions bidir = RsOptions.DEFAULTS.withRingSubChunks(sub).withRingBidirectional(true);
            if (whyUnsupported(rs, bidir).isEmpty()) {
                space.add(Map.of("sub", Integer.toString(sub), "lowp", "1", "bidir", "1"));
            }
        }
        return space;
    }
}
