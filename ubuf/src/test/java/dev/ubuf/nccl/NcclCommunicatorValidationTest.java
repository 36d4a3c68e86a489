package dev.ubuf.nccl;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Arguments are checked before NCCL is touched. The communicator here sits on a binding whose library does not exist,
 * so a bad argument must raise IllegalArgumentException, and a good one reaches the library and raises the
 * "missing library" NcclException: that proves the order.
 */
class NcclCommunicatorValidationTest {
    private static final long SEND = 0x7f00_0000_1000L;
    private static final long RECV = 0x7f00_0000_8000L;
    private static final long STREAM = 0x5555_0000L;

    /** Rank 1 of 4, with a fake (never dereferenced) ncclComm_t. */
    private static NcclCommunicator communicator() {
        return new NcclCommunicator(new Nccl(NcclMissingLibraryTest.MISSING), 0xC0FFEE0L, 1, 4);
    }

    private static void rejected(Executable call, String expectedText) {
        var e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(expectedText), e.getMessage());
    }

    private static void reachesTheLibrary(Executable call) {
        var e = assertThrows(NcclException.class, call);
        assertTrue(e.getMessage().contains(NcclMissingLibraryTest.MISSING), e.getMessage());
    }

    @Test
    void reportsRankAndSize() {
        NcclCommunicator c = communicator();
        assertEquals(1, c.rank());
        assertEquals(4, c.size());
        assertTrue(c.isOpen());
    }

    @Test
    void allGatherChecksPointersAndCount() {
        NcclCommunicator c = communicator();
        rejected(() -> c.allGather(0, RECV, 16, DType.BF16, STREAM), "send");
        rejected(() -> c.allGather(SEND, 0, 16, DType.BF16, STREAM), "recv");
        rejected(() -> c.allGather(SEND, RECV, 0, DType.BF16, STREAM), "sendCount");
        rejected(() -> c.allGather(SEND, RECV, -3, DType.BF16, STREAM), "sendCount");
        rejected(() -> c.allGather(SEND, RECV, Long.MAX_VALUE / 4, DType.BF16, STREAM), "overflows");
        assertThrows(NullPointerException.class, () -> c.allGather(SEND, RECV, 16, null, STREAM));
        reachesTheLibrary(() -> c.allGather(SEND, RECV, 16, DType.BF16, STREAM));
        reachesTheLibrary(() -> c.allGather(SEND, RECV, 16, DType.FP32, 0L)); // 0 = the default stream
    }

    @Test
    void reduceScatterAndAllReduceCheckEverything() {
        NcclCommunicator c = communicator();
        rejected(() -> c.reduceScatter(0, RECV, 8, DType.FP16, NcclRedOp.SUM, STREAM), "send");
        rejected(() -> c.reduceScatter(SEND, 0, 8, DType.FP16, NcclRedOp.SUM, STREAM), "recv");
        rejected(() -> c.reduceScatter(SEND, RECV, 0, DType.FP16, NcclRedOp.SUM, STREAM), "recvCount");
        assertThrows(NullPointerException.class, () -> c.reduceScatter(SEND, RECV, 8, DType.FP16, null, STREAM));
        reachesTheLibrary(() -> c.reduceScatter(SEND, RECV, 8, DType.FP16, NcclRedOp.SUM, STREAM));

        rejected(() -> c.allReduce(0, RECV, 8, DType.FP32, NcclRedOp.MAX, STREAM), "send");
        rejected(() -> c.allReduce(SEND, 0, 8, DType.FP32, NcclRedOp.MAX, STREAM), "recv");
        rejected(() -> c.allReduce(SEND, RECV, 0, DType.FP32, NcclRedOp.MAX, STREAM), "count");
        reachesTheLibrary(() -> c.allReduce(SEND, SEND, 8, DType.FP32, NcclRedOp.AVG, STREAM)); // in place
    }

    @Test
    void broadcastNeedsASendBufferOnlyOnTheRoot() {
        NcclCommunicator c = communicator(); // rank 1
        rejected(() -> c.broadcast(SEND, RECV, 8, DType.FP32, 4, STREAM), "root 4");
        rejected(() -> c.broadcast(SEND, RECV, 8, DType.FP32, -1, STREAM), "root -1");
        rejected(() -> c.broadcast(0, RECV, 8, DType.FP32, 1, STREAM), "send");
        rejected(() -> c.broadcast(SEND, 0, 8, DType.FP32, 0, STREAM), "recv");
        reachesTheLibrary(() -> c.broadcast(0, RECV, 8, DType.FP32, 0, STREAM)); // not the root: send unused
        reachesTheLibrary(() -> c.broadcast(SEND, RECV, 8, DType.FP32, 1, STREAM));
    }

    @Test
    void pointToPointChecksPeer() {
        NcclCommunicator c = communicator();
        rejected(() -> c.send(SEND, 8, DType.BF16, 4, STREAM), "peer 4");
        rejected(() -> c.recv(RECV, 8, DType.BF16, -1, STREAM), "peer -1");
        rejected(() -> c.send(0, 8, DType.BF16, 2, STREAM), "buf");
        rejected(() -> c.recv(RECV, 0, DType.BF16, 2, STREAM), "count");
        reachesTheLibrary(() -> c.send(SEND, 8, DType.BF16, 3, STREAM));
        reachesTheLibrary(() -> c.recv(RECV, 8, DType.BF16, 0, STREAM));
    }

    @Test
    void fp8NeedsTheLibraryVersionSoItAsksTheLibraryAfterTheArguments() {
        NcclCommunicator c = communicator();
        rejected(() -> c.allGather(SEND, RECV, 0, DType.FP8_E4M3, STREAM), "sendCount");
        reachesTheLibrary(() -> c.allGather(SEND, RECV, 16, DType.FP8_E4M3, STREAM));
    }

    @Test
    void initChecksRanksAndDevices() {
        Nccl missing = new Nccl(NcclMissingLibraryTest.MISSING);
        NcclUniqueId id = new NcclUniqueId(new byte[128]);
        rejected(() -> NcclCommunicator.initRank(missing, id, 0, 0), "nranks");
        rejected(() -> NcclCommunicator.initRank(missing, id, 2, 2), "rank 2");
        rejected(() -> NcclCommunicator.initRank(missing, id, 2, -1), "rank -1");
        assertThrows(NullPointerException.class, () -> NcclCommunicator.initRank(missing, null, 2, 0));
        rejected(() -> NcclCommunicator.initAll(missing, new int[0]), "at least one");
        rejected(() -> NcclCommunicator.initAll(missing, new int[] {0, -1}), "-1");
        rejected(() -> NcclCommunicator.initAll(missing, new int[] {1, 0, 1}), "twice");
    }

    @Test
    void closeIsIdempotentAndNeverRetriesADestroy() {
        NcclCommunicator c = communicator();
        // The destroy reaches the (missing) library once; the communicator is closed even so.
        reachesTheLibrary(c::close);
        assertFalse(c.isOpen());
        assertDoesNotThrow(c::close, "a second close must not call ncclCommDestroy again");
        assertDoesNotThrow(c::abort, "abort after close must not touch the freed communicator");
        var e = assertThrows(IllegalStateException.class, () -> c.allReduce(SEND, RECV, 8, DType.FP32,
                NcclRedOp.SUM, STREAM));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, c::asyncError);
    }

    @Test
    void afterAbortCloseDoesNotDestroy() {
        NcclCommunicator c = communicator();
        reachesTheLibrary(c::abort); // ncclCommAbort attempted once
        assertFalse(c.isOpen());
        assertDoesNotThrow(c::close, "close after abort must not call ncclCommDestroy");
        assertDoesNotThrow(c::abort);
        var e = assertThrows(IllegalStateException.class, () -> c.send(SEND, 8, DType.FP32, 0, STREAM));
        assertTrue(e.getMessage().contains("aborted"), e.getMessage());
    }
}
