package dev.ubuf.cuda;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class VmmAllocationTest {
    private static final long G = FakeVmmDriver.GRANULARITY;

    @Test
    void createRoundsTheSizeUpToTheMinimumGranularity() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, G + 1, 3);
        assertEquals(2 * G, a.size());
        assertEquals(3, a.device());
        assertEquals(G, a.granularity());
        assertFalse(a.isImported());
        assertEquals(List.of("granularity 3 MINIMUM", "create " + 2 * G + " 3"), d.calls);
    }

    @Test
    void exportHandsOutTheDriversFd() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, 10, 0);
        assertEquals(40 + a.handle(), a.exportFd());
        assertEquals("export " + a.handle(), d.calls.getLast());
    }

    @Test
    void importChecksTheSizeAgainstTheGranularity() {
        FakeVmmDriver d = new FakeVmmDriver();
        var e = assertThrows(IllegalArgumentException.class, () -> VmmAllocation.importFd(d, 7, G + 4096, 1));
        assertTrue(e.getMessage().contains("exporter's"), e.getMessage());
        assertTrue(d.callsStartingWith("import").isEmpty(), "nothing imported for a bad size");
        VmmAllocation a = VmmAllocation.importFd(d, 7, 2 * G, 1);
        assertTrue(a.isImported());
        assertEquals(2 * G, a.size());
        assertEquals("import 7", d.calls.getLast());
    }

    @Test
    void closingTwiceReleasesOnce() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, 1, 0);
        long handle = a.handle();
        a.close();
        a.close();
        assertEquals(List.of("release " + handle), d.callsStartingWith("release"));
        assertFalse(a.isOpen());
        assertThrows(IllegalStateException.class, a::handle);
        assertThrows(IllegalStateException.class, a::exportFd);
    }

    @Test
    void aFailedReleaseIsNotRetried() {
        FakeVmmDriver d = new FakeVmmDriver();
        VmmAllocation a = VmmAllocation.create(d, 1, 0);
        d.failOn = "release";
        assertThrows(CudaException.class, a::close);
        assertDoesNotThrow(a::close);
        assertEquals(1, d.callsStartingWith("release").size());
    }
}
