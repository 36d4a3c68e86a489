package dev.ubuf.atomic;

import dev.ubuf.ag.AgShape;
import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.op.Collective;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanBuilder;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.plan.Region;
import dev.ubuf.plan.StreamRole;
import dev.ubuf.tensor.DType;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * AllGather-GEMM on the atomic GEMM ("ag/atomic"): the copy engine pushes chunks around the ring towards rank r-1
 * into the user buffer, raising the receiver's per-chunk arrival flag with a stream write after each copy, and ONE
 * atomic GEMM launch over the whole gathered buffer [m, k] consumes the chunks as they arrive: its tiles of chunk c
 * wait for arrival flag c. Rank r receives chunk r+1 first (rank r+1's own shard), then r+2, ...: the kernel's visit
 * order from its own chunk r. The output is in natural row order.
 *
 * <p>Flags of rank r: ARRIVAL c = c (c = 0..tp-1, one signal per call: from rank r+1, or from r itself for its own
 * chunk, copied INPUT → UBUF on the GEMM's stream before the kernel), CREDIT = tp (from rank r-1, the rank this one
 * writes into: "my UBUF is free for this call", signalled at the start of every call). Requires bf16 (the kernel writes bf16 or
 * fp32), k and n multiples of 8, tp ≥ 2 and an sm_90a GPU.
 *
 * <p>One option, {@code kernel} (the GEMM's tiling; {@link #optionKeys}). The planner measures it for every
 * two-rank shape {@link #schedule} accepts, with the defaults and, where they take clustered tiles, with the
 * ping-pong's ({@link #tuningSpace}), on sm_90a GPUs ({@link #unsupportedOn}), with copy-engine copies and not
 * with graph-safe execution.
 */
public final class AtomicAllGatherGemm implements OverlapMethod {
    public static final String NAME = "atomic";

    /** For {@link java.util.ServiceLoader}. */
    public AtomicAllGatherGemm() {
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Collective collective() {
        return Collective.ALL_GATHER;
    }

    /**
     * The defaults at two ranks; nothing at more, where it can still be named but is no planner candidate: in the
     * tp 4 sweep (4x H100, 2026-11-27) its times spread widely from round to round (p90 / median 1.12-1.13, against
     * 1.00-1.02 at tp 2), and on 5 of the 7 shapes where the planner chose it the benchmark measured it 3-57% slower
     * than the fastest method; at tp 2 it was within 1% of the fastest on all 3 shapes it was chosen for.
     */
    @Override
    public List<Map<String, String>> tuningSpace(OverlapShape shape) {
        return AtomicSchedule.tuningSpace(this, shape);
    }

    @Override
    public SequencedMap<String, String> optionKeys() {
        return AtomicSchedule.optionKeys();
    }

    @Override
    public Schedule schedule(OverlapShape shape, Map<String, String> options) {
        String kernel = AtomicSchedule.kernel(this, options);
        if (!(shape instanceof AgShape ag)) {
            throw new IllegalArgumentException("ag/" + name() + " needs an AgShape, got " + shape.key());
        }
        AtomicSchedule.requireShape("ag/atomic", ag, List.of(DType.BF16));
        return AtomicSchedule.build(this, ag, options, r -> plan(ag, r, kernel));
    }

    @Override
    public Optional<String> unsupportedOn(CudaDevice device) {
        return AtomicSchedule.unsupportedOn("ag/atomic", device);
    }

    /** Rank {@code rank}'s plan with the kernel's own tiling rule. */
    public static Plan plan(AgShape shape, int rank) {
        return plan(shape, rank, PlanStep.AtomicGemm.AUTO_KERNEL);
    }

    /**
     * Rank {@code rank}'s plan, its GEMM in the tiling {@code kernel} ({@link PlanStep.AtomicGemm#kernel}; no checks
     * of the kernel's own limits: see {@link #schedule}).
     */
    public static Plan plan(AgShape shape, int rank, String kernel) {
        int tp = shape.tp();
        long rows = shape.chunkRows();
        long k = shape.k();
        PlanBuilder b = new PlanBuilder("ag", NAME, rank, tp);
        if (!shape.inputInUserBuffer()) {
            b.matrix(BufferRole.INPUT, shape.dtype(), rows, k);
        }
        b.matrix(BufferRole.UBUF, shape.dtype(), shape.m(), k);
        b.matrix(BufferRole.WEIGHT, shape.dtype(), k, shape.n());
        b.matrix(BufferRole.OUTPUT, shape.dtype(), shape.m(), shape.n());
        int comm = b.stream(StreamRole.COMM);
        int gemm = b.stream(StreamRole.COMPUTE);
        for (int c = 0; c < tp; c++) {
            b.flag(1);
        }
        int credit = b.flag(1);
        int prev = Math.floorMod(rank - 1, tp);
        int next = Math.floorMod(rank + 1, tp);
        // Rank r+1 writes into this rank's UBUF: it may, this call (the previous call has joined).
        b.add(new PlanStep.Signal(comm, next, credit));
        // The own chunk into the gathered buffer first, on the GEMM's stream before its launch: a copy within one
        // GPU may run on the SMs, and the kernel, once resident on every SM, would spin on this chunk's arrival
        // while the copy waits for an SM (both ranks' kernels hung so at 4096x8192x8192 on two H100s).
        // A shard its producer wrote into the buffer needs no copy.
        Region shard = shape.inputInUserBuffer() ? ubuf(rank, rank, rows, k)
                : Region.rows(BufferRole.INPUT, rank, 0, rows, k);
        if (!shape.inputInUserBuffer()) {
            b.add(new PlanStep.Copy(gemm, shard, ubuf(rank, rank, rows, k)));
        }
        b.add(new PlanStep.Signal(gemm, rank, rank));
        b.add(new PlanStep.AtomicGemm(gemm, Region.rows(BufferRole.UBUF, rank, 0, shape.m(), k),
                Region.rows(BufferRole.WEIGHT, rank, 0, k, shape.n()),
                Region.rows(BufferRole.OUTPUT, rank, 0, shape.m(), shape.n()), false, tp, rank, 0, -1, kernel));
        b.add(new PlanStep.WaitSignal(comm, credit, 1));
        b.add(new PlanStep.Copy(comm, shard, ubuf(prev, rank, rows, k)));
        b.add(new PlanStep.Signal(comm, prev, rank));
        for (int i = 1; i < tp - 1; i++) {
            int c = (rank + i) % tp;
            b.add(new PlanStep.WaitSignal(comm, c, 1));
            b.add(new PlanStep.Copy(comm, ubuf(rank, c, rows, k), ubuf(prev, c, rows, k)));
            b.add(new PlanStep.Signal(comm, prev, c));
        }
        return b.build();
    }

    private static Region ubuf(int owner, int chunk, long rows, long k) {
        return Region.rows(BufferRole.UBUF, owner, chunk * rows, rows, k);
    }
}
