package dev.ubuf.rs;

import java.util.Objects;

/**
 * Picks the RS method for a GEMM→ReduceScatter shape (BULK is never picked: it is a different operation).
 *
 * <ul>
 *   <li>ONESHOT when m &lt;= {@code oneShotMaxM}: chunks of a few rows make slow GEMMs and latency-bound copies,
 *       so one GEMM and one reduce-scatter is never slower than the baseline.</li>
 *   <li>otherwise RING when k &gt;= {@code ringMinK}: the fp32 ring moves 4 bytes per output element per step
 *       against 2·k flops of GEMM, so it hides its copies only when k is large (on H100, about k &gt;= 2·GEMM
 *       flop/s / NVLink byte/s per peer, several thousand); it has no exposed tail and needs no SM budget.</li>
 *   <li>otherwise PIPELINE (Transformer Engine's default for row-parallel fprop).</li>
 * </ul>
 * When the preferred method cannot run the shape (n not divisible by numSplits, tp above the pull-reduce
 * fan-in, too few rows per chunk) the next one that can is taken, in the order preferred, RING, PIPELINE,
 * ONESHOT. The thresholds are parameters because they are measured on the GPU, not derived.
 *
 * @param oneShotMaxM largest m (total rows, all ranks) that runs ONESHOT
 * @param ringMinK    smallest per-rank k that prefers RING over PIPELINE; Long.MAX_VALUE never prefers RING
 * @param options     the options every chosen schedule is made with
 */
public record RsPlanner(long oneShotMaxM, long ringMinK, RsOptions options) {

    /** Untuned starting points: ONESHOT up to 1024 rows, RING from k = 8192 on. */
    public static final RsPlanner DEFAULT = new RsPlanner(1024, 8192, RsOptions.DEFAULTS);

    public RsPlanner {
        Objects.requireNonNull(options, "options");
        if (oneShotMaxM < 0 || ringMinK < 0) {
            throw new IllegalArgumentException("thresholds must be >= 0, got oneShotMaxM=" + oneShotMaxM
                    + " ringMinK=" + ringMinK);
        }
    }

    /**
     * Whether an op of this shape should run one GEMM + NCCL ReduceScatter rather than any plan: the small-M region
     * (m &lt;= oneShotMaxM), where fixed costs dominate and NCCL's are the smallest (2x H200, 2026-11-22: M = 256
     * took 0.148 ms through NCCL, 0.146 ms one-shot with a wide spread; M = 1024 0.270 ms against 0.266 ms).
     */
    public boolean prefersNccl(RsShape shape) {
        return shape.m() <= oneShotMaxM;
    }

    /** The method for this shape; throws IllegalArgumentException if no method can run it. */
    public RsMethod choose(RsShape shape) {
        Objects.requireNonNull(shape, "shape");
        RsMethod preferred = shape.m() <= oneShotMaxM ? RsMethod.ONESHOT
                : shape.k() >= ringMinK ? RsMethod.RING : RsMethod.PIPELINE;
        StringBuilder why = new StringBuilder();
        RsOptions o = optionsFor(shape);
        for (RsMethod m : new RsMethod[]{preferred, RsMethod.RING, RsMethod.PIPELINE, RsMethod.ONESHOT}) {
            var reason = RsSchedule.whyUnsupported(m, shape, o);
            if (reason.isEmpty()) {
                return m;
            }
            why.append("; ").append(reason.get());
        }
        throw new IllegalArgumentException("no RS method can run " + shape + why);
    }

    /** The schedule of {@link #choose}'s method, with {@link #optionsFor}'s options. */
    public RsSchedule schedule(RsShape shape) {
        return RsSchedule.of(choose(shape), shape, optionsFor(shape));
    }

    /**
     * The options for this shape, tuned on 2x H200 (bench/results, 2026-11-22):
     * <ul>
     *   <li>tp = 2: the ring's partial travels in the op's dtype, not fp32. With two ranks there is one hop, so the
     *       output is round(own fp32 partial + round(peer's partial)), the add done in fp32 by the GEMM epilogue
     *       (beta = 1): the same fp32 accumulation of once-rounded partials as a reduce-scatter of bf16 partials, at
     *       half the NVLink bytes. With more ranks each hop would round the running sum again, so tp &gt; 2 keeps
     *       fp32 partials.</li>
     *   <li>4 ring sub-chunks from 4096 rows per rank on (smaller copies start sooner), else the base options'.</li>
     * </ul>
     */
    public RsOptions optionsFor(RsShape shape) {
        RsOptions o = options;
        if (shape.tp() == 2) {
            o = o.withRingPartialDtype(shape.dtype());
        }
        if (shape.m() / shape.tp() >= 4096) {
            o = o.withRingSubChunks(Math.max(o.ringSubChunks(), 4));
        }
        return o;
    }
}
