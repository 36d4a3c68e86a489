package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A candidate's scratch: an aligned workspace, C at the caller's alignment, both inside the allocation. */
class CandidateScratchTest {
    @Test
    void theWorkspaceIsAlignedAndCKeepsTheCallersOffsetModulo256() {
        long base = 0x7f00_0000_0010L; // not 256-aligned: the layout aligns it
        long workspaceBytes = 3000;
        long cBytes = 5000;
        CandidateScratch s = CandidateScratch.at(base, workspaceBytes, 0x9000_0030L);
        assertEquals(0, s.workspace() % 256);
        assertTrue(s.workspace() >= base);
        assertEquals(0x30, s.c() % 256, "C at the caller's offset modulo 256");
        assertTrue(s.c() >= s.workspace() + workspaceBytes, "C after the workspace");
        assertTrue(s.c() + cBytes <= base + CandidateScratch.bytes(workspaceBytes, cBytes), "inside the allocation");
    }

    @Test
    void noWorkspaceIsAddressZero() {
        CandidateScratch s = CandidateScratch.at(0x1000, 0, 0x20);
        assertEquals(0, s.workspace());
        assertEquals(0x1020, s.c());
    }
}
