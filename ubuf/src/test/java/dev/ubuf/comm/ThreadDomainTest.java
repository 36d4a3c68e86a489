package dev.ubuf.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.bootstrap.CollectiveMismatchException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Which failure a thread domain reports, on the CPU (ranks without a CUDA context): a rank's own failure before the
 * collective mismatch it left its peers in, every other rank's failure suppressed in it.
 */
class ThreadDomainTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static void run(int tp, ThreadDomain.Body body) throws Exception {
        ThreadDomain.run(tp, rank -> rank, TIMEOUT, body, gpu -> null);
    }

    @Test
    void aRanksFailedCheckIsReportedNotThePeersMismatchItCaused() {
        // Rank 1's check fails; closing its resources it meets a barrier that rank 0, gone on to a broadcast, never
        // calls (as an op's close does after a failed assertion): rank 0 sees a collective mismatch.
        AssertionError check = new AssertionError("element (423, 19): expected 135 but was 134");
        RuntimeException e = assertThrows(RuntimeException.class, () -> run(2, (rank, b, ctx) -> {
            if (rank == 0) {
                b.broadcast(new byte[8], 0);
                return;
            }
            try (AutoCloseable closing = b::barrier) {
                throw check;
            }
        }));
        assertSame(check, e.getCause(), "rank 1's check is the reported cause: " + e);
        assertTrue(e.getMessage().startsWith("rank 1 failed: "), e.getMessage());
        assertEquals(1, e.getSuppressed().length, Arrays.toString(e.getSuppressed()));
        assertTrue(e.getSuppressed()[0].getMessage().startsWith("rank 0 also failed: "),
                e.getSuppressed()[0].getMessage());
        assertInstanceOf(CollectiveMismatchException.class, e.getSuppressed()[0].getCause());
    }

    @Test
    void anExceptionOfOneRankIsThrownAsItIsAndRanksThatSucceedAddNothing() {
        IllegalArgumentException bad = new IllegalArgumentException("bad input on rank 2");
        AtomicInteger finished = new AtomicInteger();
        Exception e = assertThrows(Exception.class, () -> run(3, (rank, b, ctx) -> {
            if (rank == 2) {
                throw bad;
            }
            finished.incrementAndGet();
        }));
        assertSame(bad, e);
        assertEquals(0, e.getSuppressed().length);
        assertEquals(2, finished.get());
    }

    @Test
    void whenEveryFailureIsAConsequenceTheFirstRanksIsReported() {
        CollectiveMismatchException[] seen = new CollectiveMismatchException[2];
        Exception e = assertThrows(Exception.class, () -> run(2, (rank, b, ctx) -> {
            try {
                if (rank == 0) {
                    b.broadcast(new byte[8], 0);
                } else {
                    b.barrier();
                }
            } catch (CollectiveMismatchException m) {
                seen[rank] = m;
                throw m;
            }
        }));
        assertSame(seen[0], e, "both failed in the mismatch: rank 0's is reported");
        assertEquals(1, e.getSuppressed().length);
        assertSame(seen[1], e.getSuppressed()[0].getCause());
    }

    @Test
    void ranksThatAllSucceedReportNothing() throws Exception {
        AtomicInteger finished = new AtomicInteger();
        run(4, (rank, b, ctx) -> {
            b.barrier();
            finished.incrementAndGet();
        });
        assertEquals(4, finished.get());
    }
}
