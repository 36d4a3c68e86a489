package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaVmm;
import dev.ubuf.cuda.VmmAllocation;
import dev.ubuf.cuda.VmmMapping;
import dev.ubuf.posix.OwnedFd;
import dev.ubuf.resource.Closer;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A user buffer shared through CUDA VMM: each rank's instance is a cuMemCreate allocation exported as a POSIX file
 * descriptor; the descriptors travel to every peer over Unix sockets ({@link FdExchange}); each rank imports its
 * peers' allocations and maps all tp of them into one reserved range, rank r's instance at {@code r * stride}, with
 * read-write access for its own device. Works across processes and, since a process may import its own exports,
 * between threads of one JVM.
 *
 * <p>Close unmaps and frees the range, then releases the imported allocations and the own one (reverse order of
 * acquisition); once.
 */
final class VmmSharedMemory implements SharedMemory {
    private final CudaContext context;
    private final VmmMapping mapping;
    private final List<VmmAllocation> imported;
    private final VmmAllocation own;
    private final long bytes;
    private final long stride;
    private final long base;
    /** Unmaps, frees the range, then releases the imported allocations and the own one. */
    private final Closer closer = new Closer("VMM user buffer memory");

    private VmmSharedMemory(CudaContext context, VmmMapping mapping, List<VmmAllocation> imported, VmmAllocation own,
            long bytes) {
        this.context = context;
        this.mapping = mapping;
        this.imported = imported;
        this.own = own;
        this.bytes = bytes;
        this.stride = own.size();
        this.base = mapping.address();
        closer.register("own allocation", own);
        for (int r = 0; r < imported.size(); r++) {
            closer.register("imported allocation " + r, imported.get(r));
        }
        closer.register("mapping", mapping);
        // VMM calls use the calling thread's context, and close may run on another thread; a failure to make it
        // current is reported after the rest has been tried.
        closer.onClose("making the context current", context::makeCurrent);
    }

    /**
     * Collective over {@code comm}'s ranks (inside {@link TpCommunicator#register}, with this rank's context
     * current). A failure aborts the domain, since the ranks are then out of step, and is rethrown after everything
     * acquired here has been released.
     */
    static SharedMemory create(TpCommunicator comm, String name, long bytes) {
        try {
            return create(comm.bootstrap(), comm.context(), name, bytes);
        } catch (RuntimeException e) {
            comm.abort("rank " + comm.rank() + " could not share user buffer " + name + " through VMM: " + e.getMessage());
            throw e;
        }
    }

    private static SharedMemory create(Bootstrap bootstrap, CudaContext context, String name, long bytes) {
        int me = bootstrap.rank();
        int tp = bootstrap.size();
        int device = context.device().ordinal();
        long granularity = CudaVmm.driver().granularity(device, CudaVmm.Granularity.MINIMUM);
        long stride = agreeOnStride(bootstrap, name, CudaVmm.roundUpToGranularity(bytes, granularity), granularity);
        long total;
        try {
            total = Math.multiplyExact(stride, (long) tp);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("user buffer " + name + ": " + tp + " x " + stride
                    + " bytes overflow the address range");
        }

        VmmAllocation own = VmmAllocation.create(stride, device);
        List<VmmAllocation> imported = new ArrayList<>();
        try {
            if (own.size() != stride) {
                throw new IllegalStateException("rank " + me + ": VMM allocation of " + name + " is " + own.size()
                        + " bytes, not the agreed " + stride);
            }
            Map<Integer, OwnedFd> fds;
            // The exported descriptor is ours; closed once it has gone to every peer (or the exchange failed).
            try (OwnedFd exported = OwnedFd.adopt(own.exportFd(), "VMM allocation of " + name + " exported by rank "
                    + me)) {
                fds = FdExchange.exchange(bootstrap, exported.value(), bootstrap.timeout());
            }
            VmmAllocation[] byRank = new VmmAllocation[tp];
            byRank[me] = own;
            importAll(fds, byRank, imported, stride, device, me, name);
            List<VmmMapping.Segment> segments = new ArrayList<>(tp);
            for (int r = 0; r < tp; r++) {
                segments.add(new VmmMapping.Segment(byRank[r], r * stride));
            }
            // map() undoes its own partial work if it fails.
            VmmMapping mapping = VmmMapping.map(total, segments, new int[]{device});
            return new VmmSharedMemory(context, mapping, List.copyOf(imported), own, bytes);
        } catch (RuntimeException e) {
            for (int i = imported.size() - 1; i >= 0; i--) {
                closeInto(e, imported.get(i));
            }
            closeInto(e, own);
            throw e;
        }
    }

