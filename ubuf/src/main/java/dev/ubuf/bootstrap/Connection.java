package dev.ubuf.bootstrap;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One authenticated TCP connection of the bootstrap: a reader thread that decodes frames and hands them on, and a
 * writer thread that drains a queue, so that no caller (and never the hub's monitor) blocks on a slow or stopped
 * peer. Both threads are daemons and stop when the connection closes. The end of the stream, or any I/O or protocol
 * error while not closing, is reported once to {@link Listener#onDisconnect}.
 */
final class Connection {
    interface Listener {
        void onFrame(Frame frame);

        void onDisconnect(String detail);
    }

    private static final byte[] END_OF_QUEUE = new byte[0];

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final String name;
    private final Listener listener;
    private final LinkedBlockingQueue<byte[]> outbox = new LinkedBlockingQueue<>();
    private final AtomicBoolean closing = new AtomicBoolean();
    private final AtomicBoolean reported = new AtomicBoolean();
    private final Thread reader;
    private final Thread writer;

    /**
     * @param in   the socket's input, possibly already used for the handshake (buffered bytes are kept)
     * @param name thread-name suffix, e.g. "r0-from-r3"
     */
    Connection(Socket socket, DataInputStream in, String name, Listener listener) throws IOException {
        this.socket = socket;
        this.in = in;
        this.out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
        this.name = name;
        this.listener = listener;
        this.reader = Thread.ofPlatform().daemon().name("ubuf-bootstrap-read-" + name).unstarted(this::readLoop);
        this.writer = Thread.ofPlatform().daemon().name("ubuf-bootstrap-write-" + name).unstarted(this::writeLoop);
    }

    void start() {
        reader.start();
        writer.start();
    }

    /** Encodes and queues a frame; frames sent after closing began are dropped. */
    void send(Frame frame) {
        byte[] encoded = Wire.encode(frame);
        if (!closing.get()) {
            outbox.add(encoded);
        }
    }

    private void readLoop() {
        try {
            while (!closing.get()) {
                Frame frame = Wire.read(in, Wire.MAX_FRAME_BYTES);
                listener.onFrame(frame);
            }
        } catch (EOFException e) {
            disconnected("the connection was closed by the other side (end of stream)");
        } catch (Wire.ProtocolException e) {
            disconnected("protocol error: " + e.getMessage());
        } catch (IOException e) {
            disconnected("connection error: " + e);
        } catch (RuntimeException e) {
            disconnected("internal error handling a frame: " + e);
        }
    }

    private void writeLoop() {
        try {
            while (true) {
                byte[] frame = outbox.take();
                if (frame == END_OF_QUEUE) {
                    out.flush();
                    return;
                }
                out.write(frame);
                if (outbox.isEmpty()) {
                    out.flush();
                }
            }
        } catch (IOException e) {
            // The connection is dead (reset or closed by the peer). The reader reports it, after first handing on
            // what the peer sent before (e.g. its orderly Leave), so a normal shutdown is not mistaken for a loss.
            outbox.clear();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void disconnected(String detail) {
        if (!closing.get() && reported.compareAndSet(false, true)) {
            closeSocket();
            listener.onDisconnect(detail);
        }
    }

    /**
     * Sends what is queued (waiting at most {@code grace}), then closes the socket and stops both threads. No
     * disconnect is reported for a connection we close ourselves. Idempotent.
     */
    void close(Duration grace) {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        outbox.add(END_OF_QUEUE);
        try {
            writer.join(Math.max(1, grace.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeSocket();
        writer.interrupt();
        if (Thread.currentThread() == reader) {
            return;
        }
        try {
            reader.join(TimeUnit.SECONDS.toMillis(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void closeSocket() {
        try {
            socket.close();
        } catch (IOException e) {
            // closing: nothing left to save
        }
    }

    @Override
    public String toString() {
        return "Connection[" + name + "]";
    }
}
