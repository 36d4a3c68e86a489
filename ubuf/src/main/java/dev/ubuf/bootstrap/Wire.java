package dev.ubuf.bootstrap;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * Binary encoding of {@link Frame}s on a TCP stream: a 4-byte big-endian body length, then the body (a type byte and
 * the fields). Hello frames open with a magic number and protocol version so a stray client is told apart from a
 * ubuf rank. Decoding checks every length against what is left, so a corrupt or hostile frame cannot make us
 * allocate more than the frame holds.
 */
final class Wire {
    static final int MAGIC = 0x55425546; // "UBUF"
    static final int PROTOCOL_VERSION = 2; // 2: the Busy frame
    /** Largest frame body; allGather results of small setup data stay far below. */
    static final int MAX_FRAME_BYTES = 1 << 30;
    /** Largest frame accepted from a peer that has not authenticated yet. */
    static final int MAX_HELLO_BYTES = 4096;
    /** Longest text (reasons, details) sent; longer ones are cut. */
    private static final int MAX_TEXT_CHARS = 8192;

    private static final byte HELLO = 1;
    private static final byte WELCOME = 2;
    private static final byte REJECTED = 3;
    private static final byte CONTRIBUTE = 4;
    private static final byte LEAVE = 5;
    private static final byte ABORT = 6;
    private static final byte RESULT = 7;
    private static final byte FAILED = 8;
    private static final byte NOTICE = 9;
    private static final byte BUSY = 10;

    private static final byte TIMED_OUT = 1;
    private static final byte MISMATCH = 2;
    private static final byte INVALID = 3;
    private static final byte LOST = 4;
    private static final byte ABORTED = 5;

    /** The stream did not follow the protocol (bad length, unknown type, trailing bytes, wrong magic). */
    static final class ProtocolException extends IOException {
        ProtocolException(String message) {
            super(message);
        }
    }

    private Wire() {
    }