    /**
     * Every rank rounds up to its own device's granularity; all take the largest, which must suit every device
     * (identical GPUs agree exactly; anything else is refused here, before any allocation).
     */
    private static long agreeOnStride(Bootstrap bootstrap, String name, long mine, long granularity) {
        byte[][] all = bootstrap.allGather(ByteBuffer.allocate(2 * Long.BYTES).putLong(mine).putLong(granularity)
                .array());
        long stride = 0;
        int widest = 0;
        for (int r = 0; r < all.length; r++) {
            long theirs = ByteBuffer.wrap(all[r]).getLong();
            if (theirs > stride) {
                stride = theirs;
                widest = r;
            }
        }
        for (int r = 0; r < all.length; r++) {
            ByteBuffer b = ByteBuffer.wrap(all[r]);
            b.getLong();
            long theirGranularity = b.getLong();
            if (stride % theirGranularity != 0) {
                throw new BufferSharingException("user buffer " + name + ": rank " + widest + " rounds it up to "
                        + stride + " bytes, which is not a multiple of rank " + r + "'s VMM granularity "
                        + theirGranularity + " (ranks on different kinds of GPU?); seen on rank " + bootstrap.rank());
            }
        }
        return stride;
    }

    /** Imports each peer's descriptor (rank order) and closes it right after; closes any left after a failure. */
    private static void importAll(Map<Integer, OwnedFd> fds, VmmAllocation[] byRank, List<VmmAllocation> imported,
            long stride, int device, int me, String name) {
        List<OwnedFd> open = new ArrayList<>(fds.values());
        try {
            for (var entry : fds.entrySet()) {
                int peer = entry.getKey();
                try (OwnedFd fd = entry.getValue()) {
                    // The device ordinal of this process: it only sets the granularity the import is checked
                    // against (sizes are agreed), and a peer's ordinal may name nothing here (CUDA_VISIBLE_DEVICES).
                    VmmAllocation a = VmmAllocation.importFd(fd.value(), stride, device);
                    imported.add(a);
                    byRank[peer] = a;
                } catch (RuntimeException e) {
                    throw new BufferSharingException("rank " + me + " could not import rank " + peer + "'s VMM "
                            + "allocation of user buffer " + name + ": " + e.getMessage(), e);
                }
            }
        } catch (RuntimeException e) {
            for (int i = open.size() - 1; i >= 0; i--) {
                closeInto(e, open.get(i)); // those already imported are closed: a second close does nothing
            }
            throw e;
        }
        for (int r = 0; r < byRank.length; r++) {
            if (byRank[r] == null) {
                throw new BufferSharingException("rank " + me + " received no VMM allocation of user buffer " + name
                        + " from rank " + r);
            }
        }
    }

    private static void closeInto(RuntimeException failure, AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception e) {
            failure.addSuppressed(e);
        }
    }

    @Override
    public long address(int r) {
        if (r < 0 || r * stride >= mapping.size()) {
            throw new IllegalArgumentException("rank " + r + " outside the " + mapping.size() / stride
                    + " ranks of this buffer");
        }
        closer.requireOpen();
        return base + r * stride;
    }

    /** The size asked for; each instance occupies {@link #stride()} bytes (rounded to the VMM granularity). */
    @Override
    public long bytes() {
        return bytes;
    }

    long stride() {
        return stride;
    }

    /** Unmaps, frees the range, then releases the imported allocations and the own one; once. */
    @Override
    public void close() {
        closer.close();
    }

    @Override
    public String toString() {
        return "VmmSharedMemory[" + mapping.segments().size() + " x " + stride + " bytes at 0x"
                + Long.toHexString(base) + (closer.isClosed() ? ", closed]" : "]");
    }
}
