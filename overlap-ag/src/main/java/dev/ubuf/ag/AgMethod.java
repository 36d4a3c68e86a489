package dev.ubuf.ag;

import java.util.Locale;

/**
 * The AllGather methods this module provides (a convenience for typed code and tests; every one is also registered
 * as a {@link dev.ubuf.op.OverlapMethod}, which is how the planner and other modules see them, alongside methods of
 * other modules). {@link #resultName()} is the "method" of plans and results files.
 */
public enum AgMethod {
    /** Ring exchange: tp GEMM chunks, each chunk forwarded to rank+1 while the next GEMM runs. */
    RING(new RingAllGatherGemm()),
    /** Even tp: pair swap, then tp/2 - 1 ring steps of 2-chunk blocks between ranks of the same parity. */
    AGGREGATE(new AggregateAllGatherGemm()),
    /** The gather alone on a comm stream (no GEMM): the caller overlaps an unrelated GEMM. */
    BULK(new BulkAllGather()),
    /** Push the shard to every peer, wait for all, then one GEMM: for shapes too small to decompose. */
    ONESHOT(new OneShotAllGatherGemm());

    private final AgSchedule schedule;

    AgMethod(AgSchedule schedule) {
        this.schedule = schedule;
    }

    public AgSchedule schedule() {
        return schedule;
    }

    /** Whether the plan multiplies by WEIGHT into OUTPUT (all but BULK). */
    public boolean hasGemm() {
        return schedule.hasGemm();
    }

    public String resultName() {
        return schedule.name();
    }

    public static AgMethod parse(String s) {
        for (AgMethod m : values()) {
            if (m.resultName().equalsIgnoreCase(s)) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown AG method '" + s + "' (expected ring, aggregate, bulk or oneshot)");
    }
}
