package dev.ubuf.gemm;

/**
 * The GPU side of tuning: runs and times a GEMM's candidate algorithms on scratch memory. {@link Gemm} supplies one
 * per call (quick single runs on a private stream); CPU tests and untuned runners use {@link #NONE}; a benchmark may
 * supply its own to {@link Gemm#retune}, timing the candidates the way it measures.
 */
@FunctionalInterface
public interface CandidateBench {
    /** Cannot time: the heuristic's first candidate is used for now. */
    CandidateBench NONE = (count, cBytes, cAddress, workspaceBytes, launch) -> null;

    /** Enqueues candidate {@code index} writing its product to {@code c}, with a workspace, on {@code stream}. */
    @FunctionalInterface
    public interface Launch {
        void enqueue(int index, long c, long workspace, long workspaceBytes, long stream);
    }

    /**
     * Times {@code count} candidates, each writing a scratch C of {@code cBytes} that starts at the same offset
     * modulo 256 as the caller's {@code cAddress} (so the candidates see C's real alignment), with a scratch
     * workspace of {@code workspaceBytes}: the caller's C and workspace are never touched.
     *
     * @return milliseconds per run of each candidate, NaN for one that failed to run; null when timing is impossible
     *     now (the caller's stream is capturing a graph)
     * @throws GemmException when every candidate failed
     */
    double[] time(int count, long cBytes, long cAddress, long workspaceBytes, Launch launch);
}
