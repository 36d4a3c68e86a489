package dev.ubuf.bootstrap;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WireTest {

    private static Frame roundTrip(Frame frame) throws Exception {
        byte[] encoded = Wire.encode(frame);
        return Wire.read(new DataInputStream(new ByteArrayInputStream(encoded)), Wire.MAX_FRAME_BYTES);
    }

    @Test
    void everyFrameSurvivesEncoding() throws Exception {
        Frame.Hello hello = (Frame.Hello) roundTrip(new Frame.Hello(1, 3, 4, "tok"));
        assertEquals(new Frame.Hello(1, 3, 4, "tok"), hello);
        assertInstanceOf(Frame.Welcome.class, roundTrip(new Frame.Welcome()));
        assertEquals(new Frame.Rejected("wrong job token"), roundTrip(new Frame.Rejected("wrong job token")));
        assertEquals(new Frame.Busy("too many handshakes"), roundTrip(new Frame.Busy("too many handshakes")));

        Frame.Contribute c = (Frame.Contribute) roundTrip(new Frame.Contribute("world/[0, 2]#1", new int[]{2, 0}, 42,
                OpKind.BROADCAST, 1, 3000, new byte[]{1, 2, 3}));
        assertEquals("world/[0, 2]#1", c.group());
        assertArrayEquals(new int[]{2, 0}, c.members());
        assertEquals(42, c.seq());
        assertEquals(OpKind.BROADCAST, c.kind());
        assertEquals(1, c.root());
        assertEquals(3000, c.timeoutMillis());
        assertArrayEquals(new byte[]{1, 2, 3}, c.payload());
        assertNull(((Frame.Contribute) roundTrip(new Frame.Contribute("world", new int[]{0}, 0, OpKind.BROADCAST, 0,
                1, null))).payload());

        Frame.Result r = (Frame.Result) roundTrip(new Frame.Result("world", 7, new byte[][]{{}, {9}, null}));
        assertEquals(7, r.seq());
        assertArrayEquals(new byte[0], r.payloads()[0]);
        assertArrayEquals(new byte[]{9}, r.payloads()[1]);
        assertNull(r.payloads()[2]);

        for (Failure failure : List.of(new Failure.Mismatch("m"), new Failure.Invalid("i"),
                new Failure.Lost(2, true, "closed"), new Failure.Aborted(1, "why"))) {
            assertEquals(new Frame.Failed("g", 5, failure), roundTrip(new Frame.Failed("g", 5, failure)));
            assertEquals(new Frame.Notice(failure), roundTrip(new Frame.Notice(failure)));
        }
        Frame.Failed timedOut = (Frame.Failed) roundTrip(new Frame.Failed("g", 5,
                new Failure.TimedOut(new int[]{2, 3}, 3000)));
        Failure.TimedOut t = (Failure.TimedOut) timedOut.failure();
        assertArrayEquals(new int[]{2, 3}, t.missingRanks());
        assertEquals(3000, t.timeoutMillis());
        assertEquals(new Frame.Leave("world", new int[0]).group(),
                ((Frame.Leave) roundTrip(new Frame.Leave("world", new int[0]))).group());
        assertEquals(new Frame.Abort("x"), roundTrip(new Frame.Abort("x")));
    }

    @Test
    void malformedStreamsAreProtocolErrorsNotAllocations() throws Exception {
        // A length beyond the limit (e.g. an HTTP client: "GET " is 0x47455420).
        byte[] http = "GET / HTTP/1.1\r\n\r\n".getBytes();
        assertThrows(Wire.ProtocolException.class,
                () -> Wire.read(new DataInputStream(new ByteArrayInputStream(http)), Wire.MAX_HELLO_BYTES));
        // A hello whose magic is wrong.
        byte[] hello = Wire.encode(new Frame.Hello(1, 1, 2, "t"));
        hello[5] ^= 0x7f;
        assertTrue(assertThrows(Wire.ProtocolException.class, () -> Wire.decode(Arrays.copyOfRange(hello, 4,
                hello.length))).getMessage().contains("magic"));
        // An element count larger than the frame.
        byte[] result = Wire.encode(new Frame.Result("g", 1, new byte[][]{{1}}));
        byte[] body = Arrays.copyOfRange(result, 4, result.length);
        int countOffset = 1 + 4 + 1 + 8;
        body[countOffset] = 0x7f;
        assertThrows(Wire.ProtocolException.class, () -> Wire.decode(body));
        // Trailing bytes, unknown type, truncated stream.
        byte[] welcome = Arrays.copyOf(Arrays.copyOfRange(Wire.encode(new Frame.Welcome()), 4, 5), 2);
        assertThrows(Wire.ProtocolException.class, () -> Wire.decode(welcome));
        assertThrows(Wire.ProtocolException.class, () -> Wire.decode(new byte[]{99}));
        byte[] abort = Wire.encode(new Frame.Abort("reason"));
        assertThrows(EOFException.class, () -> Wire.read(new DataInputStream(new ByteArrayInputStream(
                Arrays.copyOf(abort, abort.length - 2))), Wire.MAX_FRAME_BYTES));
    }
}
