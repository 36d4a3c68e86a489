package dev.ubuf.comm;

import dev.ubuf.cuda.DeviceMemory;
import dev.ubuf.cuda.ResourceLedger;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A buffer of the same size on every rank of a TP domain, registered once, whose peers' device addresses every rank
 * knows: a rank copies straight into a peer's instance. Created by {@link TpCommunicator#register}; closing releases
 * the mappings and the allocation (the communicator stays open). Listed in its context's ledger while open, whatever
 * the sharing (so a VMM user buffer left open is named too), and reported if collected unclosed.
 */
public final class UserBuffer implements AutoCloseable {
    private final String name;
    private final TpCommunicator comm;
    private final SharedMemory memory;
    private final DeviceMemory[] views;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    UserBuffer(String name, TpCommunicator comm, SharedMemory memory, int[] deviceOfRank) {
        this.name = name;
        this.comm = comm;
        this.memory = memory;
        this.views = new DeviceMemory[deviceOfRank.length];
        for (int r = 0; r < views.length; r++) {
            views[r] = new PeerAddress(this, r, deviceOfRank[r]);
        }
        // Not counted as device memory: IN_PROCESS and LEGACY_IPC memory is a device buffer the ledger counts already.
        this.entry = comm.context().ledger().track(this, "user buffer", name, memory.bytes());
    }

    TpCommunicator comm() {
        return comm;
    }

    public String name() {
        return name;
    }

    public long bytes() {
        return memory.bytes();
    }

    public int rank() {
        return comm.rank();
    }

    public int tp() {
        return comm.tp();
    }

    long address(int r) {
        if (closed.get()) {
            throw new IllegalStateException("user buffer " + name + " is closed");
        }
        return memory.address(r);
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /** This rank's instance. */
    public DeviceMemory local() {
        return views[comm.rank()];
    }

    /** Rank {@code r}'s instance, addressable from this rank (copies, kernels). */
    public DeviceMemory peer(int r) {
        if (r < 0 || r >= views.length) {
            throw new IllegalArgumentException("rank " + r + " outside domain of " + views.length);
        }
        return views[r];
    }

    /** A dense rows x cols matrix view of rank {@code r}'s instance. */
    public TensorView matrix(int r, long rows, long cols, DType dtype) {
        return TensorView.of(peer(r), rows, cols, dtype);
    }

    /**
     * Collective: every rank closes its instance together. Frees this rank's instance only after a barrier of the
     * domain, so no peer can still be copying into or reading from it (their streams that touch it are drained
     * before they arrive); after an abort the barrier is skipped, since a failed peer would never arrive.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                comm.closeBarrier("user buffer " + name);
            } finally {
                try {
                    comm.released(this);
                    memory.close();
                } finally {
                    entry.close();
                }
            }
        }
    }

    @Override
    public String toString() {
        return "UserBuffer(" + name + ", " + bytes() + " bytes, rank " + rank() + " of " + tp() + ")";
    }
}
