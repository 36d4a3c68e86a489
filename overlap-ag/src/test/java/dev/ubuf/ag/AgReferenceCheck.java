package dev.ubuf.ag;

import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.HostPlanExecutor;
import dev.ubuf.plan.HostRankMemory;
import dev.ubuf.plan.Plan;

import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Runs a domain's AG plans on the host executor for several calls with fresh small-integer shards and weights per
 * (rank, call) (so double arithmetic is exact) and compares every rank's OUTPUT and gathered UBUF after every call
 * with a float64 reference, exactly.
 */
final class AgReferenceCheck {
    private final AgShape shape;
    private final boolean gemm;
    private final boolean inputInUbuf;
    private final int calls;
    private final double[][][] shards; // [call][rank] -> [chunkRows * k]
    private final double[][][] weights; // [call][rank] -> [k * n]

    AgReferenceCheck(AgShape shape, boolean gemm, boolean inputInUbuf, int calls, long dataSeed) {
        this.shape = shape;
        this.gemm = gemm;
        this.inputInUbuf = inputInUbuf;
        this.calls = calls;
        Random rnd = new Random(dataSeed);
        int tp = shape.tp();
        shards = new double[calls][tp][];
        weights = new double[calls][tp][];
        for (int c = 0; c < calls; c++) {
            for (int r = 0; r < tp; r++) {
                shards[c][r] = randomInts(rnd, shape.chunkRows() * shape.k());
                weights[c][r] = randomInts(rnd, shape.k() * shape.n());
            }
        }
    }

    private static double[] randomInts(Random rnd, long n) {
        return rnd.ints(Math.toIntExact(n), -8, 9).asDoubleStream().toArray();
    }

    /** Runs the calls; returns null when every result was exact, else the first mismatch. */
    String run(List<Plan> plans, HostPlanExecutor.Options options) {
        HostPlanExecutor ex = new HostPlanExecutor(plans, options);
        String[] failure = new String[1];
        ex.runCalls(calls, new HostPlanExecutor.CallHooks() {
            @Override
            public void beforeCall(int rank, long call, HostRankMemory memory) {
                double[] shard = shards[(int) call][rank];
                if (inputInUbuf) {
                    memory.setRows(BufferRole.UBUF, rank * shape.chunkRows(), shard);
                } else {
                    memory.set(BufferRole.INPUT, shard);
                }
                if (gemm) {
                    memory.set(BufferRole.WEIGHT, weights[(int) call][rank]);
                }
            }

            @Override
            public void afterCall(int rank, long call, HostRankMemory memory) {
                if (failure[0] != null) {
                    return;
                }
                double[] gathered = gathered(shape, shards[(int) call]);
                if (!Arrays.equals(gathered, memory.get(BufferRole.UBUF))) {
                    failure[0] = "rank " + rank + " call " + call + ": gathered UBUF " + Arrays.toString(
                            memory.get(BufferRole.UBUF)) + ", expected " + Arrays.toString(gathered);
                } else if (gemm) {
                    double[] expected = product(shape, gathered, 1, weights[(int) call][rank], 1);
                    double[] out = memory.get(BufferRole.OUTPUT);
                    if (!Arrays.equals(expected, out)) {
                        failure[0] = "rank " + rank + " call " + call + ": OUTPUT " + Arrays.toString(out)
                                + ", expected " + Arrays.toString(expected);
                    }
                }
            }
        });
        return failure[0];
    }

    /** One call's shards, rank by rank: what every rank's UBUF holds after the gather. */
    static double[] gathered(AgShape shape, double[][] shardsOfCall) {
        int shardSize = Math.toIntExact(shape.chunkRows() * shape.k());
        double[] all = new double[shardSize * shape.tp()];
        for (int r = 0; r < shape.tp(); r++) {
            System.arraycopy(shardsOfCall[r], 0, all, r * shardSize, shardSize);
        }
        return all;
    }

    /**
     * float64 (sx · x)(sw · w) of the gathered x [m, k] and w [k, n]: exact, the values having a few significant bits
     * and the scales being powers of 2 (1 for a plain GEMM).
     */
    static double[] product(AgShape shape, double[] x, double sx, double[] w, double sw) {
        int m = (int) shape.m();
        int k = (int) shape.k();
        int n = (int) shape.n();
        double[] out = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    s += (sx * x[i * k + p]) * (sw * w[p * n + j]);
                }
                out[i * n + j] = s;
            }
        }
        return out;
    }
}
