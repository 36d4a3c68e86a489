package dev.ubuf.atomic;

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
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * GEMM-ReduceScatter on the atomic GEMM ("rs/atomic"): ONE atomic GEMM launch writes this rank's fp32 partial
 * [m, n] into rows [0, m) of its user buffer, chunk by chunk in the order r+1, r+2, ..., r (the chunk destined
 * for rank r+1 first, its own last), raising its own done flag c as chunk c is complete. The comm stream waits for
 * each done flag (a stream wait on the counter) and pushes that chunk's partial into its owner's receive slot
 * (slot d = rows m + (d-1)·m/tp: from the rank d behind), raising the owner's data flag. A reduce stream folds the
 * slots into an fp32 scratch as they arrive (from r-1 first, r+1 last), then adds its own chunk once the GEMM
 * finished it, rounds once into OUTPUT and adds the bias.
 *
 * <p>Flags of rank r: DONE c = c (from itself, the kernel), DATA d = tp+d-1 (from rank r-d), CREDIT d = 2tp+d-2
 * (from rank r+d: "my slot d is free for this call", signalled at the start of every call). Partials travel in
 * fp32 (twice the bytes of bf16; the kernel writes fp32 so the reduction rounds once). Requires bf16 or fp16, k and
 * n multiples of 8, tp ≥ 2 and an sm_90a GPU.
 *
 * <p>One option, {@code kernel} (the GEMM's tiling; {@link #optionKeys}). The planner measures it for every
 * two-rank shape {@link #schedule} accepts, with the defaults and, where they take clustered tiles, with the
 * ping-pong's ({@link #tuningSpace}), on sm_90a GPUs ({@link #unsupportedOn}), with copy-engine copies and not
 * with graph-safe execution.
 */
public final class AtomicGemmReduceScatter implements OverlapMethod {
    public static final String NAME = "atomic";

    /** For {@link java.util.ServiceLoader}. */
    public AtomicGemmReduceScatter() {
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Collective collective() {
        return Collective.REDUCE_SCATTER;
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
        if (!(shape instanceof RsShape rs)) {
            throw new IllegalArgumentException("rs/" + name() + " needs an RsShape, got " + shape.key());
        }
        AtomicSchedule.requireShape("rs/atomic", rs, List.of(DType.BF16, DType.FP16));
        return AtomicSchedule.build(this, rs, options, r -> plan(rs, r, kernel));
    }

    @Override
    public Optional<String> unsupportedOn(CudaDevice device) {
        return AtomicSchedule.unsupportedOn("rs/atomic", device);
    }

    static int done(int chunk) {
        return chunk;
    }

    static int data(int tp, int distance) {
        return tp + distance - 1;
    }

    static int credit(int tp, int distance) {
        return 2 * tp + distance - 2;
    }

    /** Rank {@code rank}'s plan with the kernel's own tiling rule. */
    public static Plan plan(RsShape shape, int rank) {
        return plan(shape, rank, PlanStep.AtomicGemm.AUTO_KERNEL);
    }

    /**
     * Rank {@code rank}'s plan, its GEMM in the tiling {@code kernel} ({@link PlanStep.AtomicGemm#kernel}; no checks
     * of the kernel's own limits: see {@link #schedule}).
     */
    public static Plan plan(RsShape shape, int rank, String kernel) {
        int tp = shape.tp();
        long m = shape.m();
        long n = shape.n();
        long rows = shape.rowsPerRank();
        PlanBuilder b = new PlanBuilder("rs", NAME, rank, tp);
        b.matrix(BufferRole.INPUT, shape.dtype(), m, shape.k());
        b.matrix(BufferRole.WEIGHT, shape.dtype(), shape.k(), n);
        b.matrix(BufferRole.OUTPUT, shape.dtype(), rows, n);
        if (shape.bias()) {
            b.matrix(BufferRole.BIAS, shape.dtype(), 1, n);
        }
        b.matrix(BufferRole.UBUF, DType.FP32, m + (tp - 1) * rows, n);
        b.matrix(BufferRole.SCRATCH, DType.FP32, rows, n);
        int comm = b.stream(StreamRole.COMM);
        int gemm = b.stream(StreamRole.COMPUTE);
        int reduce = b.stream(StreamRole.COMPUTE);
        for (int i = 0; i < 3 * tp - 2; i++) {
            b.flag(1);
        }
        for (int d = 1; d < tp; d++) {
            b.add(new PlanStep.Signal(comm, Math.floorMod(rank - d, tp), credit(tp, d)));
        }
        b.add(new PlanStep.AtomicGemm(gemm, Region.rows(BufferRole.INPUT, rank, 0, m, shape.k()),
                Region.rows(BufferRole.WEIGHT, rank, 0, shape.k(), n),
                Region.rows(BufferRole.UBUF, rank, 0, m, n), false, tp, (rank + 1) % tp, -1, done(0), kernel));
        for (int d = 1; d < tp; d++) {
            int owner = (rank + d) % tp;
            b.add(new PlanStep.WaitSignal(comm, done(owner), 1));
            b.add(new PlanStep.WaitSignal(comm, credit(tp, d), 1));
            b.add(new PlanStep.Copy(comm, Region.rows(BufferRole.UBUF, rank, owner * rows, rows, n),
                    slot(owner, d, m, rows, n)));
            b.add(new PlanStep.Signal(comm, owner, data(tp, d)));
        }
        Region sum = Region.rows(BufferRole.SCRATCH, rank, 0, rows, n);
        for (int d = 1; d < tp; d++) {
            b.add(new PlanStep.WaitSignal(reduce, data(tp, d), 1));
            b.add(new PlanStep.Reduce(reduce, List.of(slot(rank, d, m, rows, n)), sum, d > 1));
        }
        b.add(new PlanStep.WaitSignal(reduce, done(rank), 1));
        Region out = Region.rows(BufferRole.OUTPUT, rank, 0, rows, n);
        b.add(new PlanStep.Reduce(reduce, List.of(Region.rows(BufferRole.UBUF, rank, rank * rows, rows, n), sum),
                out, false));
        if (shape.bias()) {
            b.add(new PlanStep.AddBias(reduce, out));
        }
        return shape.finish(b.build());
    }

    /** The receive slot {@code distance} of {@code owner}: the partial from rank owner - distance. */
    private static Region slot(int owner, int distance, long m, long rows, long n) {
        return Region.rows(BufferRole.UBUF, owner, m + (distance - 1) * rows, rows, n);
    }
}
