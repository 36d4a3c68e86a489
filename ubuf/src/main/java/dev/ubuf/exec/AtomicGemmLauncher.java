package dev.ubuf.exec;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.TensorView;

import java.time.Duration;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * The executor's extension point for {@link dev.ubuf.plan.PlanStep.AtomicGemm}: one launch of a tile-synchronised
 * GEMM whose chunks wait on arrival counters and raise done counters. ubuf core has no such kernel; a module that
 * has one (atomic-gemm) registers a {@link Provider} for {@link java.util.ServiceLoader}, and the
 * {@link CudaPlanExecutor} of a plan with an atomic GEMM step opens one launcher per executor.
 */
public interface AtomicGemmLauncher extends AutoCloseable {

    /** Registered in {@code META-INF/services/dev.ubuf.exec.AtomicGemmLauncher$Provider} (and module-info). */
    interface Provider {
        /**
         * A launcher for {@code context}. Throws {@link dev.ubuf.cuda.KernelsUnavailableException} with a message
         * naming the reason when this GPU cannot run it (e.g. not sm_90a).
         */
        AtomicGemmLauncher open(CudaContext context);
    }

    /**
     * Enqueues {@code c = a * b (+ c)} on {@code stream} in {@code chunks} row chunks visited from
     * {@code firstChunk}; b is [K, N], or stored [N, K] when {@code bTransposed}. Counters are uint32 arrays of
     * one word per chunk in device memory (0: none): chunk i reads a once {@code arrival[i]} reaches
     * {@code arrivalValue} (wrap-safe), giving up after {@code timeout}; the last tile of chunk i stores
     * {@code doneValue} into {@code done[i]}. {@code kernel}: the plan step's tiling
     * ({@link dev.ubuf.plan.PlanStep.AtomicGemm#kernel}), "auto" for the launcher's own rule. Nothing is captured
     * into a CUDA graph safely: the values are baked.
     */
    void launch(TensorView a, TensorView b, boolean bTransposed, TensorView c, boolean accumulate, int chunks,
                int firstChunk, long arrivalCounters, int arrivalValue, Duration timeout, long doneCounters,
                int doneValue, String kernel, CudaStream stream);

    /**
     * After the launch's stream completed (or while a report is being written): the expired wait of the last
     * launch, if any, naming the chunk and {@code peerOfChunk.apply(chunk)}. Empty while the launch still runs.
     */
    Optional<RuntimeException> error(IntFunction<String> peerOfChunk);

    @Override
    void close();
}
