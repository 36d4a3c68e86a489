package dev.ubuf.timing;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The timer's calls per sample are checked before it touches a GPU. */
class InterleavedTimerArgsTest {
    @Test
    void callsPerSampleAreOneToTheMaximum() {
        for (int bad : new int[] {0, -3, InterleavedTimer.MAX_CALLS_PER_SAMPLE + 1}) {
            var e = assertThrows(IllegalArgumentException.class, () -> new InterleavedTimer(null, null, bad));
            assertTrue(e.getMessage().contains("calls per sample must be 1 to " + InterleavedTimer.MAX_CALLS_PER_SAMPLE
                    + ", got " + bad), e.getMessage());
        }
    }
}
