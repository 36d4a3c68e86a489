package dev.ubuf.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ubuf.fake.FakeNativeLibrary;
import dev.ubuf.tensor.DType;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The real downcalls against a C stand-in for libnccl.so.2 with nccl.h's signatures (fake_nccl.c): checks that
 * the by-value ncclUniqueId, size_t counts, enum values, pointers and streams arrive as NCCL would see them.
 */
class NcclAbiTest {
    private static FakeNativeLibrary fake;
    private static Nccl nccl;

    @BeforeAll
    static void buildTheFake() {
        Optional<FakeNativeLibrary> built = FakeNativeLibrary.build("fake_nccl");
        assumeTrue(built.isPresent(), "gcc not available: cannot build the fake libnccl");
        fake = built.get();
        nccl = new Nccl(fake.path());
    }

    private static NcclUniqueId patternId() {
        byte[] b = new byte[128];
        for (int i = 0; i < 128; i++) {
            b[i] = (byte) (i * 7 + 3);
        }
        return new NcclUniqueId(b);
    }

    @Test
    void versionAndUniqueId() {
        assertEquals(22803, nccl.loadedVersion());
        byte[] id = nccl.getUniqueId();
        assertEquals(128, id.length);
        assertEquals((byte) 255, id[0]);
        assertEquals((byte) 128, id[127]);
    }

    @Test
    void initRankPassesTheIdByValue() {
        try (NcclCommunicator c = NcclCommunicator.initRank(nccl, patternId(), 4, 2)) {
            assertEquals("ncclCommInitRank nranks=4 rank=2", fake.lastCall());
            assertEquals(2, c.rank());
            assertEquals(4, c.size());
        }
        assertEquals("ncclCommDestroy rank=2", fake.lastCall());
        byte[] wrong = patternId().bytes();
        wrong[100] ^= 1;
        NcclException e = assertThrows(NcclException.class,
                () -> NcclCommunicator.initRank(nccl, new NcclUniqueId(wrong), 4, 2));
        assertEquals(NcclResult.INVALID_ARGUMENT, e.result().orElseThrow());
        assertEquals("ncclCommInitRank bad id byte 100", fake.lastCall());
    }

    @Test
    void initAllPassesTheDeviceList() {
        List<NcclCommunicator> comms = NcclCommunicator.initAll(nccl, new int[] {3, 1, 2});
        assertEquals("ncclCommInitAll ndev=3 devs=3,1,2,", fake.lastCall());
        assertEquals(List.of(0, 1, 2), comms.stream().map(NcclCommunicator::rank).toList());
        assertEquals(List.of(3, 3, 3), comms.stream().map(NcclCommunicator::size).toList());
        comms.forEach(NcclCommunicator::close);
    }

    @Test
    void collectivesPassPointersCountsEnumsAndStreams() {
        try (NcclCommunicator c = NcclCommunicator.initRank(nccl, patternId(), 4, 1)) {
            long big = 1L << 33; // needs all 64 bits of size_t
            c.allGather(0x1000, 0x2000, big, DType.BF16, 0x5000);
            assertEquals("ncclAllGather 0x1000 0x2000 8589934592 9 rank=1 0x5000", fake.lastCall());
            c.reduceScatter(0x1000, 0x2000, 64, DType.FP16, NcclRedOp.MAX, 0x5000);
            assertEquals("ncclReduceScatter 0x1000 0x2000 64 6 2 rank=1 0x5000", fake.lastCall());
            c.allReduce(0x1000, 0x1000, 64, DType.FP32, NcclRedOp.AVG, 0);
            assertEquals("ncclAllReduce 0x1000 0x1000 64 7 4 rank=1 (nil)", fake.lastCall());
            c.broadcast(0, 0x2000, 5, DType.FP8_E4M3, 3, 0x5000);
            assertEquals("ncclBroadcast (nil) 0x2000 5 10 root=3 rank=1 0x5000", fake.lastCall());
            nccl.groupStart(); // what NcclCommunicator.groupStart() calls on the default library
            assertEquals("ncclGroupStart", fake.lastCall());
            c.send(0x1000, 7, DType.FP8_E5M2, 2, 0x5000);
            assertEquals("ncclSend 0x1000 7 11 peer=2 rank=1 0x5000", fake.lastCall());
            c.recv(0x2000, 7, DType.FP32, 0, 0x5000);
            assertEquals("ncclRecv 0x2000 7 7 peer=0 rank=1 0x5000", fake.lastCall());
            nccl.groupEnd();
            assertEquals("ncclGroupEnd", fake.lastCall());
            assertEquals(NcclResult.SUCCESS, c.asyncError());
        }
    }

    @Test
    void aFailureCarriesNcclsOwnText() {
        try (NcclCommunicator c = NcclCommunicator.initRank(nccl, patternId(), 2, 0)) {
            NcclException e = assertThrows(NcclException.class,
                    () -> c.allReduce(0x1000, 0x2000, 13, DType.FP32, NcclRedOp.SUM, 0));
            assertEquals("ncclAllReduce", e.call());
            assertEquals(5, e.code());
            assertEquals("ncclAllReduce failed: ncclInvalidUsage (5): invalid usage (run with NCCL_DEBUG=WARN for"
                    + " details); last error: fake: count 13 is unlucky", e.getMessage());
        }
    }

    @Test
    void asyncErrorAndAbort() {
        NcclCommunicator c = NcclCommunicator.initRank(nccl, patternId(), 4, 3);
        assertEquals(NcclResult.REMOTE_ERROR, c.asyncError());
        c.abort();
        assertEquals("ncclCommAbort rank=3", fake.lastCall());
        c.close();
        assertEquals("ncclCommAbort rank=3", fake.lastCall(), "no destroy after abort");
    }

    @Test
    void uniqueIdBytesRoundTrip() {
        NcclUniqueId id = new NcclUniqueId(nccl.getUniqueId());
        byte[] expected = new byte[128];
        for (int i = 0; i < 128; i++) {
            expected[i] = (byte) (255 - i);
        }
        assertArrayEquals(expected, id.bytes());
        assertTrue(id.toString().startsWith("NcclUniqueId[fffefdfc"), id.toString());
    }
}
