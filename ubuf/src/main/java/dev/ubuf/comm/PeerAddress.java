package dev.ubuf.comm;

import dev.ubuf.cuda.DeviceMemory;

/** One rank's instance of a user buffer as seen from this rank: a range of device memory it may copy into. */
record PeerAddress(UserBuffer owner, int rank, int device) implements DeviceMemory {
    @Override
    public long address() {
        return owner.address(rank);
    }

    @Override
    public long bytes() {
        return owner.bytes();
    }

    @Override
    public boolean isOpen() {
        return owner.isOpen();
    }

    @Override
    public String toString() {
        return owner.name() + "@rank" + rank;
    }
}
