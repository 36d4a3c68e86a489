package dev.ubuf.ag;

import dev.ubuf.plan.Plan;

/**
 * One AllGather(-GEMM) method: builds the plan of one rank. Matrices: INPUT = the caller's shard [m/tp, k]
 * (absent with {@link AgOptions#inputInUbuf()}), UBUF = the gathered input [m, k] (rank r's shard at rows
 * r*m/tp..), WEIGHT [k, n] and OUTPUT [m, n] (absent for BULK).
 *
 * <p>Hand-out contract: after a call joined, UBUF holds the gathered input in natural order and stays valid until
 * the rank's next call starts on the caller's stream (e.g. for wgrad). Credits make that safe: at the start of each
 * call a rank tells every rank that writes into its UBUF that it may, and a writer waits for that credit before its
 * first write of the call. So no peer can overwrite the buffer while the caller still reads the previous result.
 */
public sealed interface AgSchedule permits RingAllGatherGemm, AggregateAllGatherGemm, BulkAllGather,
        OneShotAllGatherGemm {
    AgMethod method();

    Plan plan(AgShape shape, int rank, AgOptions options);
}
