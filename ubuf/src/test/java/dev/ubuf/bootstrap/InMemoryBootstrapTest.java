package dev.ubuf.bootstrap;

import dev.ubuf.testutil.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InMemoryBootstrapTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    private static long seed() {
        long seed = System.nanoTime();
        System.out.println("InMemoryBootstrapTest seed " + seed);
        return seed;
    }

    @Test
    void collectivesDeliverEveryRanksPayloads() throws Exception {
        long seed = seed();
        for (int size : new int[]{1, 3, 4}) {
            try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(size, LONG)) {
                RankThreads.run(size, rank -> {
                    CollectiveScenario.run(group.rank(rank), seed, 5);
                    return null;
                }).forEach(RankThreads.Outcome::get);
            }
        }
    }

    @Test
    void subgroupsRenumberRanksByPosition() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(4, LONG)) {
            int[] order = {3, 1}; // group rank 0 is world rank 3
            List<RankThreads.Outcome<byte[][]>> outcomes = RankThreads.run(new int[]{1, 3}, rank -> {
                try (Bootstrap sub = group.rank(rank).subgroup(order)) {
                    assertEquals(2, sub.size());
                    assertEquals(rank == 3 ? 0 : 1, sub.rank());
                    byte[][] gathered = sub.allGather(new byte[]{(byte) rank});
                    try (Bootstrap nested = sub.subgroup(new int[]{sub.rank()})) { // a singleton inside it
                        assertArrayEquals(new byte[]{7}, nested.broadcast(new byte[]{7}, 0));
                    }
                    return gathered;
                }
            });
            for (RankThreads.Outcome<byte[][]> outcome : outcomes) {
                assertArrayEquals(new byte[][]{{3}, {1}}, outcome.get());
            }
        }
    }

    @Test
    void aMissingRankIsNamedAtTheDeadline() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(4, Duration.ofMillis(500))) {
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(new int[]{0, 1, 3}, rank -> {
                group.rank(rank).barrier();
                return null;
            });
            for (RankThreads.Outcome<Object> outcome : outcomes) {
                BootstrapTimeoutException e = outcome.errorOf(BootstrapTimeoutException.class);
                assertEquals(List.of(2), e.missingRanks());
                assertEquals(outcome.rank(), e.rank());
                assertTrue(e.getMessage().contains("barrier #0 in world timed out after 500 ms: rank 2 had not "
                        + "arrived"), e.getMessage());
            }
            // The group is broken now: the late rank fails at once instead of waiting for nobody.
            BootstrapException late = assertThrows(BootstrapException.class, () -> group.rank(2).barrier());
            assertTrue(late.getMessage().contains("rank 2 had not arrived"), late.getMessage());
            BootstrapException after = assertThrows(BootstrapException.class, () -> group.rank(0).barrier());
            assertTrue(after.getMessage().contains("unusable after an earlier failure"), after.getMessage());
        }
    }

    @Test
    void aRankThatClosesWhileOthersWaitIsReportedLost() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, LONG)) {
            CountDownLatch waiting = new CountDownLatch(2);
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(3, rank -> {
                if (rank == 2) {
                    waiting.await(); // the others are about to block in allGather
                    Thread.sleep(50);
                    group.rank(2).close();
                    return null;
                }
                waiting.countDown();
                return group.rank(rank).allGather(new byte[]{(byte) rank});
            });
            for (int rank = 0; rank < 2; rank++) {
                PeerLostException e = outcomes.get(rank).errorOf(PeerLostException.class);
                assertEquals(2, e.lostRank());
                assertTrue(e.getMessage().contains("closed its bootstrap"), e.getMessage());
            }
            assertThrows(PeerLostException.class, () -> group.rank(0).barrier(), "later operations fail at once");
            assertThrows(IllegalStateException.class, () -> group.rank(2).barrier(), "a closed rank refuses");
        }
    }

    @Test
    void abortReachesEveryRankWithItsReason() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, LONG)) {
            CountDownLatch waiting = new CountDownLatch(2);
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(3, rank -> {
                if (rank == 1) {
                    waiting.await();
                    Thread.sleep(50);
                    group.rank(1).abort("CUDA error on rank 1");
                    group.rank(1).barrier(); // the aborting rank's own operations fail too
                    return null;
                }
                waiting.countDown();
                group.rank(rank).barrier();
                return null;
            });
            for (RankThreads.Outcome<Object> outcome : outcomes) {
                BootstrapAbortedException e = outcome.errorOf(BootstrapAbortedException.class);
                assertEquals(1, e.originRank());
                assertEquals("CUDA error on rank 1", e.reason());
            }
            assertThrows(BootstrapAbortedException.class, () -> group.rank(0).allGather(new byte[1]));
        }
    }

    @Test
    void mismatchedCollectivesAreDetected() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(2, rank -> {
                if (rank == 0) {
                    group.rank(0).barrier();
                } else {
                    group.rank(1).allGather(new byte[]{1});
                }
                return null;
            });
            for (RankThreads.Outcome<Object> outcome : outcomes) {
                CollectiveMismatchException e = outcome.errorOf(CollectiveMismatchException.class);
                assertTrue(e.getMessage().contains("barrier") && e.getMessage().contains("allGather"),
                        e.getMessage());
            }
        }
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(2, rank ->
                    group.rank(rank).broadcast(new byte[]{1}, rank)); // each thinks it is the root
            for (RankThreads.Outcome<Object> outcome : outcomes) {
                assertTrue(outcome.errorOf(CollectiveMismatchException.class).getMessage().contains("root"));
            }
        }
    }

    @Test
    void subgroupsWithDifferentMemberOrdersAreAMismatch() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(2, rank ->
                    group.rank(rank).subgroup(rank == 0 ? new int[]{0, 1} : new int[]{1, 0}));
            for (RankThreads.Outcome<Object> outcome : outcomes) {
                outcome.errorOf(CollectiveMismatchException.class);
            }
        }
    }

    @Test
    void aMemberThatClosesItsSubgroupIsReportedLostToTheOtherMembers() throws Exception {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(3, LONG)) {
            List<RankThreads.Outcome<Object>> outcomes = RankThreads.run(new int[]{0, 2}, rank -> {
                Bootstrap sub = group.rank(rank).subgroup(new int[]{0, 2});
                if (rank == 2) {
                    sub.close();
                    return null;
                }
                sub.barrier();
                return null;
            });
            PeerLostException e = outcomes.get(0).errorOf(PeerLostException.class);
            assertEquals(2, e.lostRank());
            // The world is unaffected.
            RankThreads.run(3, rank -> {
                group.rank(rank).barrier();
                return null;
            }).forEach(RankThreads.Outcome::get);
        }
    }

    @Test
    void invalidCallsAreRejectedBeforeAnyExchange() {
        try (InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, LONG)) {
            Bootstrap b = group.rank(0);
            assertThrows(IllegalArgumentException.class, () -> b.broadcast(null, 0), "the root must pass data");
            assertThrows(IllegalArgumentException.class, () -> b.broadcast(null, 2));
            assertThrows(IllegalArgumentException.class, () -> b.subgroup(new int[]{1}), "non-members must not call");
            assertThrows(IllegalArgumentException.class, () -> b.subgroup(new int[]{0, 0}));
            assertThrows(IllegalArgumentException.class, () -> b.subgroup(new int[]{0, 5}));
            assertThrows(IllegalArgumentException.class, () -> b.subgroup(new int[0]));
            assertThrows(NullPointerException.class, () -> b.allGather(null));
        }
        assertThrows(IllegalArgumentException.class, () -> InMemoryBootstrap.group(0, LONG));
        assertThrows(IllegalArgumentException.class, () -> InMemoryBootstrap.group(2, Duration.ZERO));
    }

    @Test
    void closingTheGroupStopsItsTimerThread() throws Exception {
        InMemoryBootstrap.Group group = InMemoryBootstrap.group(2, Duration.ofMillis(200));
        assertThrows(BootstrapTimeoutException.class, () -> group.rank(0).barrier()); // starts the timer thread
        group.close();
        group.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (timerThreadAlive() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(!timerThreadAlive(), "ubuf-bootstrap-timer-in-memory thread still alive after close");
    }

    private static boolean timerThreadAlive() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("ubuf-bootstrap-timer-in-memory") && t.isAlive());
    }
}
