package dev.ubuf.nccl;

import dev.ubuf.tensor.DType;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One rank's NCCL communicator ({@code ncclComm_t}). Buffers are raw device addresses, streams raw
 * {@code CUstream}/{@code cudaStream_t} handles ({@code 0} = the legacy default stream); counts are elements of the
 * given {@link DType}. Every argument is checked before NCCL is called.
 *
 * <p>CUDA context: NCCL works on the CUDA device that is current on the calling thread. Make the context of this
 * rank's device current (e.g. JCuda {@code cuCtxSetCurrent} of its primary context) before {@link #initRank} and
 * before every operation; NCCL rejects buffers of another device.
 *
 * <p>Data types: FP32, FP16 and BF16 map to ncclFloat32/ncclFloat16/ncclBfloat16. The reserved FP8 types map to
 * ncclFloat8e4m3/ncclFloat8e5m2, which nccl.h has since 2.24; with an older libnccl they are rejected with an
 * IllegalArgumentException before the call.
 *
 * <p>Threads: operations of one communicator must not run concurrently with each other (NCCL's rule);
 * {@link #abort()} may be called from any thread, e.g. a watchdog that found a dead peer, to unblock the others.
 * {@link #close()} must not race with operations.
 */
public final class NcclCommunicator implements AutoCloseable {
    private static final int OPEN = 0;
    private static final int DESTROYED = 1;
    private static final int ABORTED = 2;

    private final Nccl nccl;
    private final long comm;
    private final int rank;
    private final int size;
    private final AtomicInteger state = new AtomicInteger(OPEN);

    NcclCommunicator(Nccl nccl, long comm, int rank, int size) {
        this.nccl = nccl;
        this.comm = comm;
        this.rank = rank;
        this.size = size;
    }

    /**
     * Joins rank {@code rank} of an {@code nranks}-rank communicator ({@code ncclCommInitRank}).
     *
     * <p>Blocks until all {@code nranks} ranks have called it with the same id. With one JVM driving several GPUs
     * (a thread per rank), every rank's thread must call this concurrently, each with its own device's context
     * current; calling it for the ranks one after another from one thread deadlocks (use {@link #initAll}).
     */
    public static NcclCommunicator initRank(NcclUniqueId id, int nranks, int rank) {
        return initRank(Nccl.library(), id, nranks, rank);
    }

    static NcclCommunicator initRank(Nccl nccl, NcclUniqueId id, int nranks, int rank) {
        Objects.requireNonNull(id, "id");
        if (nranks < 1) {
            throw new IllegalArgumentException("nranks must be at least 1, got " + nranks);
        }
        if (rank < 0 || rank >= nranks) {
            throw new IllegalArgumentException("rank " + rank + " is outside 0.." + (nranks - 1));
        }
        long comm = nccl.commInitRank(nranks, id.bytes(), rank);
        return opened(nccl, comm);
    }

    /**
     * Creates the communicators of one process driving {@code devices} ({@code ncclCommInitAll}); rank i runs on
     * CUDA device ordinal {@code devices[i]}. Returns them in rank order; the caller closes each.
     */
    public static List<NcclCommunicator> initAll(int[] devices) {
        return initAll(Nccl.library(), devices);
    }

    static List<NcclCommunicator> initAll(Nccl nccl, int[] devices) {
        Objects.requireNonNull(devices, "devices");
        if (devices.length == 0) {
            throw new IllegalArgumentException("initAll needs at least one device");
        }
        Set<Integer> seen = new HashSet<>();
        for (int d : devices) {
            if (d < 0) {
                throw new IllegalArgumentException("device ordinal " + d + " is negative");
            }
            if (!seen.add(d)) {
                throw new IllegalArgumentException("device " + d + " is listed twice: one rank per GPU");
            }
        }
        long[] comms = nccl.commInitAll(devices.clone());
        List<NcclCommunicator> out = new ArrayList<>(comms.length);
        try {
            for (long c : comms) {
                out.add(opened(nccl, c));
            }
        } catch (RuntimeException e) {
            // opened() already destroyed the communicator it failed on (index out.size()); free the ones after it.
            for (int i = out.size() + 1; i < comms.length; i++) {
                try {
                    nccl.commDestroy(comms[i]);
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            closeAll(out, e);
            throw e;
        }
        return List.copyOf(out);
    }

    /** Wraps a fresh communicator, asking NCCL for its rank and size; destroys it if that fails. */
    private static NcclCommunicator opened(Nccl nccl, long comm) {
        try {
            return new NcclCommunicator(nccl, comm, nccl.commUserRank(comm), nccl.commCount(comm));
        } catch (RuntimeException e) {
            try {
                nccl.commDestroy(comm);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private static void closeAll(List<NcclCommunicator> comms, RuntimeException into) {
        for (NcclCommunicator c : comms) {
            try {
                c.close();
            } catch (RuntimeException suppressed) {
                into.addSuppressed(suppressed);
            }
        }
    }

    /** This communicator's rank (ncclCommUserRank). */
    public int rank() {
        return rank;
    }

    /** Number of ranks (ncclCommCount). */
    public int size() {
        return size;
    }

    /** Whether neither {@link #close()} nor {@link #abort()} has been called. */
    public boolean isOpen() {
        return state.get() == OPEN;
    }

    /** {@code recv[i*sendCount ..]} = rank i's {@code send[0 .. sendCount)}; recv holds size*sendCount elements. */
    public void allGather(long send, long recv, long sendCount, DType dtype, long stream) {
        requirePointer(send, "send");
        requirePointer(recv, "recv");
        requireCount(sendCount, dtype, size, "sendCount");
        int type = dataType(dtype);
        nccl.allGather(send, recv, sendCount, type, handle(), stream);
    }

    /** {@code recv} = block {@code rank} (recvCount elements) of op over all ranks' {@code send} (size*recvCount). */
    public void reduceScatter(long send, long recv, long recvCount, DType dtype, NcclRedOp op, long stream) {
        requirePointer(send, "send");
        requirePointer(recv, "recv");
        requireCount(recvCount, dtype, size, "recvCount");
        Objects.requireNonNull(op, "op");
        int type = dataType(dtype);
        nccl.reduceScatter(send, recv, recvCount, type, op.code(), handle(), stream);
    }

    /** {@code recv} = op over all ranks' {@code send} ({@code count} elements each); in place when send == recv. */
    public void allReduce(long send, long recv, long count, DType dtype, NcclRedOp op, long stream) {
        requirePointer(send, "send");
        requirePointer(recv, "recv");
        requireCount(count, dtype, 1, "count");
        Objects.requireNonNull(op, "op");
        int type = dataType(dtype);
        nccl.allReduce(send, recv, count, type, op.code(), handle(), stream);
    }

    /**
     * Every rank's {@code recv} = rank {@code root}'s {@code send} ({@code count} elements). {@code send} is read
     * only on the root and may be 0 elsewhere.
     */
    public void broadcast(long send, long recv, long count, DType dtype, int root, long stream) {
        requireRank(root, "root");
        if (rank == root) {
            requirePointer(send, "send");
        }
        requirePointer(recv, "recv");
        requireCount(count, dtype, 1, "count");
        int type = dataType(dtype);
        nccl.broadcast(send, recv, count, type, root, handle(), stream);
    }

    /** Sends {@code count} elements to {@code peer}, which must post a matching {@link #recv}; see groupStart. */
    public void send(long buf, long count, DType dtype, int peer, long stream) {
        requirePointer(buf, "buf");
        requireCount(count, dtype, 1, "count");
        requireRank(peer, "peer");
        int type = dataType(dtype);
        nccl.send(buf, count, type, peer, handle(), stream);
    }

    /** Receives {@code count} elements from {@code peer}, which must post a matching {@link #send}. */
    public void recv(long buf, long count, DType dtype, int peer, long stream) {
        requirePointer(buf, "buf");
        requireCount(count, dtype, 1, "count");
        requireRank(peer, "peer");
        int type = dataType(dtype);
        nccl.recv(buf, count, type, peer, handle(), stream);
    }

    /**
     * Opens a group on the calling thread (ncclGroupStart): NCCL calls up to {@link #groupEnd()} are fused and
     * launched together. Needed for send/recv pairs that must progress together and for one thread issuing a
     * collective on several communicators. Groups nest; each start needs its end.
     */
    public static void groupStart() {
        Nccl.library().groupStart();
    }

    /** Closes the calling thread's group (ncclGroupEnd); the operations are then enqueued on their streams. */
    public static void groupEnd() {
        Nccl.library().groupEnd();
    }

    /**
     * The communicator's asynchronous error (ncclCommGetAsyncError), e.g. a network failure found by NCCL's proxy
     * thread; {@link NcclResult#SUCCESS} when none. Poll it while waiting on NCCL work, and {@link #abort()} on error.
     */
    public NcclResult asyncError() {
        int code = nccl.commGetAsyncError(handle());
        return NcclResult.fromCode(code).orElseThrow(() -> new NcclException("ncclCommGetAsyncError", code,
                "ncclCommGetAsyncError reported ncclResult_t " + code + ", unknown to this binding"));
    }

    /**
     * Aborts the communicator (ncclCommAbort): frees it and stops its pending operations. Safe from any thread while
     * others are blocked in NCCL. Afterwards the communicator is closed: {@link #close()} does nothing more. No-op
     * when already closed or aborted.
     */
    public void abort() {
        if (state.compareAndSet(OPEN, ABORTED)) {
            nccl.commAbort(comm);
        }
    }

    /** Destroys the communicator (ncclCommDestroy). Idempotent; after {@link #abort()} it does nothing. */
    @Override
    public void close() {
        // State changes first: a failed destroy is never retried.
        if (state.compareAndSet(OPEN, DESTROYED)) {
            nccl.commDestroy(comm);
        }
    }

    @Override
    public String toString() {
        return "NcclCommunicator[rank " + rank + " of " + size + (isOpen() ? "" : ", closed") + "]";
    }

    // ---- validation ---------------------------------------------------------------------------------------------

    private long handle() {
        if (state.get() != OPEN) {
            throw new IllegalStateException(this + " is " + (state.get() == ABORTED ? "aborted" : "closed"));
        }
        return comm;
    }

    private int dataType(DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        handle(); // closed before library questions: the clearer error
        return nccl.dataTypeForLoaded(dtype);
    }

    private static void requirePointer(long address, String name) {
        if (address == 0) {
            throw new IllegalArgumentException(name + " device pointer is null (0)");
        }
    }

    private void requireRank(int r, String name) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException(name + " " + r + " is outside 0.." + (size - 1));
        }
    }

    /** count > 0, and the largest buffer the call touches (count * ranks elements) fits in a long of bytes. */
    private static void requireCount(long count, DType dtype, int ranks, String name) {
        Objects.requireNonNull(dtype, "dtype");
        if (count <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + count);
        }
        try {
            Math.multiplyExact(Math.multiplyExact(count, (long) ranks), (long) dtype.bytes());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(name + " " + count + " x " + ranks + " ranks x " + dtype.bytes()
                    + " bytes overflows a 64-bit size");
        }
    }
}
