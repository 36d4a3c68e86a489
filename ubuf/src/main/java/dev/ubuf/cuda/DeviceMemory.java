package dev.ubuf.cuda;

/**
 * A range of device memory ubuf may read or write: an allocation, a user buffer's local part or a peer's mapping.
 */
public interface DeviceMemory {
    /** Raw device address of the first byte; throws if the memory is closed. */
    long address();

    long bytes();

    /** Ordinal of the device whose memory this is. */
    int device();

    boolean isOpen();

    default void assertOpen() {
        if (!isOpen()) {
            throw new IllegalStateException(this + " is closed");
        }
    }
}
