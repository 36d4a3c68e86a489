package dev.ubuf.comm;

/**
 * The native side of one registered buffer: the local allocation and every peer's address in this process.
 * Implementations release in reverse order of acquisition and tolerate a second close.
 */
interface SharedMemory extends AutoCloseable {
    /** Device address of rank {@code r}'s instance, usable from this rank's device. */
    long address(int r);

    long bytes();

    @Override
    void close();
}
