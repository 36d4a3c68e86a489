package dev.ubuf.ag;

/**
 * How an AG plan uses a rank's resources.
 *
 * @param computeStreams GEMM chunks round-robin over this many compute streams (1..3)
 * @param commStreams    BULK and ONESHOT push to their tp-1 peers round-robin over this many comm streams, so
 *                       several copy engines run at once (1..8; RING and AGGREGATE always use one)
 * @param inputInUbuf    the caller already wrote its shard into chunk {@code rank} of the user buffer before the
 *                       call; the plan then has no INPUT matrix and skips the local copy
 * @param freeSms        SMs the GEMMs leave free (cuBLASLt SM_COUNT_TARGET = device SMs - freeSms). Under CUDA graphs
 *                       the signals and waits are one-thread kernels; beside a GEMM that holds every SM until its
 *                       last tile they start only when it ends, and a ring forwards a chunk only after such a wait
 *                       and signals it with such a kernel. 0 = the whole GPU
 */
public record AgOptions(int computeStreams, int commStreams, boolean inputInUbuf, int freeSms) {
    public static final int MAX_COMPUTE_STREAMS = 3;
    public static final int MAX_COMM_STREAMS = 8;

    public AgOptions {
        if (computeStreams < 1 || computeStreams > MAX_COMPUTE_STREAMS) {
            throw new IllegalArgumentException("computeStreams must be 1.." + MAX_COMPUTE_STREAMS + ", got "
                    + computeStreams);
        }
        if (commStreams < 1 || commStreams > MAX_COMM_STREAMS) {
            throw new IllegalArgumentException("commStreams must be 1.." + MAX_COMM_STREAMS + ", got " + commStreams);
        }
        if (freeSms < 0) {
            throw new IllegalArgumentException("freeSms must be >= 0, got " + freeSms);
        }
    }

    /** The options of the host-checked plans, which free SMs do not change. */
    public AgOptions(int computeStreams, int commStreams, boolean inputInUbuf) {
        this(computeStreams, commStreams, inputInUbuf, 0);
    }

    /** Three compute streams, one comm stream, shard copied from INPUT, every SM to the GEMMs. */
    public static AgOptions defaults() {
        return new AgOptions(MAX_COMPUTE_STREAMS, 1, false);
    }

    public AgOptions withComputeStreams(int n) {
        return new AgOptions(n, commStreams, inputInUbuf, freeSms);
    }

    public AgOptions withCommStreams(int n) {
        return new AgOptions(computeStreams, n, inputInUbuf, freeSms);
    }

    public AgOptions withInputInUbuf(boolean inUbuf) {
        return new AgOptions(computeStreams, commStreams, inUbuf, freeSms);
    }

    public AgOptions withFreeSms(int n) {
        return new AgOptions(computeStreams, commStreams, inputInUbuf, n);
    }
}