    /** Length prefix plus body. */
    static byte[] encode(Frame frame) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(0); // length, patched below
            writeBody(out, frame);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        byte[] encoded = bytes.toByteArray();
        int bodyLength = encoded.length - 4;
        if (bodyLength > MAX_FRAME_BYTES) {
            throw new IllegalArgumentException("bootstrap message of " + bodyLength + " bytes exceeds the limit of "
                    + MAX_FRAME_BYTES + " bytes (bootstrap payloads are for small setup data)");
        }
        encoded[0] = (byte) (bodyLength >>> 24);
        encoded[1] = (byte) (bodyLength >>> 16);
        encoded[2] = (byte) (bodyLength >>> 8);
        encoded[3] = (byte) bodyLength;
        return encoded;
    }

    /** Encoded size of a Result frame, computed without encoding it (to refuse oversized results up front). */
    static long resultFrameBytes(String group, byte[][] payloads) {
        long size = 1 + 2 + (long) group.getBytes(StandardCharsets.UTF_8).length + 8 + 4;
        for (byte[] p : payloads) {
            size += 4 + (p == null ? 0 : p.length);
        }
        return size;
    }

    private static void writeBody(DataOutputStream out, Frame frame) throws IOException {
        switch (frame) {
            case Frame.Hello h -> {
                out.writeByte(HELLO);
                out.writeInt(MAGIC);
                out.writeInt(h.protocolVersion());
                out.writeInt(h.rank());
                out.writeInt(h.worldSize());
                writeText(out, h.token());
            }
            case Frame.Welcome w -> out.writeByte(WELCOME);
            case Frame.Rejected r -> {
                out.writeByte(REJECTED);
                writeText(out, r.reason());
            }
            case Frame.Busy b -> {
                out.writeByte(BUSY);
                writeText(out, b.reason());
            }
            case Frame.Contribute c -> {
                out.writeByte(CONTRIBUTE);
                writeText(out, c.group());
                writeInts(out, c.members());
                out.writeLong(c.seq());
                out.writeByte(c.kind().ordinal());
                out.writeInt(c.root());
                out.writeLong(c.timeoutMillis());
                writeBytes(out, c.payload());
            }
            case Frame.Leave l -> {
                out.writeByte(LEAVE);
                writeText(out, l.group());
                writeInts(out, l.members());
            }
            case Frame.Abort a -> {
                out.writeByte(ABORT);
                writeText(out, a.reason());
            }
            case Frame.Result r -> {
                out.writeByte(RESULT);
                writeText(out, r.group());
                out.writeLong(r.seq());
                out.writeInt(r.payloads().length);
                for (byte[] p : r.payloads()) {
                    writeBytes(out, p);
                }
            }
            case Frame.Failed f -> {
                out.writeByte(FAILED);
                writeText(out, f.group());
                out.writeLong(f.seq());
                writeFailure(out, f.failure());
            }
            case Frame.Notice n -> {
                out.writeByte(NOTICE);
                writeFailure(out, n.failure());
            }
        }
    }

    private static void writeFailure(DataOutputStream out, Failure failure) throws IOException {
        switch (failure) {
            case Failure.TimedOut t -> {
                out.writeByte(TIMED_OUT);
                writeInts(out, t.missingRanks());
                out.writeLong(t.timeoutMillis());
            }
            case Failure.Mismatch m -> {
                out.writeByte(MISMATCH);
                writeText(out, m.detail());
            }
            case Failure.Invalid i -> {
                out.writeByte(INVALID);
                writeText(out, i.detail());
            }
            case Failure.Lost l -> {
                out.writeByte(LOST);
                out.writeInt(l.lostRank());
                out.writeBoolean(l.closed());
                writeText(out, l.detail());
            }
            case Failure.Aborted a -> {
                out.writeByte(ABORTED);
                out.writeInt(a.originRank());
                writeText(out, a.reason());
            }
        }
    }

    private static void writeText(DataOutputStream out, String text) throws IOException {
        String cut = text.length() > MAX_TEXT_CHARS ? text.substring(0, MAX_TEXT_CHARS) + "..." : text;
        byte[] utf8 = cut.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }

    private static void writeInts(DataOutputStream out, int[] values) throws IOException {
        out.writeInt(values.length);
        for (int v : values) {
            out.writeInt(v);
        }
    }

    private static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
        if (bytes == null) {
            out.writeInt(-1);
        } else {
            out.writeInt(bytes.length);
            out.write(bytes);
        }
    }

    /**
     * Reads one frame. Throws {@link EOFException} at a clean end of stream before a frame, and
     * {@link ProtocolException} for anything malformed or longer than {@code maxBytes}.
     */
    static Frame read(DataInputStream in, int maxBytes) throws IOException {
        int length = in.readInt();
        if (length < 1 || length > maxBytes) {
            throw new ProtocolException("frame length " + length + " outside 1.." + maxBytes
                    + " (not a ubuf bootstrap peer, or a corrupt stream)");
        }
        byte[] body = in.readNBytes(length);
        if (body.length != length) {
            throw new EOFException("stream ended inside a frame (" + body.length + " of " + length + " bytes)");
        }
        return decode(body);
    }

    static Frame decode(byte[] body) throws ProtocolException {
        Reader in = new Reader(body);
        Frame frame = switch (in.readByte()) {
            case HELLO -> {
                int magic = in.readInt();
                if (magic != MAGIC) {
                    throw new ProtocolException("not a ubuf bootstrap hello (magic " + Integer.toHexString(magic)
                            + ")");
                }
                yield new Frame.Hello(in.readInt(), in.readInt(), in.readInt(), in.readText());
            }
            case WELCOME -> new Frame.Welcome();
            case REJECTED -> new Frame.Rejected(in.readText());
            case BUSY -> new Frame.Busy(in.readText());
            case CONTRIBUTE -> new Frame.Contribute(in.readText(), in.readInts(), in.readLong(), in.readKind(),
                    in.readInt(), in.readLong(), in.readBytes());
            case LEAVE -> new Frame.Leave(in.readText(), in.readInts());
            case ABORT -> new Frame.Abort(in.readText());
            case RESULT -> {
                String group = in.readText();
                long seq = in.readLong();
                int count = in.readCount(4);
                byte[][] payloads = new byte[count][];
                for (int i = 0; i < count; i++) {
                    payloads[i] = in.readBytes();
                }
                yield new Frame.Result(group, seq, payloads);
            }
            case FAILED -> new Frame.Failed(in.readText(), in.readLong(), in.readFailure());
            case NOTICE -> new Frame.Notice(in.readFailure());
            default -> throw new ProtocolException("unknown frame type " + body[0]);
        };
        in.expectEnd();
        return frame;
    }

    /** Bounds-checked reader over one frame body. */
    private static final class Reader {
        private final DataInputStream in;
        private final int length;

        Reader(byte[] body) {
            this.in = new DataInputStream(new ByteArrayInputStream(body));
            this.length = body.length;
        }

        private int remaining() {
            try {
                return in.available();
            } catch (IOException e) {
                return 0;
            }
        }

        private void need(long bytes) throws ProtocolException {
            if (bytes > remaining()) {
                throw new ProtocolException("truncated frame of " + length + " bytes");
            }
        }

        byte readByte() throws ProtocolException {
            need(1);
            try {
                return in.readByte();
            } catch (IOException e) {
                throw new ProtocolException(e.getMessage());
            }
        }

        int readInt() throws ProtocolException {
            need(4);
            try {
                return in.readInt();
            } catch (IOException e) {
                throw new ProtocolException(e.getMessage());
            }
        }

        long readLong() throws ProtocolException {
            need(8);
            try {
                return in.readLong();
            } catch (IOException e) {
                throw new ProtocolException(e.getMessage());
            }
        }

        boolean readBoolean() throws ProtocolException {
            return readByte() != 0;
        }

        /** A count of elements each at least {@code minElementBytes} long, checked against what is left. */
        int readCount(int minElementBytes) throws ProtocolException {
            int count = readInt();
            if (count < 0 || (long) count * minElementBytes > remaining()) {
                throw new ProtocolException("bad element count " + count + " in a frame of " + length + " bytes");
            }
            return count;
        }

        byte[] readRaw(int n) throws ProtocolException {
            need(n);
            byte[] bytes = new byte[n];
            try {
                in.readFully(bytes);
            } catch (IOException e) {
                throw new ProtocolException(e.getMessage());
            }
            return bytes;
        }

        String readText() throws ProtocolException {
            return new String(readRaw(readCount(1)), StandardCharsets.UTF_8);
        }

        int[] readInts() throws ProtocolException {
            int count = readCount(4);
            int[] values = new int[count];
            for (int i = 0; i < count; i++) {
                values[i] = readInt();
            }
            return values;
        }

        byte[] readBytes() throws ProtocolException {
            int n = readInt();
            if (n == -1) {
                return null;
            }
            if (n < -1) {
                throw new ProtocolException("bad byte-array length " + n);
            }
            return readRaw(n);
        }

        OpKind readKind() throws ProtocolException {
            int ordinal = readByte();
            OpKind[] kinds = OpKind.values();
            if (ordinal < 0 || ordinal >= kinds.length) {
                throw new ProtocolException("unknown operation kind " + ordinal);
            }
            return kinds[ordinal];
        }

        Failure readFailure() throws ProtocolException {
            return switch (readByte()) {
                case TIMED_OUT -> new Failure.TimedOut(readInts(), readLong());
                case MISMATCH -> new Failure.Mismatch(readText());
                case INVALID -> new Failure.Invalid(readText());
                case LOST -> new Failure.Lost(readInt(), readBoolean(), readText());
                case ABORTED -> new Failure.Aborted(readInt(), readText());
                default -> throw new ProtocolException("unknown failure kind");
            };
        }

        void expectEnd() throws ProtocolException {
            if (remaining() != 0) {
                throw new ProtocolException(remaining() + " unexpected trailing bytes in a frame");
            }
        }
    }
}
