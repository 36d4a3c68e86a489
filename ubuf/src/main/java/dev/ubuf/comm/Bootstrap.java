package dev.ubuf.comm;

/** Placeholder until the bootstrap branch merges (same contract as the helper's spec). */
public interface Bootstrap extends AutoCloseable {
    int rank();

    int size();

    byte[][] allGather(byte[] mine);

    byte[] broadcast(byte[] dataOrNull, int root);

    void barrier();

    Bootstrap subgroup(int[] worldRanks);

    void abort(String reason);

    @Override
    void close();
}
