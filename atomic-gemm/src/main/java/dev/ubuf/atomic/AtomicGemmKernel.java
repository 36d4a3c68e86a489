package dev.ubuf.atomic;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelsUnavailableException;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * The atomic GEMM (sm_90a: H100/H200) loaded into one context: {@code D = alpha · A · B + beta · D}, A row-major
 * [M, K], B [K, N] or stored transposed [N, K] ({@link BLayout}), bf16 or fp16 in, fp32 accumulation, bf16 or fp32
 * out. With {@link Hooks} its tiles wait on per-chunk arrival counters before reading A (all-gather side) and raise
 * per-chunk done counters after writing D (reduce-scatter side); see atomic-gemm/README.md.
 *
 * <p>Every argument is checked before any GPU work. After a launch with an arrival wait, synchronise the stream and
 * call {@link #checkErrors()} (or {@link #error}): an expired wait is reported there, never as a hang. The error slot,
 * the tile counters and the split-K workspace and semaphores belong to this object, so launches from one object go on
 * one stream at a time, and a check reports the last launch. Each launch passes a fresh launch id that the kernel
 * writes into the error slot on an expired wait, so the slot needs no clearing before each launch; the split-K
 * semaphores are left at 0 by every launch (zeroed once when allocated); the tile counters of the done hook are
 * zeroed on the stream before each launch that has one.
 *
 * <p>The launch path keeps what does not change between calls: each kernel function (with its shared-memory limit
 * raised once) and the most recent tensor maps, so a launch of a small GEMM costs the host little.
 */
public final class AtomicGemmKernel implements AutoCloseable {
    /** Threads a CTA: a producer warpgroup and two consumer warpgroups. */
    public static final int THREADS = 384;
    /**
     * Dynamic shared memory of the default 128x256 tile: 1024 alignment slack, 4 stages of (16 KB of A + 32 KB of
     * B), 8 mbarriers. Other tiles: {@link TileConfig#smemBytes()}.
     */
    public static final int SMEM_BYTES = 1024 + 4 * (16384 + 32768) + 2 * 4 * 8;
    /** Words of the device error slot: status, chunk, expected, observed, block (and 3 spare). */
    static final int ERROR_SLOT_WORDS = 8;

    /**
     * The counters a launch works with. Counters are uint32 arrays in device memory, one per chunk, compared
     * wrap-safe ({@code (int) (counter - value) >= 0}) as the monotonic flags elsewhere in ubuf.
     *
     * @param arrivalCounters 0, or the chunks' arrival counters: a tile of chunk c reads A only once counter c
     *                        reaches arrivalValue
     * @param timeout         how long one wait may take before the kernel gives up (positive when waiting)
     * @param doneCounters    0, or the chunks' done counters: the last tile of chunk c stores doneValue to counter c
     */
    public record Hooks(long arrivalCounters, int arrivalValue, Duration timeout, long doneCounters, int doneValue) {
        public static final Hooks NONE = new Hooks(0, 0, Duration.ZERO, 0, 0);

        public Hooks {
            Objects.requireNonNull(timeout, "timeout");
        }

        /** Tiles of chunk c wait until arrival counter c reaches {@code value}, at most {@code timeout} each. */
        public static Hooks waitForArrival(long arrivalCounters, int value, Duration timeout) {
            return new Hooks(arrivalCounters, value, timeout, 0, 0);
        }

        /** The last tile of chunk c raises done counter c to {@code value}. */
        public static Hooks raiseDone(long doneCounters, int value) {
            return new Hooks(0, 0, Duration.ZERO, doneCounters, value);
        }

        public Hooks withDone(long doneCounters, int value) {
            return new Hooks(arrivalCounters, arrivalValue, timeout, doneCounters, value);
        }
    }

    private final CudaContext context;
    private final HopperDriver driver;
    private final long module;
    private final DeviceBuffer errorSlot;
    /** Most chunks one launch may have: a chunk is a rank's rows, and TP domains stay within one NVLink node. */
    public static final int MAX_CHUNKS = 1024;
    /** Per-chunk tile counts of the producer hook: allocated with the kernel, so a launch allocates nothing. */
    private final DeviceBuffer tileCounters;
    private final int multiprocessors;
    /** Kernel functions by name, their dynamic shared-memory limit already raised. */
    private final Map<String, Long> functions = new HashMap<>();
    /** Co-resident clusters of each clustered kernel (cuOccupancyMaxActiveClusters), by kernel name. */
    private final Map<String, Integer> maxActiveClusters = new HashMap<>();
    /** {@code -Dubuf.atomic.maxClusters}, read once at load: replaces the driver's answer when set. */
    private final Integer forcedMaxClusters = Integer.getInteger("ubuf.atomic.maxClusters");
    /** Recently encoded tensor maps (a few: A and B of the last launches), by everything that goes into one. */
    private final Map<TensorMapSpec.Key, long[]> tensorMaps = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<TensorMapSpec.Key, long[]> eldest) {
            return size() > 8;
        }
    };
    /** Split-K partial tiles; grown (never shrunk) to what a launch needs. */
    private DeviceBuffer workspace;
    /**
     * Outgrown split-K buffers, freed by close: an earlier launch may still use one, and freeing now (cuMemFree
     * waits for the device) could block on a stream that waits for work this thread has yet to enqueue.
     */
    private final java.util.List<DeviceBuffer> retired = new java.util.ArrayList<>();
    /** Split-K semaphores, one uint32 per tile; zeroed when allocated, left zeroed by every launch. */
    private DeviceBuffer semaphores;
    /** The id the last launch passed (never 0: a fresh error slot holds 0). */
    private int launchId;
    private boolean errorSlotCleared;
    /** The error slot, the tile counters, the split-K buffers, then the module: closed in reverse. */
    private final Closer closer = new Closer("atomic GEMM kernel");

    private AtomicGemmKernel(CudaContext context, HopperDriver driver, long module) {
        this.context = context;
        this.driver = driver;
        this.module = module;
        this.multiprocessors = context.device().smCount();
        this.errorSlot = closer.register("error slot",
                context.allocate(4L * ERROR_SLOT_WORDS, "atomic GEMM error slot"));
        try {
            this.tileCounters = closer.register("tile counters",
                    context.allocate(4L * MAX_CHUNKS, "atomic GEMM tile counters"));
        } catch (RuntimeException e) {
            throw closer.closeAfter(e);
        }
        closer.onClose("split-K buffers", this::closeSplitBuffers);
        closer.onClose("module", () -> {
            context.makeCurrent();
            driver.unloadModule(module);
        });
    }

    /**
     * Loads the sm_90a image into {@code context}.
     *
     * @throws KernelsUnavailableException when the build had no nvcc, or the GPU is not compute capability 9.0
     */
    public static AtomicGemmKernel load(CudaContext context) {
        int cc = context.device().computeCapability();
        if (cc != 90) {
            throw new KernelsUnavailableException("the atomic GEMM needs an sm_90a GPU (H100/H200, compute "
                    + "capability 9.0); " + context.device() + " has " + cc / 10 + "." + cc % 10);
        }
        byte[] image;
        try {
            image = Sm90aImage.fatbin();
        } catch (IllegalStateException e) {
            throw new KernelsUnavailableException(e.getMessage());
        }
        context.makeCurrent();
        HopperDriver driver = new HopperDriver();
        long module = driver.loadModule(image, "ubuf_sm90a.fatbin");
        try {
            return new AtomicGemmKernel(context, driver, module);
        } catch (RuntimeException e) {
            driver.unloadModule(module);
            throw e;
        }
    }

    /** The default-tile kernel for these operand types, e.g. {@code ubuf_atomic_gemm_bf16_bnk_f32}. */
    public static String kernelName(DType in, BLayout layout, DType out) {
        return kernelName(in, layout, out, TileConfig.N256);
    }

    /** The cooperative kernel for these operand types and tiles, e.g. {@code ubuf_atomic_gemm_bf16_bnk_f32_n192}. */
    public static String kernelName(DType in, BLayout layout, DType out, TileConfig config) {
        return kernelName(in, layout, out, AtomicGemmConfig.of(config));
    }

    /**
     * The kernel for these operand types and this configuration, e.g. {@code ubuf_atomic_gemm_bf16_bnk_f32_n192}
     * (cooperative) or {@code ubuf_atomic_gemm_bf16_bnk_f32_pp_n192} (ping-pong); split-K runs the same kernel.
     */
    public static String kernelName(DType in, BLayout layout, DType out, AtomicGemmConfig config) {
        if (!config.tile().supports(layout)) {
            throw new IllegalArgumentException("no " + config + " tile kernels for B layout " + layout
                    + " (its 64-column boxes need a tile width that is a multiple of 64)");
        }
        String i = switch (in) {
            case BF16 -> "bf16";
            case FP16 -> "f16";
            default -> throw new IllegalArgumentException("the atomic GEMM reads bf16 or fp16, not " + in);
        };
        String o = switch (out) {
            case BF16 -> "bf16";
            case FP32 -> "f32";
            default -> throw new IllegalArgumentException("the atomic GEMM writes bf16 or fp32, not " + out);
        };
        return "ubuf_atomic_gemm_" + i + "_" + layout.kernelTag() + "_" + o + config.kernelSuffix();
    }

    /**
     * Checks one call's arguments; throws IllegalArgumentException naming the first problem. A [M, K]; B [K, N]
     * (KN) or [N, K] (NK); D [M, N]; A and B the same 16-bit type, D bf16 or fp32; A's and B's addresses and row
     * strides multiples of 16 bytes (TMA), D 16-byte aligned; D overlapping neither; M a multiple of chunks; M, N,
     * K below 2^31; finite alpha and beta; hook counters 4-byte aligned, a positive timeout with a wait.
     */
    public static void validate(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha, float beta,
                                int chunks, int firstChunk, Hooks hooks) {
        Objects.requireNonNull(a, "a");
        Objects.requireNonNull(b, "b");
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(d, "d");
        Objects.requireNonNull(hooks, "hooks");
        if (a.dtype() != DType.BF16 && a.dtype() != DType.FP16) {
            throw new IllegalArgumentException("A must be bf16 or fp16, got " + a.dtype().shortName());
        }
        if (b.dtype() != a.dtype()) {
            throw new IllegalArgumentException("B must have A's type " + a.dtype().shortName() + ", got "
                    + b.dtype().shortName());
        }
        if (d.dtype() != DType.BF16 && d.dtype() != DType.FP32) {
            throw new IllegalArgumentException("D must be bf16 or fp32, got " + d.dtype().shortName());
        }
        long m = a.rows();
        long k = a.cols();
        long n = layout == BLayout.KN ? b.cols() : b.rows();
        long bk = layout == BLayout.KN ? b.rows() : b.cols();
        if (bk != k) {
            throw new IllegalArgumentException("B " + (layout == BLayout.KN ? "[K, N]" : "[N, K]") + " is " + b.rows()
                    + "x" + b.cols() + " but A [M, K] is " + m + "x" + k + ": K differs");
        }
        if (d.rows() != m || d.cols() != n) {
            throw new IllegalArgumentException("D must be [M, N] = " + m + "x" + n + ", got " + d.rows() + "x"
                    + d.cols());
        }
        for (long extent : new long[]{m, n, k}) {
            if (extent > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("M, N and K must be below 2^31, got " + m + "x" + n + "x" + k);
            }
        }
        requireTmaOperand(a, "A");
        requireTmaOperand(b, "B");
        if (d.address() % 16 != 0) {
            throw new IllegalArgumentException("D's address 0x" + Long.toHexString(d.address())
                    + " must be 16-byte aligned");
        }
        if (overlaps(d, a) || overlaps(d, b)) {
            throw new IllegalArgumentException("D must not overlap A or B");
        }
        if (!Float.isFinite(alpha) || !Float.isFinite(beta)) {
            throw new IllegalArgumentException("alpha and beta must be finite, got " + alpha + ", " + beta);
        }
        if (chunks > MAX_CHUNKS) {
            throw new IllegalArgumentException("chunks=" + chunks + " exceeds " + MAX_CHUNKS);
        }
        if (chunks < 1 || m % chunks != 0) {
            throw new IllegalArgumentException("M=" + m + " must split into chunks=" + chunks + " equal chunks");
        }
        if (firstChunk < 0 || firstChunk >= chunks) {
            throw new IllegalArgumentException("firstChunk=" + firstChunk + " is not a chunk of " + chunks);
        }
        if (hooks.arrivalCounters() % 4 != 0 || hooks.doneCounters() % 4 != 0) {
            throw new IllegalArgumentException("counter arrays must be 4-byte aligned");
        }
        if (hooks.arrivalCounters() != 0 && (hooks.timeout().isNegative() || hooks.timeout().isZero())) {
            throw new IllegalArgumentException("an arrival wait needs a positive timeout, got " + hooks.timeout());
        }
    }

    private static void requireTmaOperand(TensorView t, String name) {
        if (t.address() % 16 != 0) {
            throw new IllegalArgumentException(name + "'s address 0x" + Long.toHexString(t.address())
                    + " must be 16-byte aligned (TMA)");
        }
        long stride = t.ld() * t.dtype().bytes();
        if (stride % 16 != 0) {
            throw new IllegalArgumentException(name + "'s row stride " + stride + " bytes (ld " + t.ld()
                    + ") must be a multiple of 16 bytes (TMA): ld a multiple of " + 16 / t.dtype().bytes());
        }
        if (stride >= 1L << 40) {
            throw new IllegalArgumentException(name + "'s row stride " + stride + " bytes must be below 2^40 (TMA)");
        }
    }

    private static boolean overlaps(TensorView x, TensorView y) {
        return x.address() < y.address() + y.spanBytes() && y.address() < x.address() + x.spanBytes();
    }

    /** {@link #launch(TensorView, TensorView, BLayout, TensorView, float, float, int, int, Hooks, CudaStream)}
     * as one plain GEMM: one chunk, no hooks. */
    public void launch(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha, float beta,
                       CudaStream stream) {
        launch(a, b, layout, d, alpha, beta, 1, 0, Hooks.NONE, stream);
    }

    /** The multiprocessors the persistent grid is sized for (this context's device). */
    public int multiprocessors() {
        return multiprocessors;
    }

    /**
     * The tile configuration {@link #launch(TensorView, TensorView, BLayout, TensorView, float, float, int, int,
     * Hooks, CudaStream)} uses for an m × n product in {@code chunks} chunks: {@link TileConfig#select} on this
     * device's multiprocessors.
     */
    public TileConfig select(int m, int n, int chunks, BLayout layout) {
        return TileConfig.select(m, n, chunks, layout, multiprocessors);
    }

    /**
     * The configuration (tile and split-K) the automatic launch uses for an m × n × k product in {@code chunks}
     * chunks: {@link AtomicGemmConfig#select} on this device's multiprocessors.
     */
    public AtomicGemmConfig select(int m, int n, int k, int chunks, BLayout layout) {
        return AtomicGemmConfig.select(m, n, k, chunks, layout, multiprocessors);
    }

    /** The rule's configuration for {@code schedule} on this device: {@link AtomicGemmConfig#selectCooperative},
     * {@link AtomicGemmConfig#selectPingPong}, or {@link TileConfig#select}'s tile in clusters. */
    public AtomicGemmConfig select(int m, int n, int k, int chunks, BLayout layout, AtomicGemmConfig.Schedule schedule) {
        Objects.requireNonNull(schedule, "schedule");
        return AtomicGemmConfig.select(schedule, m, n, k, chunks, layout, multiprocessors);
    }

    /**
     * Enqueues {@code D = alpha · A · B + beta · D} on {@code stream} (D is not read when beta is 0, so it may hold
     * anything, NaN included). Tiles visit chunks in the order firstChunk, firstChunk + 1, ... (mod chunks). The
     * configuration (tile, split-K) is {@link #select(int, int, int, int, BLayout)}'s.
     */
    public void launch(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha,
                       float beta, int chunks, int firstChunk, Hooks hooks, CudaStream stream) {
        validate(a, b, layout, d, alpha, beta, chunks, firstChunk, hooks);
        launch(a, b, layout, d, alpha, beta, chunks, firstChunk, hooks,
                select((int) a.rows(), (int) d.cols(), (int) a.cols(), chunks, layout), stream);
    }

    /** As the configuration overload, with {@code config}'s tiles and no split-K. */
    public void launch(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha,
                       float beta, int chunks, int firstChunk, Hooks hooks, TileConfig config,
                       CudaStream stream) {
        Objects.requireNonNull(config, "config");
        launch(a, b, layout, d, alpha, beta, chunks, firstChunk, hooks, AtomicGemmConfig.of(config), stream);
    }

    /**
     * As {@link #launch(TensorView, TensorView, BLayout, TensorView, float, float, int, int, Hooks, CudaStream)}
     * with the given configuration (its tile must support {@code layout}, its splits at most K's 64-element steps),
     * e.g. to test or time each one. Split-K grows this object's workspace to what the launch needs (an allocation,
     * once per larger shape).
     */
    public synchronized void launch(TensorView a, TensorView b, BLayout layout, TensorView d, float alpha,
                                    float beta, int chunks, int firstChunk, Hooks hooks, AtomicGemmConfig config,
                                    CudaStream stream) {
        assertOpen();
        validate(a, b, layout, d, alpha, beta, chunks, firstChunk, hooks);
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(stream, "stream");
        int m = (int) a.rows();
        int k = (int) a.cols();
        int n = (int) d.cols();
        if (!config.fits(k)) {
            throw new IllegalArgumentException("split-K " + config.splits() + " needs at least as many K steps of "
                    + TileSchedule.TILE_K + ": K=" + k + " has " + TileSchedule.kSteps(k));
        }
        TileSchedule schedule = new TileSchedule(m, n, chunks, firstChunk, config.tile().tileN(), config.tileM());
        if (config.units(m, n, chunks) > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(config + " makes " + config.units(m, n, chunks)
                    + " work units of " + m + "x" + n + ": the kernel counts them in 32 bits");
        }
        String name = kernelName(a.dtype(), layout, d.dtype(), config);
        context.makeCurrent();
        long function = function(name, config.smemBytes());
        long[] mapA = tensorMap(TensorMapSpec.forA(a.dtype(), a.address(), m, k, a.ld(), config.tileM()));
        int clusterSize = config.schedule().clusterSize();
        long[] mapB = tensorMap(TensorMapSpec.forB(b.dtype(), layout, b.address(), k, n, b.ld(), config.tile(),
                clusterSize));
        long ws = 0;
        long sems = 0;
        if (config.splits() > 1) {
            ws = ensureWorkspace(config.workspaceBytes(m, n, chunks));
            sems = ensureSemaphores(config.semaphores(m, n, chunks), stream);
        }
        long counters = 0;
        if (hooks.doneCounters() != 0) {
            counters = tileCounters.address();
            stream.fill32(counters, 0, chunks);
        }
        if (!errorSlotCleared) {
            stream.fill32(errorSlot.address(), 0, ERROR_SLOT_WORDS);
            errorSlotCleared = true;
        }
        launchId = launchId == -1 ? 1 : launchId + 1; // never 0, the value of a fresh slot
        int grid = clusterSize == 1 ? (int) Math.min(multiprocessors, schedule.totalTiles() * (long) config.splits())
                : schedule.clusterGrid(maxActiveClusters(name, function, clusterSize, config.smemBytes()));
        driver.launch(function, name, grid, THREADS, config.smemBytes(), stream.nativeHandle(),
                mapA, mapB, d.address(), d.ld(), m, n, k, alpha, beta, chunks, firstChunk,
                hooks.arrivalCounters(), hooks.arrivalValue(), hooks.timeout().toNanos(),
                hooks.doneCounters(), hooks.doneValue(), counters, errorSlot.address(),
                config.splits(), ws, sems, launchId);
    }

    private long function(String name, int smemBytes) {
        Long f = functions.get(name);
        if (f == null) {
            f = driver.function(module, name);
            driver.setMaxDynamicSharedMemory(f, smemBytes, name);
            functions.put(name, f);
        }
        return f;
    }

    /**
     * Clusters of the kernel these types and this clustered configuration run that fit on the device at once: half
     * the grid of a launch with enough tile pairs. {@code -Dubuf.atomic.maxClusters=N} replaces the driver's answer
     * (an experiment's knob: clusters beyond those resident wait for a free pair of SMs).
     */
    public synchronized int maxActiveClusters(DType in, BLayout layout, DType out, AtomicGemmConfig config) {
        assertOpen();
        if (config.schedule().clusterSize() == 1) {
            throw new IllegalArgumentException(config + " is not clustered");
        }
        String name = kernelName(in, layout, out, config);
        context.makeCurrent();
        return maxActiveClusters(name, function(name, config.smemBytes()), config.schedule().clusterSize(),
                config.smemBytes());
    }

    /** Clusters of a clustered kernel that fit on the device at once (asked once per kernel). */
    private int maxActiveClusters(String name, long function, int clusterSize, int smemBytes) {
        if (forcedMaxClusters != null) {
            return forcedMaxClusters;
        }
        return maxActiveClusters.computeIfAbsent(name, key -> {
            int c = driver.maxActiveClusters(function, name, clusterSize, THREADS, smemBytes);
            if (c < 1) {
                throw new IllegalStateException(name + ": no cluster of " + clusterSize + " CTAs with " + smemBytes
                        + " bytes of shared memory each fits on " + context.device());
            }
            return c;
        });
    }

    private long[] tensorMap(TensorMapSpec spec) {
        // A kernel argument is copied at launch, so one array may serve every launch with the same map.
        return tensorMaps.computeIfAbsent(spec.key(), key -> driver.encodeTiled(spec));
    }

    private long ensureWorkspace(long bytes) {
        if (workspace == null || workspace.bytes() < bytes) {
            if (workspace != null) {
                retired.add(workspace);
                workspace = null;
            }
            workspace = context.allocate(bytes, "atomic GEMM split-K workspace");
        }
        return workspace.address();
    }

    private long ensureSemaphores(int count, CudaStream stream) {
        if (semaphores == null || semaphores.bytes() < 4L * count) {
            if (semaphores != null) {
                retired.add(semaphores);
                semaphores = null;
            }
            semaphores = context.allocate(4L * count, "atomic GEMM split-K semaphores");
            // Zeroed once on the launch's stream, before the launch; every launch leaves them at 0.
            stream.fill32(semaphores.address(), 0, count);
        }
        return semaphores.address();
    }

    /**
     * What the last launch's error slot says, read after the caller synchronised its stream: empty when every
     * wait was met. {@code peerOfChunk} names who was to deliver a chunk (e.g. {@code c -> "rank " + c}).
     */
    public synchronized Optional<ArrivalTimeoutException> error(IntFunction<String> peerOfChunk) {
        assertOpen();
        int status = context.readInt32(errorSlot.address());
        if (launchId == 0 || status != launchId) {
            return Optional.empty(); // no launch yet, or the slot holds an earlier launch's id (or 0)
        }
        int chunk = context.readInt32(errorSlot.address() + 4);
        int expected = context.readInt32(errorSlot.address() + 8);
        int observed = context.readInt32(errorSlot.address() + 12);
        int block = context.readInt32(errorSlot.address() + 16);
        return Optional.of(new ArrivalTimeoutException("atomic GEMM: the wait for chunk " + chunk
                + " (from " + peerOfChunk.apply(chunk) + ") expired: its arrival counter was "
                + Integer.toUnsignedString(observed) + ", expected at least " + Integer.toUnsignedString(expected)
                + " (CTA " + block + "); the kernel stored no further tiles, so D is incomplete",
                chunk, expected, observed));
    }

    /** Throws the {@link #error} of the last launch, if any (peers named as "the peer that sends chunk c"). */
    public void checkErrors() {
        Optional<ArrivalTimeoutException> e = error(c -> "the peer that sends chunk " + c);
        if (e.isPresent()) {
            throw e.get();
        }
    }

    public CudaContext context() {
        return context;
    }

    /**
     * Frees the split-K workspace and semaphores this object grew (and any it outgrew), so that a large launch does
     * not keep its scratch for the object's whole life; the next split-K launch allocates again. Call it only when
     * the GPU has finished every launch of this object (e.g. after synchronizing their streams).
     */
    public synchronized void releaseScratch() {
        assertOpen();
        closeSplitBuffers();
    }

    private void assertOpen() {
        closer.requireOpen();
    }

    private void closeSplitBuffers() {
        if (workspace != null) {
            retired.add(workspace);
            workspace = null;
        }
        if (semaphores != null) {
            retired.add(semaphores);
            semaphores = null;
        }
        RuntimeException first = null;
        for (DeviceBuffer buffer : retired) {
            try {
                buffer.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        retired.clear();
        if (first != null) {
            throw first;
        }
    }

    @Override
    public synchronized void close() {
        if (closer.isClosed()) {
            return;
        }
        functions.clear();
        tensorMaps.clear();
        closer.close();
    }
}
