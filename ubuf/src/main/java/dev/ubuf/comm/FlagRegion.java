package dev.ubuf.comm;

import dev.ubuf.cuda.CudaStream;

/**
 * Per-rank int32 sequence numbers in a user buffer, monotonic and never reset. A rank signals a peer with a stream
 * write of the next sequence number to the peer's flag (after its copy, same stream), and waits with a cyclic >=.
 */
public final class FlagRegion implements AutoCloseable {
    private final UserBuffer buffer;
    private final int count;

    FlagRegion(UserBuffer buffer, int count) {
        this.buffer = buffer;
        this.count = count;
    }

    public int count() {
        return count;
    }

    public int rank() {
        return buffer.rank();
    }

    /** Device address of flag {@code flag} of rank {@code r}. */
    public long address(int r, int flag) {
        if (flag < 0 || flag >= count) {
            throw new IllegalArgumentException("flag " + flag + " outside 0.." + (count - 1));
        }
        return buffer.peer(r).address() + (long) flag * Integer.BYTES;
    }

    /** After {@code stream}'s earlier work, set rank {@code peer}'s flag to {@code value}. */
    public void signal(CudaStream stream, int peer, int flag, int value) {
        stream.writeValue32(address(peer, flag), value);
    }

    /** Block {@code stream} until this rank's flag reaches {@code value} (wrap-safe). */
    public void await(CudaStream stream, int flag, int value) {
        stream.waitValue32(address(buffer.rank(), flag), value);
    }

    /** How long a report waits for a flag's value before it calls the flag unreadable. */
    static final java.time.Duration READ_DEADLINE = java.time.Duration.ofSeconds(2);

    /**
     * This rank's current value of {@code flag}, read from the host (diagnostics: what a stuck wait sees); fails
     * after {@link #READ_DEADLINE} rather than hang when the GPU's queues are stuck.
     */
    public int read(int flag) {
        return buffer.comm().context().readInt32(address(buffer.rank(), flag), READ_DEADLINE);
    }

    public UserBuffer buffer() {
        return buffer;
    }

    @Override
    public void close() {
        buffer.close();
    }
}
