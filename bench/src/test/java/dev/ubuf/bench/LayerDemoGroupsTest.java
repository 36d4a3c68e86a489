package dev.ubuf.bench;

import dev.ubuf.bootstrap.DomainLayout;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.layers.train.ReplicaCheck;
import dev.ubuf.tensor.DType;
import dev.ubuf.trace.RankTrace;
import dev.ubuf.trace.Span;
import dev.ubuf.trace.SpanKind;
import dev.ubuf.trace.StepTrace;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code ubuf demo --num-replicas}: how the world splits into replicas, and the replicas' weight check, on the CPU. */
class LayerDemoGroupsTest {
    @Test
    void twoReplicasOfTpTwoAreConsecutivePairsWithStridedDataParallelGroups() {
        DomainLayout layout = settings(2, 2).layout();
        assertEquals(4, layout.worldSize());
        assertEquals("TP groups (replicas): 0=[0, 1] 1=[2, 3]; DP groups (gradient all-reduce): [0, 2] [1, 3]",
                LayerDemo.describeGroups(layout));
    }

    @Test
    void everyRankIsInExactlyOneTpGroupAndOneDpGroupWhichMeetInItAlone() {
        for (int[] rt : new int[][]{{1, 2}, {2, 2}, {2, 4}, {4, 2}, {3, 2}}) {
            DomainLayout layout = settings(rt[0], rt[1]).layout();
            int world = rt[0] * rt[1];
            assertEquals(world, layout.worldSize());
            for (int rank = 0; rank < world; rank++) {
                int[] tpRanks = layout.tpGroupRanks(rank);
                int[] dpRanks = layout.dpGroupRanks(rank);
                assertEquals(rt[1], tpRanks.length);
                assertEquals(rt[0], dpRanks.length);
                assertEquals(rank, tpRanks[layout.tpRank(rank)]);
                assertEquals(rank, dpRanks[layout.dpRank(rank)]);
                // Every member of the DP group holds the same TP position: the same shard of the weights.
                for (int d : dpRanks) {
                    assertEquals(layout.tpRank(rank), layout.tpRank(d));
                }
                int shared = 0;
                for (int t : tpRanks) {
                    for (int d : dpRanks) {
                        shared += t == d ? 1 : 0;
                    }
                }
                assertEquals(1, shared, "a TP group and a DP group share exactly one rank");
            }
        }
        assertEquals("TP groups (replicas): 0=[0, 1]; DP groups (gradient all-reduce): [0] [1]",
                LayerDemo.describeGroups(settings(1, 2).layout()));
    }

    @Test
    void replicasBelowOneAreRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> settings(0, 2));
        assertTrue(e.getMessage().contains("replicas"), e.getMessage());
    }

    @Test
    void theWeightCheckPassesOnlyWhenEveryReplicaMatchesReplicaZeroAtEachTpPosition() {
        DomainLayout layout = new DomainLayout(4, 2);
        long[][] same = {{0xA, 0xB}, {0xC, 0xD}, {0xA, 0xB}, {0xC, 0xD}};
        ReplicaCheck ok = LayerDemo.compareHashes(layout, same);
        assertTrue(ok.identical(), ok.detail());
        assertTrue(ok.detail().contains("2 replicas"), ok.detail());
        long[][] drift = {{0xA, 0xB}, {0xC, 0xD}, {0xA, 0xB}, {0xC, 0xE}};
        ReplicaCheck bad = LayerDemo.compareHashes(layout, drift);
        assertFalse(bad.identical(), bad.detail());
        assertTrue(bad.detail().contains("no_overlap parameters of rank 3 (replica 1) differ from rank 1's"),
                bad.detail());
    }

    @Test
    void aTraceOfTwoReplicasHasAProcessPerWorldRankAndSaysHowTheyWereAligned() {
        List<RankTrace> ranks = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            ranks.add(new RankTrace(r, List.of("caller"), List.of(new Span("caller", "NCCL DP AllReduce avg of 8"
                    + " gradients", SpanKind.NCCL, 10, 20, Map.of("bytes", 1024L)))));
        }
        StepTrace trace = LayerDemo.stepTrace(settings(2, 2), "4x GPU", "overlap", ranks);
        assertEquals(2, trace.metadata().get("replicas"));
        assertEquals(4, trace.metadata().get("world_size"));
        assertEquals(LayerDemo.describeGroups(settings(2, 2).layout()), trace.metadata().get("groups"));
        assertTrue(trace.metadata().get("clock_alignment").toString().contains("barrier of all 4 world ranks"),
                trace.metadata().toString());
        assertTrue(trace.title().contains("tp 2 x 2 replicas"), trace.title());
        Set<Integer> pids = new TreeSet<>();
        ChromeTrace.toJson(trace).path("traceEvents").forEach(e -> pids.add(e.path("pid").asInt()));
        assertEquals(Set.of(0, 1, 2, 3), pids);
        StepTrace one = LayerDemo.stepTrace(settings(1, 2), "2x GPU", "no_comm", ranks.subList(0, 2));
        assertFalse(one.metadata().containsKey("groups"), one.metadata().toString());
        assertFalse(one.title().contains("replicas"), one.title());
        assertTrue(one.title().startsWith("ubuf demo: one no_comm step"), one.title());
        assertEquals("no_comm", one.metadata().get("mode"));
        assertEquals("overlap", trace.metadata().get("mode"));
    }

    @Test
    void aLaunchedDemoNeedsAWorldOfReplicasTimesTpAndTracesOnlyAsThreads() {
        LayerDemo.Settings traced = settings(2, 2); // trace on
        IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                () -> LayerDemo.checkLaunch(traced, 2));
        assertTrue(size.getMessage().contains("the job has 2 ranks, but --num-replicas 2 x --tp 2 needs 4"),
                size.getMessage());
        IllegalArgumentException trace = assertThrows(IllegalArgumentException.class,
                () -> LayerDemo.checkLaunch(traced, 4));
        assertTrue(trace.getMessage().startsWith("--trace needs every rank's spans in one process"),
                trace.getMessage());
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).build();
        LayerDemo.checkLaunch(new LayerDemo.Settings(2, 1, cfg, cfg, 64, 128, Activation.GELU, 32, 1, 0, 1,
                DType.BF16, 0.01f, 1, false, null, false, false, 1), 2);
    }

    private static LayerDemo.Settings settings(int replicas, int tp) {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).build();
        return new LayerDemo.Settings(tp, replicas, cfg, cfg, 64, 128, Activation.GELU, 32, 1, 0, 1, DType.BF16,
                0.01f, 1, true, null, false, false, 1);
    }

    @Test
    void stepsPerSampleAreOneToSixtyFour() {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).build();
        for (int bad : new int[] {0, -1, LayerDemo.Settings.MAX_STEPS_PER_SAMPLE + 1}) {
            var e = assertThrows(IllegalArgumentException.class, () -> new LayerDemo.Settings(2, 1, cfg, cfg, 64,
                    128, Activation.GELU, 32, 1, 0, 1, DType.BF16, 0.01f, 1, false, null, false, false, bad));
            assertTrue(e.getMessage().contains("--steps-per-sample"), e.getMessage());
        }
        assertEquals(64, new LayerDemo.Settings(2, 1, cfg, cfg, 64, 128, Activation.GELU, 32, 1, 0, 1, DType.BF16,
                0.01f, 1, false, null, false, false, 64).stepsPerSample());
    }
}
