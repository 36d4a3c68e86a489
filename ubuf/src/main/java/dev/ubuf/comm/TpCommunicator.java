package dev.ubuf.comm;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.CudaVmm;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.IpcMemory;
import dev.ubuf.gemm.GemmTuner;
import dev.ubuf.gemm.GemmTuning;
import dev.ubuf.resource.Closer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Supplier;

/**
 * One rank's membership in a tensor-parallel domain: the domain's bootstrap, this rank's CUDA context, and the user
 * buffers registered on every rank. Reference-counted ({@link #retain()} / {@link #close()}); the last close
 * releases every buffer still registered, newest first. The bootstrap stays the caller's.
 */
public final class TpCommunicator implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(TpCommunicator.class.getName());
    private final Bootstrap bootstrap;
    private final CudaContext context;
    private final UbufEnvironment env;
    private final BufferSharing sharing;
    private final GemmTuner gemmTuner;
    private final int[] deviceOfRank;
    private final byte[][] uuidOfRank; // empty where the driver would not say
    private final Deque<UserBuffer> live = new ArrayDeque<>();
    private final List<CudaContext> peerContexts = new ArrayList<>();
    private dev.ubuf.nccl.NcclCommunicator nccl;
    private int references = 1;
    private volatile String abortReason;

    private TpCommunicator(Bootstrap bootstrap, CudaContext context, UbufEnvironment env, BufferSharing requested) {
        this.bootstrap = bootstrap;
        this.context = context;
        this.env = env;
        // A rank's exit must not hang on a GPU that waits for a peer: SIGTERM ends it within seconds.
        dev.ubuf.posix.BoundedExit.install();
        // The ranks' GPUs wait on each other: GEMMs are timed only while none does (tuneGemms).
        this.gemmTuner = new GemmTuner(GemmTuning.from(env), GemmTuner.Policy.AT_INITIALISATION);
        context.makeCurrent();
        long pid = ProcessHandle.current().pid();
        byte[] uuid = deviceUuid(context);
        ByteBuffer me = ByteBuffer.allocate(14 + uuid.length).putInt(context.device().ordinal()).putLong(pid)
                .put((byte) (supportsVmmSharing(context) ? 1 : 0))
                .put((byte) (requested == null ? -1 : requested.ordinal())).put(uuid);
        byte[][] all = bootstrap.allGather(me.array());
        deviceOfRank = new int[all.length];
        uuidOfRank = new byte[all.length][];
        boolean samePid = true;
        boolean allVmm = true;
        for (int r = 0; r < all.length; r++) {
            ByteBuffer b = ByteBuffer.wrap(all[r]);
            deviceOfRank[r] = b.getInt();
            samePid &= b.getLong() == pid;
            allVmm &= b.get() == 1;
            int theirs = b.get();
            uuidOfRank[r] = new byte[b.remaining()];
            b.get(uuidOfRank[r]);
            // Every rank must take the same path, or the registrations would be different collectives.
            if (theirs != (requested == null ? -1 : requested.ordinal())) {
                throw new IllegalArgumentException("rank " + rank() + " asked for buffer sharing "
                        + (requested == null ? "automatic" : requested) + " but rank " + r + " for "
                        + (theirs < 0 ? "automatic" : BufferSharing.values()[theirs]));
            }
        }
        BufferSharing chosen = requested != null ? requested : choose(samePid, allVmm, sharedDevice().isEmpty());
        if (chosen == BufferSharing.IN_PROCESS && !samePid) {
            throw new IllegalArgumentException("IN_PROCESS sharing needs every rank in this JVM, but ranks span processes");
        }
        this.sharing = chosen;
        if (sharing == BufferSharing.IN_PROCESS) {
            for (int r = 0; r < deviceOfRank.length; r++) {
                if (r != rank()) {
                    CudaContext peer = CudaContext.retainPrimary(deviceOfRank[r]);
                    peerContexts.add(peer);
                    context.enablePeerAccess(peer);
                }
            }
            context.makeCurrent();
        }
        if (env.debug()) {
            LOG.log(System.Logger.Level.INFO, String.format(
                    "ubuf: rank %d of %d on device %d (%s), sharing %s, devices %s", rank(), tp(),
                    context.device().ordinal(), context.device().name(), sharing,
                    java.util.Arrays.toString(deviceOfRank)));
        }
    }

    /**
     * Joins the domain: collective over every rank of {@code domain}.
     *
     * @param sharing how user buffers are shared, the same on every rank; null for the environment's choice
     *     ({@link UbufEnvironment#bufferSharing}, UB_BUFFER_SHARING) or, where it has none, automatically
     *     ({@link #choose}): VMM_POSIX_FD where every rank's device supports VMM and POSIX-file-descriptor handles
     *     (in one JVM only where each rank has a GPU of its own), else IN_PROCESS in one JVM and LEGACY_IPC across
     *     processes. An explicit value overrides that choice (IN_PROCESS needs one JVM).
     */
    public static TpCommunicator create(Bootstrap domain, CudaContext context, UbufEnvironment env, BufferSharing sharing) {
        return new TpCommunicator(domain, context, env, sharing != null ? sharing : env.bufferSharing());
    }

    /**
     * The automatic choice; every rank computes it from the same gathered facts. VMM handles wherever every device
     * allows them, in one JVM too (when each rank has a GPU of its own): with plain allocations and peer access
     * between the contexts of one process, an overlapped layer's first step could deadlock, each rank's host blocked
     * inside a CUDA call while its device waited on a peer (4 of 22 demo runs on 4 H100s), and never with VMM
     * handles (0 of 19, threads and processes).
     */
    static BufferSharing choose(boolean allRanksInThisJvm, boolean everyDeviceSupportsVmmFds,
                                boolean everyRankOnItsOwnGpu) {
        if (everyDeviceSupportsVmmFds && (!allRanksInThisJvm || everyRankOnItsOwnGpu)) {
            return BufferSharing.VMM_POSIX_FD;
        }
        return allRanksInThisJvm ? BufferSharing.IN_PROCESS : BufferSharing.LEGACY_IPC;
    }

    private static byte[] deviceUuid(CudaContext context) {
        try {
            return context.device().uuid();
        } catch (RuntimeException e) {
            return new byte[0]; // unknown: such a rank is never taken to share its device
        }
    }

    /** Whether this rank could share through VMM allocations exported as POSIX file descriptors. */
    private static boolean supportsVmmSharing(CudaContext context) {
        try {
            return context.device().supportsVmm() && context.device().supportsPosixFdHandles()
                    && CudaVmm.driver().isAvailable();
        } catch (RuntimeException e) {
            return false; // an attribute the driver does not know: no VMM sharing, legacy IPC still works
        }
    }

    public int rank() {
        return bootstrap.rank();
    }

    public int tp() {
        return bootstrap.size();
    }

    public CudaContext context() {
        return context;
    }

    public Bootstrap bootstrap() {
        return bootstrap;
    }

    public UbufEnvironment environment() {
        return env;
    }

    public BufferSharing sharing() {
        return sharing;
    }

    /**
     * Chooses the algorithm of every GEMM this rank's ops run (UB_GEMM_TUNING, UB_GEMM_TUNING_FILE): pass it to each
     * {@link dev.ubuf.gemm.Gemm}, so each kind of GEMM is timed once per rank and the choice is shared.
     */
    public GemmTuner gemmTuner() {
        return gemmTuner;
    }

    /**
     * Initialisation of GEMMs (collective: every rank calls it, in the same order, with the same kind of pass): runs
     * {@code pass}, which enqueues GEMMs on {@code stream} that wait on no peer (an op's GEMMs alone, a layer's step
     * with its collectives off), with GEMM tuning allowed; waits for the stream; then the ranks agree on every GEMM
     * algorithm timed in the pass (the lowest rank's), which every later GEMM of that kind runs on every rank. Call it
     * only while no stream of this rank waits on a peer (before the first step, or after the streams drained): the
     * barrier at its start makes sure every rank has issued all its earlier work, so none of it waits on a pass.
     *
     * @return the number of GEMM kinds the ranks settled
     */
    public int tuneGemms(CudaStream stream, Runnable pass) {
        requireHealthy("GEMM tuning");
        context.makeCurrent();
        await(stream, () -> "the work before GEMM tuning");
        bootstrap.barrier();
        try (GemmTuner.Window window = gemmTuner.openWindow()) {
            pass.run();
            context.makeCurrent();
            await(stream, () -> "the GEMM tuning pass");
            byte[] mine = String.join("\n", window.choices()).getBytes(StandardCharsets.UTF_8);
            List<List<String>> byRank = new ArrayList<>();
            for (byte[] b : bootstrap.allGather(mine)) {
                String text = new String(b, StandardCharsets.UTF_8);
                byRank.add(text.isEmpty() ? List.of() : List.of(text.split("\n")));
            }
            List<String> agreed = GemmTuner.agree(byRank);
            window.settle(agreed);
            return agreed.size();
        }
    }

    public int deviceOfRank(int r) {
        return deviceOfRank[r];
    }

    /**
     * Whether two ranks of this domain share a GPU (same device UUID; possible with {@link ThreadDomain}'s GPU
     * mapping): then user buffers and plans work, NCCL does not. Names the first such pair; the same answer on
     * every rank.
     */
    public java.util.Optional<String> sharedDevice() {
        for (int r = 0; r < uuidOfRank.length; r++) {
            for (int q = 0; q < r; q++) {
                if (uuidOfRank[r].length > 0 && java.util.Arrays.equals(uuidOfRank[q], uuidOfRank[r])) {
                    return java.util.Optional.of("ranks " + q + " and " + r + " are both on one GPU (device "
                            + deviceOfRank[r] + " of rank " + r + ")");
                }
            }
        }
        return java.util.Optional.empty();
    }

    /**
     * Registers a buffer of {@code bytes} on every rank (collective: every rank calls with the same name and size),
     * zero-filled, and returns once every rank knows every address.
     */
    public synchronized UserBuffer register(String name, long bytes) {
        assertUsable();
        if (bytes <= 0) {
            throw new IllegalArgumentException("user buffer size must be positive, got " + bytes);
        }
        agreeOnSize(name, bytes);
        context.makeCurrent();
        SharedMemory memory = switch (sharing) {
            case IN_PROCESS -> inProcess(name, bytes);
            case LEGACY_IPC -> legacyIpc(name, bytes);
            case VMM_POSIX_FD -> VmmSharedMemory.create(this, name, bytes);
        };
        try {
            try (CudaStream s = context.createStream(dev.ubuf.cuda.StreamPriority.NORMAL)) {
                s.fill8(memory.address(rank()), (byte) 0, bytes);
                s.synchronize();
            }
            bootstrap.barrier();
        } catch (RuntimeException e) {
            memory.close();
            throw e;
        }
        UserBuffer ub = new UserBuffer(name, this, memory, deviceOfRank);
        live.push(ub);
        if (env.debug()) {
            StringBuilder sb = new StringBuilder();
            for (int r = 0; r < tp(); r++) {
                sb.append(String.format(" %d:0x%x", r, memory.address(r)));
            }
            LOG.log(System.Logger.Level.INFO, String.format("ubuf: rank %d registered %s (%d bytes, %s):%s", rank(),
                    name, bytes, sharing, sb));
        }
        return ub;
    }

    /** A flags region: {@code count} int32 sequence numbers per rank, zeroed once and never reset. */
    public FlagRegion flags(String name, int count) {
        if (count <= 0) {
            throw new IllegalArgumentException("flag count must be positive, got " + count);
        }
        return new FlagRegion(register(name, (long) count * Integer.BYTES), count);
    }

    /**
     * The domain's NCCL communicator (the unoverlapped reference, baselines, bulk fallbacks), created on first use:
     * collective, so every rank of the domain calls it the first time. Owned and destroyed by this communicator.
     *
     * @throws IllegalStateException when two ranks of the domain share a GPU (NCCL refuses that), on every rank
     *     alike and before any NCCL call
     */
    public synchronized dev.ubuf.nccl.NcclCommunicator nccl() {
        assertUsable();
        if (nccl == null) {
            sharedDevice().ifPresent(why -> {
                throw new IllegalStateException("NCCL needs a GPU of its own for each rank, but " + why);
            });
            byte[] id = bootstrap.broadcast(rank() == 0 ? dev.ubuf.nccl.NcclUniqueId.generate().bytes() : null, 0);
            context.makeCurrent();
            nccl = dev.ubuf.nccl.NcclCommunicator.initRank(new dev.ubuf.nccl.NcclUniqueId(id), tp(), rank());
        }
        return nccl;
    }

    private void agreeOnSize(String name, long bytes) {
        byte[] mine = ByteBuffer.allocate(8).putLong(bytes).array();
        byte[][] all = bootstrap.allGather(mine);
        for (int r = 0; r < all.length; r++) {
            long theirs = ByteBuffer.wrap(all[r]).getLong();
            if (theirs != bytes) {
                throw new IllegalArgumentException("register(" + name + "): rank " + rank() + " asked for " + bytes
                        + " bytes but rank " + r + " for " + theirs);
            }
        }
    }

    private SharedMemory inProcess(String name, long bytes) {
        DeviceBuffer mine = context.allocate(bytes, name);
        try {
            byte[][] all = bootstrap.allGather(ByteBuffer.allocate(8).putLong(mine.address()).array());
            long[] addresses = new long[all.length];
            for (int r = 0; r < all.length; r++) {
                addresses[r] = ByteBuffer.wrap(all[r]).getLong();
            }
            return new SharedMemory() {
                @Override
                public long address(int r) {
                    return addresses[r];
                }

                @Override
                public long bytes() {
                    return bytes;
                }

                @Override
                public void close() {
                    mine.close();
                }
            };
        } catch (RuntimeException e) {
            mine.close();
            throw e;
        }
    }

    private SharedMemory legacyIpc(String name, long bytes) {
        // Closes the peers' mappings, last opened first, then our own allocation.
        Closer owned = new Closer("user buffer " + name + " (CUDA IPC)");
        DeviceBuffer mine = owned.register("own allocation", context.allocate(bytes, name));
        try {
            byte[][] handles = bootstrap.allGather(IpcMemory.export(mine));
            long[] addresses = new long[handles.length];
            for (int r = 0; r < handles.length; r++) {
                if (r == rank()) {
                    addresses[r] = mine.address();
                } else {
                    IpcMemory m = owned.register("rank " + r + "'s allocation", IpcMemory.open(context, handles[r],
                            bytes));
                    addresses[r] = m.address();
                }
            }
            return new SharedMemory() {
                @Override
                public long address(int r) {
                    return addresses[r];
                }

                @Override
                public long bytes() {
                    return bytes;
                }

                @Override
                public void close() {
                    owned.close();
                }
            };
        } catch (RuntimeException e) {
            throw owned.closeAfter(e);
        }
    }

    synchronized void released(UserBuffer buffer) {
        live.remove(buffer);
    }

    /**
     * Waits for {@code stream} with the UB_TIMEOUT deadline. On expiry the domain is aborted and the error names this
     * rank and what {@code pending} says it was waiting for (flag, peer, expected and observed values). A peer the
     * bootstrap has seen fail ends the wait at once ({@link PeerFailedException}); so does a sticky CUDA error
     * ({@link dev.ubuf.cuda.CudaFatalException}): both abort the domain first, so no peer keeps waiting for this rank.
     */
    public void await(CudaStream stream, Supplier<String> pending) {
        new StreamWatchdog(rank(), env.timeout(), bootstrap::knownFailure, this::abort)
                .await(stream::synchronize, pending);
    }

    /**
     * After the domain was aborted and the waits that can never be satisfied were released: waits for {@code stream}
     * to drain, with the UB_TIMEOUT deadline and no further health checks (the failure is known).
     */
    public void awaitAfterAbort(CudaStream stream, Supplier<String> pending) {
        if (!stream.synchronize(env.timeout())) {
            throw new UbufTimeoutException("rank " + rank() + ": stream still busy " + env.timeout().toSeconds()
                    + " s after the domain was aborted and its waits released: " + pending.get());
        }
    }

    /** Whether this rank's domain was aborted (a timeout, a failed peer, a fatal error): no call will complete. */
    public boolean isAborted() {
        return abortReason != null;
    }

    /**
     * Before a call is issued: fails, without touching the GPU, when this rank aborted the domain or the bootstrap has
     * heard that a peer failed or aborted it. A call issued then could copy into a peer's memory that the peer, having
     * given up, has already freed.
     */
    public void requireHealthy(String what) {
        if (abortReason == null) {
            var failure = bootstrap.knownFailure();
            if (failure.isEmpty()) {
                return;
            }
            abort("rank " + rank() + ": " + failure.get().getMessage());
            throw new PeerFailedException("rank " + rank() + " refused to issue " + what + ": the domain failed: "
                    + failure.get().getMessage(), failure.get());
        }
        throw new IllegalStateException("rank " + rank() + " refused to issue " + what + ": the domain was aborted: "
                + abortReason);
    }

    /**
     * A barrier of the domain before memory that peers can reach is freed (close is collective): returns once every
     * rank has arrived, so every rank has drained its own streams. Skipped when the domain is aborted: the peers
     * were told, and waiting for a failed one would hang.
     */
    public void closeBarrier(String what) {
        if (abortReason != null) {
            return;
        }
        try {
            bootstrap.barrier();
        } catch (RuntimeException e) {
            abort("rank " + rank() + " closing " + what + ": " + e.getMessage());
            throw e;
        }
    }

    /** Marks the domain failed and tells the peers; later operations fail with {@code reason}. */
    public void abort(String reason) {
        if (abortReason == null) {
            abortReason = reason;
            // Logged now: closing after an abort can itself take until an outer deadline kills the process, and the
            // exception carrying the report would then never be printed.
            LOG.log(System.Logger.Level.ERROR, "ubuf: rank " + rank() + " aborts its domain: " + reason);
            try {
                bootstrap.abort(reason);
            } catch (RuntimeException ignored) {
                // the peers may already be gone; the local state is what matters now
            }
        }
    }

    void assertUsable() {
        if (abortReason != null) {
            throw new IllegalStateException("communicator of rank " + rank() + " was aborted: " + abortReason);
        }
        if (references <= 0) {
            throw new IllegalStateException("communicator of rank " + rank() + " is closed");
        }
    }

    /** Adds an owner; each owner closes once. */
    public synchronized TpCommunicator retain() {
        assertUsable();
        references++;
        return this;
    }

    /** Drops one reference; the last releases every buffer still registered (newest first) and peer contexts. */
    @Override
    public synchronized void close() {
        if (references <= 0) {
            return;
        }
        if (--references > 0) {
            return;
        }
        RuntimeException first = null;
        while (!live.isEmpty()) {
            try {
                live.peek().close();
            } catch (RuntimeException e) {
                live.poll();
                first = first == null ? e : first;
            }
        }
        if (nccl != null) {
            context.makeCurrent();
            if (abortReason != null) {
                nccl.abort();
            } else {
                nccl.close();
            }
            nccl = null;
        }
        for (int i = peerContexts.size() - 1; i >= 0; i--) {
            peerContexts.get(i).close();
        }
        peerContexts.clear();
        if (first != null) {
            throw first;
        }
    }
}
