package dev.ubuf.plan;

import java.util.List;
import java.util.Objects;

/**
 * One step of a plan, issued in list order onto its stream. A stream runs its steps in order; steps on different
 * streams are ordered only by events (same rank) and signals (across ranks).
 */
public sealed interface PlanStep {
    int stream();

    /**
     * c = a * b (+ c when accumulate; + addend when an addend is given). a is rows x K of the left operand, b is
     * K x cols of the right one. With {@code fp8} (null otherwise) a and b are FP8 and dequantized by the caller's
     * scales it names (see {@link Fp8Scaling}); c is never FP8. An {@code addend} (null otherwise) is a region of
     * c's shape, type and row stride read as the GEMM's C operand, so that a sum lands in c with no pass of its own
     * (the last step of a reduce-scatter ring adds the received partial sum this way; cuBLASLt rounds the product to
     * c's 16-bit type before adding it).
     */
    record Gemm(int stream, Region a, Region b, Region c, boolean accumulate, Fp8Scaling fp8, Region addend)
            implements PlanStep {
        public Gemm {
            Objects.requireNonNull(a, "a");
            Objects.requireNonNull(b, "b");
            Objects.requireNonNull(c, "c");
            if (a.cols() != b.rows() || c.rows() != a.rows() || c.cols() != b.cols()) {
                throw new IllegalArgumentException("GEMM shapes disagree: " + a + " x " + b + " -> " + c);
            }
            if (addend != null && (accumulate || addend.rows() != c.rows() || addend.cols() != c.cols())) {
                throw new IllegalArgumentException("a GEMM's addend needs c's shape and no accumulate: " + addend
                        + " + " + a + " x " + b + " -> " + c + (accumulate ? " (accumulate)" : ""));
            }
        }

        /** A GEMM without an addend. */
        public Gemm(int stream, Region a, Region b, Region c, boolean accumulate, Fp8Scaling fp8) {
            this(stream, a, b, c, accumulate, fp8, null);
        }

        /** A GEMM that is not FP8. */
        public Gemm(int stream, Region a, Region b, Region c, boolean accumulate) {
            this(stream, a, b, c, accumulate, null, null);
        }

        public boolean isFp8() {
            return fp8 != null;
        }

        /** This step on another stream (same operands, same scaling). */
        public Gemm onStream(int s) {
            return new Gemm(s, a, b, c, accumulate, fp8, addend);
        }

        /** This step with its result kept on {@code rank} (the same region of its own buffer) where it wrote a peer's. */
        public Gemm writingLocally(int rank) {
            return c.rank() == rank ? this : new Gemm(stream, a, b,
                    new Region(c.buffer(), rank, c.row(), c.rows(), c.col(), c.cols()), accumulate, fp8, addend);
        }
    }

    /** Copy src to dst (same shape). dst may be a peer's user buffer: the copy engine moves it over NVLink. */
    record Copy(int stream, Region src, Region dst) implements PlanStep {
        public Copy {
            if (!src.sameShape(dst)) {
                throw new IllegalArgumentException("copy shapes disagree: " + src + " -> " + dst);
            }
        }
    }

    /**
     * After every earlier step of this stream has completed, raise {@code peer}'s flag {@code flag} by one.
     * Each (peer, flag) pair has exactly one sender, so the sender can write absolute sequence numbers.
     */
    record Signal(int stream, int peer, int flag) implements PlanStep {
    }

    /**
     * Block this stream until this rank's flag {@code flag} has received {@code count} signals in the current call
     * (count 0 means: every signal of all earlier calls, which is how credits from the previous call are awaited).
     */
    record WaitSignal(int stream, int flag, int count) implements PlanStep {
        public WaitSignal {
            if (count < 0) {
                throw new IllegalArgumentException("negative wait count " + count);
            }
        }
    }

    /** dst = (dst when accumulate) + sum of sources, in fp32, rounded once. Sources may be peers' user buffers. */
    record Reduce(int stream, List<Region> sources, Region dst, boolean accumulate) implements PlanStep {
        public Reduce {
            sources = List.copyOf(sources);
            if (sources.isEmpty() || sources.size() > 8) {
                throw new IllegalArgumentException("reduce takes 1..8 sources, got " + sources.size());
            }
            for (Region s : sources) {
                if (!s.sameShape(dst)) {
                    throw new IllegalArgumentException("reduce shapes disagree: " + s + " -> " + dst);
                }
            }
        }
    }

    /** Record event {@code event} on this stream (each event is recorded once per plan). */
    record RecordEvent(int stream, int event) implements PlanStep {
    }

    /** Make this stream wait for event {@code event}, recorded earlier in the plan's list. */
    record WaitEvent(int stream, int event) implements PlanStep {
    }

