package dev.ubuf.bootstrap;

/**
 * The messages between ranks and the hub (rank 0 in TCP, a shared object in memory). In TCP each is one
 * length-prefixed frame ({@link Wire}).
 */
sealed interface Frame {
    /** Name of the world group; subgroups are named {@code parent + "/" + sorted members + "#" + instance}. */
    String WORLD = "world";

    /** First frame of a connecting rank: who it claims to be and the job token. */
    record Hello(int protocolVersion, int rank, int worldSize, String token) implements Frame {
        @Override
        public String toString() {
            return "Hello[version=" + protocolVersion + ", rank=" + rank + ", worldSize=" + worldSize + "]";
        }
    }

    /** The root admitted the connecting rank. */
    record Welcome() implements Frame {
    }

    /** The root refused the connecting rank, and why. */
    record Rejected(String reason) implements Frame {
    }

    /**
     * The root has more connections waiting to introduce themselves than it serves at once, and dropped this one
     * before reading it; a real rank tries again until its connect deadline.
     */
    record Busy(String reason) implements Frame {
    }

    /**
     * One rank's part of operation {@code seq} of {@code group}. {@code members} are the group's world ranks in
     * group-rank order; {@code root} is the group rank of a broadcast's root, else -1.
     */
    record Contribute(String group, int[] members, long seq, OpKind kind, int root, long timeoutMillis,
                      byte[] payload) implements Frame {
    }

    /** The sender closed its bootstrap of {@code group} ({@link #WORLD}: the rank leaves the job). */
    record Leave(String group, int[] members) implements Frame {
    }

    /** The sender aborts the job. */
    record Abort(String reason) implements Frame {
    }

    /**
     * Operation {@code seq} of {@code group} completed: all contributions (allGather), the root's (broadcast) or none.
     */
    record Result(String group, long seq, byte[][] payloads) implements Frame {
    }

    /** Operation {@code seq} of {@code group} failed. */
    record Failed(String group, long seq, Failure failure) implements Frame {
    }

    /** Job-wide news: a rank was lost ({@link Failure.Lost}) or the job was aborted ({@link Failure.Aborted}). */
    record Notice(Failure failure) implements Frame {
    }
}
