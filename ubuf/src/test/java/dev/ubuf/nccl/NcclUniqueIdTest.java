package dev.ubuf.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class NcclUniqueIdTest {
    private static final long SEED = System.nanoTime();

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        new Random(SEED).nextBytes(b);
        return b;
    }

    @Test
    void holdsExactly128Bytes() {
        assertEquals(128, NcclUniqueId.BYTES);
        assertEquals(128, Nccl.UNIQUE_ID_LAYOUT.byteSize(), "ncclUniqueId is char internal[128], passed by value");
        for (int bad : new int[] {0, 1, 127, 129, 256}) {
            var e = assertThrows(IllegalArgumentException.class, () -> new NcclUniqueId(new byte[bad]));
            assertTrue(e.getMessage().contains("128") && e.getMessage().contains(Integer.toString(bad)),
                    e.getMessage());
        }
        assertThrows(NullPointerException.class, () -> new NcclUniqueId(null));
    }

    @Test
    void copiesBytesInAndOut() {
        byte[] original = randomBytes(128);
        byte[] given = original.clone();
        NcclUniqueId id = new NcclUniqueId(given);
        given[0] ^= 1;
        assertArrayEquals(original, id.bytes(), "mutating the caller's array must not change the id (seed " + SEED
                + ")");
        byte[] out = id.bytes();
        out[5] ^= 1;
        assertArrayEquals(original, id.bytes(), "mutating a returned array must not change the id");
        assertNotSame(id.bytes(), id.bytes());
    }

    @Test
    void equalityIsOverContents() {
        byte[] bytes = randomBytes(128);
        NcclUniqueId a = new NcclUniqueId(bytes);
        NcclUniqueId b = new NcclUniqueId(bytes.clone());
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        byte[] other = bytes.clone();
        other[127] ^= 0x40;
        assertNotEquals(a, new NcclUniqueId(other));
    }

    @Test
    void toStringShowsOnlyAPrefix() {
        byte[] bytes = new byte[128];
        bytes[0] = (byte) 0xab;
        bytes[100] = (byte) 0xcd;
        String s = new NcclUniqueId(bytes).toString();
        assertTrue(s.startsWith("NcclUniqueId[ab00"), s);
        assertTrue(s.length() < 40, s);
    }
}
