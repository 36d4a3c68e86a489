package dev.ubuf.comm;

import dev.ubuf.bootstrap.BootstrapException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.cuda.CudaException;
import dev.ubuf.cuda.CudaFatalException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** How a rank waits for its streams: every way out but success aborts the domain, so no peer keeps waiting. */
class StreamWatchdogTest {
    private final List<String> aborts = new ArrayList<>();
    private Optional<BootstrapException> peerFailure = Optional.empty();

    private StreamWatchdog watchdog(Duration timeout) {
        return new StreamWatchdog(3, timeout, () -> peerFailure, aborts::add);
    }

    @Test
    void aStreamThatFinishesEndsTheWaitQuietly() {
        int[] polls = {0};
        watchdog(Duration.ofSeconds(60)).await(slice -> ++polls[0] == 3, () -> "flag 0");
        assertEquals(3, polls[0]);
        assertEquals(List.of(), aborts);
    }

    @Test
    void aDeadContextAbortsTheDomainAndRethrowsTheFatalError() {
        CudaException dead = CudaException.of("cuStreamQuery", 700, "CUDA_ERROR_ILLEGAL_ADDRESS");
        CudaFatalException thrown = assertThrows(CudaFatalException.class, () -> watchdog(Duration.ofSeconds(60))
                .await(slice -> { throw dead; }, () -> "flag 2 from rank 1: expected >= 7, observed 6"));
        assertSame(dead, thrown);
        assertEquals(List.of("rank 3 has a dead CUDA context (CUDA_ERROR_ILLEGAL_ADDRESS from cuStreamQuery) while it "
                + "waited for flag 2 from rank 1: expected >= 7, observed 6"), aborts);
    }

    @Test
    void aDeadContextAbortsEvenWhenThePendingWaitsCannotBeDescribed() {
        CudaException dead = CudaException.of("cuStreamQuery", 719, "CUDA_ERROR_LAUNCH_FAILED");
        assertThrows(CudaFatalException.class, () -> watchdog(Duration.ofSeconds(60))
                .await(slice -> { throw dead; }, () -> { throw CudaException.of("cuMemcpyDtoH", 719, "x"); }));
        assertEquals(1, aborts.size());
        assertTrue(aborts.getFirst().contains("the pending waits could not be described"), aborts.getFirst());
    }

    @Test
    void anOrdinaryCudaErrorPropagatesWithoutAborting() {
        CudaException invalid = CudaException.of("cuStreamQuery", 400, "CUDA_ERROR_INVALID_HANDLE");
        assertSame(invalid, assertThrows(CudaException.class,
                () -> watchdog(Duration.ofSeconds(60)).await(slice -> { throw invalid; }, () -> "flag 0")));
        assertEquals(List.of(), aborts);
    }

    @Test
    void aFailedPeerEndsTheWaitAtOnceAndAborts() {
        BootstrapException lost = new BootstrapException(1, "peer closed its connection");
        peerFailure = Optional.of(lost);
        PeerFailedException e = assertThrows(PeerFailedException.class,
                () -> watchdog(Duration.ofSeconds(60)).await(slice -> false, () -> "flag 1 from rank 1"));
        assertSame(lost, e.getCause());
        assertEquals("rank 3 stopped waiting: rank 1: peer closed its connection; it was waiting for flag 1 from rank 1",
                e.getMessage());
        assertEquals(List.of(e.getMessage()), aborts);
    }

    @Test
    void theDeadlineAbortsAndNamesWhatWasPending() {
        UbufTimeoutException e = assertThrows(UbufTimeoutException.class,
                () -> watchdog(Duration.ofMillis(1)).await(slice -> false, () -> "flag 4 from rank 0"));
        assertEquals("rank 3 timed out after 0 s (UB_TIMEOUT): flag 4 from rank 0", e.getMessage());
        assertEquals(List.of(e.getMessage()), aborts);
    }
}
