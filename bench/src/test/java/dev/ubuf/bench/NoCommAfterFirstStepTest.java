package dev.ubuf.bench;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.layers.tp.Collectives;
import dev.ubuf.trace.Tracer;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NoCommAfterFirstStepTest {
    /** A data-parallel collective that counts its issues (the only collective that needs no GPU to observe). */
    private static final class Counted implements Collectives.DataParallelCollective {
        int issued;

        @Override
        public String name() {
            return "counted";
        }

        @Override
        public Map<String, Object> traceArgs() {
            return Map.of();
        }

        @Override
        public void issue(CudaStream stream) {
            issued++;
        }
    }

    @Test
    void theCollectivesRunUntilTheFirstStepEndsAndNeverAfter() {
        NoCommAfterFirstStep noComm = new NoCommAfterFirstStep();
        Counted dp = new Counted();
        assertFalse(noComm.skipping());
        noComm.dataParallel(dp, Tracer.NOOP, null);
        assertEquals(1, dp.issued, "the priming step communicates");
        noComm.skipFromNow();
        assertTrue(noComm.skipping());
        noComm.dataParallel(dp, Tracer.NOOP, null);
        noComm.dataParallel(dp, Tracer.NOOP, null);
        assertEquals(1, dp.issued, "the timed steps skip every collective");
    }
}
