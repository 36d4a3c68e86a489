package dev.ubuf.bootstrap;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DomainLayoutTest {

    @ParameterizedTest(name = "world 8, tp {0}")
    @ValueSource(ints = {1, 2, 4, 8})
    void everyRankIsInExactlyOneTpGroupAndOneDpGroupAndTheyAreOrthogonal(int tp) {
        DomainLayout layout = new DomainLayout(8, tp);
        assertEquals(8 / tp, layout.tpGroups());
        assertEquals(8 / tp, layout.dp());
        int[] tpMembership = new int[8];
        int[] dpMembership = new int[8];
        Set<String> tpGroups = new HashSet<>();
        Set<String> dpGroups = new HashSet<>();
        for (int rank = 0; rank < 8; rank++) {
            int[] tpGroup = layout.tpGroupRanks(rank);
            int[] dpGroup = layout.dpGroupRanks(rank);
            assertEquals(tp, tpGroup.length);
            assertEquals(8 / tp, dpGroup.length);
            assertEquals(rank, tpGroup[layout.tpRank(rank)], "tpRank is the position in the TP group");
            assertEquals(rank, dpGroup[layout.dpRank(rank)], "dpRank is the position in the DP group");
            for (int i = 1; i < tpGroup.length; i++) {
                assertEquals(tpGroup[i - 1] + 1, tpGroup[i], "TP groups are consecutive ranks");
            }
            for (int member : tpGroup) {
                assertArrayEquals(tpGroup, layout.tpGroupRanks(member), "every member sees the same TP group");
                assertEquals(layout.tpGroupOf(rank), layout.tpGroupOf(member));
            }
            for (int member : dpGroup) {
                assertArrayEquals(dpGroup, layout.dpGroupRanks(member), "every member sees the same DP group");
                assertEquals(layout.tpRank(rank), layout.tpRank(member), "DP groups share the TP position");
            }
            // Orthogonal: a TP group and a DP group meet in exactly this rank.
            Set<Integer> common = new HashSet<>();
            Arrays.stream(tpGroup).forEach(common::add);
            common.retainAll(Arrays.stream(dpGroup).boxed().toList());
            assertEquals(Set.of(rank), common);
            if (tpGroups.add(Arrays.toString(tpGroup))) {
                Arrays.stream(tpGroup).forEach(m -> tpMembership[m]++);
            }
            if (dpGroups.add(Arrays.toString(dpGroup))) {
                Arrays.stream(dpGroup).forEach(m -> dpMembership[m]++);
            }
        }
        assertEquals(8 / tp, tpGroups.size());
        assertEquals(tp, dpGroups.size());
        for (int rank = 0; rank < 8; rank++) {
            assertEquals(1, tpMembership[rank], "rank " + rank + " in exactly one TP group");
            assertEquals(1, dpMembership[rank], "rank " + rank + " in exactly one DP group");
        }
    }

    @Test
    void worldEightTpTwoHasTheExpectedGroups() {
        DomainLayout layout = new DomainLayout(8, 2);
        assertArrayEquals(new int[]{4, 5}, layout.tpGroupRanks(5));
        assertArrayEquals(new int[]{1, 3, 5, 7}, layout.dpGroupRanks(5));
        assertEquals(2, layout.tpGroupOf(5));
        assertEquals(1, layout.tpRank(5));
    }

    @Test
    void invalidLayoutsAndRanksAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> new DomainLayout(8, 3));
        assertThrows(IllegalArgumentException.class, () -> new DomainLayout(8, 16));
        assertThrows(IllegalArgumentException.class, () -> new DomainLayout(8, 0));
        assertThrows(IllegalArgumentException.class, () -> new DomainLayout(0, 1));
        DomainLayout layout = new DomainLayout(8, 4);
        assertThrows(IllegalArgumentException.class, () -> layout.tpGroupRanks(8));
        assertThrows(IllegalArgumentException.class, () -> layout.dpGroupRanks(-1));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new DomainLayout(6, 4)).getMessage()
                .contains("tp 4 does not divide world size 6"));
    }
}
