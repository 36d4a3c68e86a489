package dev.ubuf.bootstrap;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A deterministic script of collectives that every rank runs with the same seed: each rank can compute every other
 * rank's payloads, so each checks its results on its own (threads and child processes alike).
 */
final class CollectiveScenario {
    private CollectiveScenario() {
    }

    /** The payload rank {@code rank} contributes in round {@code round} (length 0..300, random bytes). */
    static byte[] payload(long seed, String tag, int round, int rank) {
        SplittableRandom random = new SplittableRandom(seed ^ (31L * round + 1_000_003L * rank) ^ tag.hashCode());
        byte[] bytes = new byte[random.nextInt(301)];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    /** allGather, broadcast (rotating roots), barrier, then the same inside TP and DP subgroups (even sizes). */
    static void run(Bootstrap b, long seed, int rounds) {
        for (int round = 0; round < rounds; round++) {
            checkAllGather(b, seed, "world", round);
            checkBroadcast(b, seed, "world", round, round % b.size());
            b.barrier();
        }
        if (b.size() % 2 == 0) {
            DomainLayout layout = new DomainLayout(b.size(), 2);
            try (Bootstrap tp = b.subgroup(layout.tpGroupRanks(b.rank()));
                 Bootstrap dp = b.subgroup(layout.dpGroupRanks(b.rank()))) {
                check(tp.size() == 2 && tp.rank() == layout.tpRank(b.rank()), "tp subgroup rank/size", b);
                check(dp.size() == layout.dp() && dp.rank() == layout.dpRank(b.rank()), "dp subgroup rank/size", b);
                for (int round = 0; round < rounds; round++) {
                    checkAllGather(tp, seed, "tp" + layout.tpGroupOf(b.rank()), round);
                    checkBroadcast(dp, seed, "dp" + layout.tpRank(b.rank()), round, round % dp.size());
                    tp.barrier();
                    dp.barrier();
                }
            }
            b.barrier(); // everyone has closed their subgroups before the world goes on
        }
    }

    private static void checkAllGather(Bootstrap b, long seed, String tag, int round) {
        byte[] mine = payload(seed, tag, round, b.rank());
        byte[][] all = b.allGather(mine);
        check(all.length == b.size(), "allGather returned " + all.length + " arrays", b);
        for (int r = 0; r < b.size(); r++) {
            check(Arrays.equals(all[r], payload(seed, tag, round, r)),
                    "allGather " + tag + " round " + round + ": wrong payload of rank " + r, b);
        }
        check(all[b.rank()] != mine, "allGather must return this rank's own copies", b);
    }

    private static void checkBroadcast(Bootstrap b, long seed, String tag, int round, int root) {
        byte[] expected = payload(seed, tag + "-bcast", round, root);
        byte[] got = b.broadcast(b.rank() == root ? expected : null, root);
        check(Arrays.equals(got, expected), "broadcast " + tag + " round " + round + " from root " + root, b);
    }

    private static void check(boolean condition, String what, Bootstrap b) {
        if (!condition) {
            throw new AssertionError("rank " + b.rank() + " of " + b.size() + ": " + what);
        }
    }
}
