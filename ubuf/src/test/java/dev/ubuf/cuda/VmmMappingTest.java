package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class VmmMappingTest {
    private static final long G = FakeVmmDriver.GRANULARITY;
    private static final long BASE = FakeVmmDriver.BASE;

    private static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }

    /** Three peers' 2-granule buffers side by side, like a tp=3 ubuf. */
    private static List<VmmMapping.Segment> threePeers(FakeVmmDriver d) {
        return List.of(
                new VmmMapping.Segment(VmmAllocation.create(d, 2 * G, 0), 0),
                new VmmMapping.Segment(VmmAllocation.importFd(d, 5, 2 * G, 1), 2 * G),
                new VmmMapping.Segment(VmmAllocation.importFd(d, 6, 2 * G, 2), 4 * G));
    }

    @Test
    void reservesMapsThenGrantsAccessPerSegment() {
        FakeVmmDriver d = new FakeVmmDriver();
        List<VmmMapping.Segment> segs = threePeers(d);
        d.calls.clear();
        VmmMapping m = VmmMapping.map(d, 6 * G, segs, new int[] {0, 1, 2});
        assertEquals(List.of(
                "reserve " + 6 * G + " " + G,
                "map " + hex(BASE) + " " + 2 * G + " 0 " + segs.get(0).allocation().handle(),
                "map " + hex(BASE + 2 * G) + " " + 2 * G + " 0 " + segs.get(1).allocation().handle(),
                "map " + hex(BASE + 4 * G) + " " + 2 * G + " 0 " + segs.get(2).allocation().handle(),
                "access " + hex(BASE) + " " + 2 * G + " [0, 1, 2]",
                "access " + hex(BASE + 2 * G) + " " + 2 * G + " [0, 1, 2]",
                "access " + hex(BASE + 4 * G) + " " + 2 * G + " [0, 1, 2]"), d.calls);
        assertEquals(BASE, m.address());
        assertEquals(BASE + 4 * G, m.address(2));
        assertEquals(6 * G, m.size());
    }

    @Test
    void closeUnmapsInReverseThenFreesOnce() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmMapping m = VmmMapping.map(d, 6 * G, threePeers(d), new int[] {0});
        d.calls.clear();
        m.close();
        m.close();
        assertEquals(List.of(
                "unmap " + hex(BASE + 4 * G) + " " + 2 * G,
                "unmap " + hex(BASE + 2 * G) + " " + 2 * G,
                "unmap " + hex(BASE) + " " + 2 * G,
                "free " + hex(BASE) + " " + 6 * G), d.calls);
        assertFalse(m.isOpen());
        assertThrows(IllegalStateException.class, m::address);
    }

    @Test
    void closeTriesEveryStepAndReportsTheFirstFailure() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmMapping m = VmmMapping.map(d, 6 * G, threePeers(d), new int[] {0});
        d.calls.clear();
        d.failOn = "unmap " + hex(BASE + 2 * G);
        CudaException e = assertThrows(CudaException.class, m::close);
        assertEquals("unmap", e.call());
        assertEquals(3, d.callsStartingWith("unmap").size());
        assertEquals(1, d.callsStartingWith("free").size(), "the range is freed even after a failed unmap");
        d.calls.clear();
        m.close();
        assertTrue(d.calls.isEmpty(), "a second close does nothing");
    }

    @Test
    void aFailedMapUndoesWhatWasDone() {
        FakeVmmDriver d = new FakeVmmDriver();
        List<VmmMapping.Segment> segs = threePeers(d);
        d.calls.clear();
        d.failOn = "map " + hex(BASE + 4 * G);
        assertThrows(CudaException.class, () -> VmmMapping.map(d, 6 * G, segs, new int[] {0}));
        assertEquals(List.of(
                "unmap " + hex(BASE + 2 * G) + " " + 2 * G,
                "unmap " + hex(BASE) + " " + 2 * G,
                "free " + hex(BASE) + " " + 6 * G), d.calls.subList(4, d.calls.size()));
    }

    @Test
    void aFailedAccessUndoesAllMaps() {
        FakeVmmDriver d = new FakeVmmDriver();
        List<VmmMapping.Segment> segs = threePeers(d);
        d.calls.clear();
        d.failOn = "access";
        assertThrows(CudaException.class, () -> VmmMapping.map(d, 6 * G, segs, new int[] {0}));
        assertEquals(3, d.callsStartingWith("unmap").size());
        assertEquals(1, d.callsStartingWith("free").size());
    }

    @Test
    void badLayoutsAreRejectedBeforeAnyCudaCall() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, 2 * G, 0);
        VmmAllocation b = VmmAllocation.create(d, 2 * G, 1);
        VmmAllocation closed = VmmAllocation.create(d, G, 0);
        closed.close();
        d.calls.clear();
        int[] dev0 = {0};
        record Case(String expected, long total, List<VmmMapping.Segment> segs, int[] devices) {}
        List<Case> cases = List.of(
                new Case("totalSize", 0, List.of(new VmmMapping.Segment(a, 0)), dev0),
                new Case("at least one segment", 4 * G, List.of(), dev0),
                new Case("closed", 4 * G, List.of(new VmmMapping.Segment(closed, 0)), dev0),
                new Case("granularity", 4 * G, List.of(new VmmMapping.Segment(a, 4096)), dev0),
                new Case("past totalSize", 3 * G, List.of(new VmmMapping.Segment(a, 2 * G)), dev0),
                new Case("overlap", 4 * G, List.of(new VmmMapping.Segment(a, 0), new VmmMapping.Segment(b, G)), dev0),
                new Case("multiple of the granularity", 2 * G + 4096, List.of(new VmmMapping.Segment(a, 0)), dev0),
                new Case("empty", 2 * G, List.of(new VmmMapping.Segment(a, 0)), new int[0]),
                new Case("negative", 2 * G, List.of(new VmmMapping.Segment(a, 0)), new int[] {-1}),
                new Case("twice", 2 * G, List.of(new VmmMapping.Segment(a, 0)), new int[] {1, 1}));
        for (Case c : cases) {
            var e = assertThrows(IllegalArgumentException.class, () -> VmmMapping.map(d, c.total, c.segs, c.devices),
                    c.expected);
            assertTrue(e.getMessage().contains(c.expected), c.expected + " not in: " + e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new VmmMapping.Segment(a, -G));
        assertTrue(d.calls.isEmpty(), "no CUDA call for an invalid layout: " + d.calls);
    }

    @Test
    void gapsBetweenSegmentsAreAllowed() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, G, 0);
        VmmMapping m = VmmMapping.map(d, 4 * G, List.of(new VmmMapping.Segment(a, 3 * G)), new int[] {0});
        assertEquals(BASE + 3 * G, m.address(0));
        assertEquals(List.of("access " + hex(BASE + 3 * G) + " " + G + " [0]"), d.callsStartingWith("access"));
    }
}
