package dev.ubuf.bootstrap;

import java.util.stream.IntStream;

/**
 * How a world of ranks splits into tensor-parallel (TP) domains: consecutive blocks of {@code tp} ranks (so a TP
 * domain stays inside one node's NVLink domain), and orthogonal data-parallel (DP) groups made of the ranks with the
 * same position in every TP domain.
 *
 * <p>Example, world 8, tp 2: TP groups {0,1} {2,3} {4,5} {6,7}; DP groups {0,2,4,6} {1,3,5,7}.
 */
public record DomainLayout(int worldSize, int tp) {

    public DomainLayout {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + worldSize);
        }
        if (tp < 1) {
            throw new IllegalArgumentException("tp must be at least 1, got " + tp);
        }
        if (worldSize % tp != 0) {
            throw new IllegalArgumentException("tp " + tp + " does not divide world size " + worldSize);
        }
    }

    /** Number of TP groups (= the size of each DP group). */
    public int tpGroups() {
        return worldSize / tp;
    }

    /** Size of a DP group (= {@link #tpGroups()}). */
    public int dp() {
        return tpGroups();
    }

    /** Index of the TP group holding {@code rank} (= its rank within its DP group). */
    public int tpGroupOf(int rank) {
        checkRank(rank);
        return rank / tp;
    }

    /** Position of {@code rank} inside its TP group. */
    public int tpRank(int rank) {
        checkRank(rank);
        return rank % tp;
    }

    /** Rank of {@code rank} inside its DP group (= {@link #tpGroupOf}). */
    public int dpRank(int rank) {
        return tpGroupOf(rank);
    }

    /** World ranks of the TP group holding {@code rank}, ascending: consecutive ranks. */
    public int[] tpGroupRanks(int rank) {
        int first = tpGroupOf(rank) * tp;
        return IntStream.range(first, first + tp).toArray();
    }

    /** World ranks of the DP group holding {@code rank}, ascending: the same TP position in every TP group. */
    public int[] dpGroupRanks(int rank) {
        int position = tpRank(rank);
        return IntStream.range(0, tpGroups()).map(group -> group * tp + position).toArray();
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " outside world of " + worldSize + " ranks");
        }
    }
}