    /** dst[i][j] += bias[j]: the bias of a row-parallel layer, added once after the reduction. */
    record AddBias(int stream, Region dst) implements PlanStep {
    }

    /**
     * dst = fp8(src * scale): the op's FP8 output, quantized from its wide type with the per-tensor scale the caller
     * binds (Transformer Engine's scale of the output), rounded to nearest even and saturated; the call also raises
     * the caller's amax to max |src| and writes 1 / scale as the output's scale_inv, when those are bound.
     */
    record Quantize(int stream, Region src, Region dst) implements PlanStep {
        public Quantize {
            Objects.requireNonNull(src, "src");
            Objects.requireNonNull(dst, "dst");
            if (!src.sameShape(dst)) {
                throw new IllegalArgumentException("quantize shapes disagree: " + src + " -> " + dst);
            }
        }
    }

    /**
     * c = a * b (+ c when accumulate) as ONE launch of a tile-synchronised GEMM (the atomic GEMM of the atomic-gemm
     * module, run through an {@link dev.ubuf.exec.AtomicGemmLauncher}): the rows of a and c split into
     * {@code chunks} equal chunks, visited firstChunk, firstChunk + 1, ... (mod chunks). With {@code arrivalFlag}
     * &gt;= 0, chunk i reads a only once this rank's flag {@code arrivalFlag + i} has received its one signal of
     * the call (a {@link WaitSignal} of count 1 per chunk, each such flag receiving one signal per call). With
     * {@code doneFlag} &gt;= 0, chunk i, once written, raises this rank's own flag {@code doneFlag + i} (a
     * {@link Signal} to this rank, its only sender). Chunks are not ordered among themselves: the host executor
     * runs them as concurrent pieces, so a plan may rely only on the per-chunk flags. {@code kernel} names the
     * kernel's tiling as its method's {@code kernel} option does ({@link #AUTO_KERNEL}: the launcher's own rule); the
     * core passes it to the launcher unread.
     */
    record AtomicGemm(int stream, Region a, Region b, Region c, boolean accumulate, int chunks, int firstChunk,
                      int arrivalFlag, int doneFlag, String kernel) implements PlanStep {
        /** The launcher chooses the kernel's tiling for the shape. */
        public static final String AUTO_KERNEL = "auto";

        public AtomicGemm {
            Objects.requireNonNull(a, "a");
            Objects.requireNonNull(b, "b");
            Objects.requireNonNull(c, "c");
            Objects.requireNonNull(kernel, "kernel");
            if (kernel.isBlank()) {
                throw new IllegalArgumentException("atomic GEMM: the kernel is blank (auto or a tiling the launcher"
                        + " knows)");
            }
            if (a.cols() != b.rows() || c.rows() != a.rows() || c.cols() != b.cols()) {
                throw new IllegalArgumentException("atomic GEMM shapes disagree: " + a + " x " + b + " -> " + c);
            }
            if (chunks < 1 || a.rows() % chunks != 0) {
                throw new IllegalArgumentException("atomic GEMM: " + a.rows() + " rows do not split into " + chunks
                        + " equal chunks");
            }
            if (firstChunk < 0 || firstChunk >= chunks) {
                throw new IllegalArgumentException("atomic GEMM: first chunk " + firstChunk + " outside 0.."
                        + (chunks - 1));
            }
            if (arrivalFlag < -1 || doneFlag < -1) {
                throw new IllegalArgumentException("atomic GEMM: flags are -1 (none) or a first flag index");
            }
        }

        /** The product with the launcher's own choice of tiling ({@link #AUTO_KERNEL}). */
        public AtomicGemm(int stream, Region a, Region b, Region c, boolean accumulate, int chunks, int firstChunk,
                          int arrivalFlag, int doneFlag) {
            this(stream, a, b, c, accumulate, chunks, firstChunk, arrivalFlag, doneFlag, AUTO_KERNEL);
        }

        public long chunkRows() {
            return a.rows() / chunks;
        }

        /** The i-th chunk visited (i = 0..chunks-1). */
        public int chunkAt(int i) {
            return (firstChunk + i) % chunks;
        }

        public Region aChunk(int chunk) {
            return new Region(a.buffer(), a.rank(), a.row() + chunk * chunkRows(), chunkRows(), a.col(), a.cols());
        }

        public Region cChunk(int chunk) {
            return new Region(c.buffer(), c.rank(), c.row() + chunk * chunkRows(), chunkRows(), c.col(), c.cols());
        }

        /** The same product with no flags (a plain launch), on {@code stream}. */
        public AtomicGemm withoutFlags(int stream) {
            return new AtomicGemm(stream, a, b, c, accumulate, chunks, firstChunk, -1, -1, kernel);
        }
    }
}
