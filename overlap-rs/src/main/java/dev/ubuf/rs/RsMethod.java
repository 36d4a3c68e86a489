package dev.ubuf.rs;

/** The GEMM→ReduceScatter overlap methods (results-file names in {@link #shortName()}). */
public enum RsMethod {
    /** Ring exchange with fp32 partial sums folded into later GEMMs: no exposed tail reduction. */
    RING("ring"),
    /** GEMM in column blocks; block j is pull-reduced by every rank while block j+1 computes. */
    PIPELINE("pipeline"),
    /** Reduce-scatter of a partial the caller already wrote into the user buffer (no GEMM in the plan). */
    BULK("bulk"),
    /** Small M: one GEMM, then one pull reduce-scatter; nothing to overlap, nothing to lose. */
    ONESHOT("oneshot");

    private final String shortName;

    RsMethod(String shortName) {
        this.shortName = shortName;
    }

    /** The name used in plans, results files and on command lines. */
    public String shortName() {
        return shortName;
    }
}
