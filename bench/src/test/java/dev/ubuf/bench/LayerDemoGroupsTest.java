package dev.ubuf.bench;

import dev.ubuf.bootstrap.DomainLayout;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.layers.tp.Activation;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

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
        LayerDemo.WeightCheck ok = LayerDemo.compareHashes(layout, same);
        assertTrue(ok.identical(), ok.detail());
        assertTrue(ok.detail().contains("2 replicas"), ok.detail());
        long[][] drift = {{0xA, 0xB}, {0xC, 0xD}, {0xA, 0xB}, {0xC, 0xE}};
        LayerDemo.WeightCheck bad = LayerDemo.compareHashes(layout, drift);
        assertFalse(bad.identical(), bad.detail());
        assertTrue(bad.detail().contains("no_overlap parameters of rank 3 (replica 1) differ from rank 1's"),
                bad.detail());
    }

    private static LayerDemo.Settings settings(int replicas, int tp) {
        UbConfig cfg = UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).build();
        return new LayerDemo.Settings(tp, replicas, cfg, cfg, 64, 128, Activation.GELU, 32, 1, 0, 1, DType.BF16,
                0.01f, 1);
    }
}
