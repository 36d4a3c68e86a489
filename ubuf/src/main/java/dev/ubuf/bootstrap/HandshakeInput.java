package dev.ubuf.bootstrap;

import java.io.FilterInputStream;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * A socket's input under one deadline for the whole handshake. A plain socket timeout limits each read, so a peer
 * that sends a byte now and then could hold the handshake open for ever; here every read gets only what is left of
 * the deadline. Once the peer is admitted, {@link #lift()} removes the deadline and the same stream (with whatever
 * the layers above already buffered) carries the connection.
 */
final class HandshakeInput extends FilterInputStream {
    private final Socket socket;
    private final long deadlineNanos;
    private volatile boolean lifted;

    HandshakeInput(Socket socket, long deadlineNanos) throws IOException {
        super(socket.getInputStream());
        this.socket = socket;
        this.deadlineNanos = deadlineNanos;
    }

    @Override
    public int read() throws IOException {
        arm();
        return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        arm();
        return in.read(b, off, len);
    }

    private void arm() throws IOException {
        if (lifted) {
            return;
        }
        long remaining = deadlineNanos - System.nanoTime();
        if (remaining <= 0) {
            throw new SocketTimeoutException("handshake deadline passed");
        }
        long millis = Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999));
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, millis));
    }

    /** From now on reads wait as long as the connection lives (its loss, not a timeout, ends them). */
    void lift() throws SocketException {
        lifted = true;
        socket.setSoTimeout(0);
    }
}
