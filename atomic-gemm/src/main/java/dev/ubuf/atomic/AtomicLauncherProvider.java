package dev.ubuf.atomic;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.AtomicGemmLauncher;
import dev.ubuf.tensor.TensorView;

import java.time.Duration;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * Runs the plans' {@link dev.ubuf.plan.PlanStep.AtomicGemm} steps on {@link AtomicGemmKernel}: registered for
 * {@link java.util.ServiceLoader} so ubuf core's executor needs no dependency on this module. Opening one loads the
 * sm_90a image into the context and fails with {@link dev.ubuf.cuda.KernelsUnavailableException} on any other GPU.
 */
public final class AtomicLauncherProvider implements AtomicGemmLauncher.Provider {
    /** For {@link java.util.ServiceLoader}. */
    public AtomicLauncherProvider() {
    }

    @Override
    public AtomicGemmLauncher open(CudaContext context) {
        AtomicGemmKernel kernel = AtomicGemmKernel.load(context);
        return new AtomicGemmLauncher() {
            @Override
            public void launch(TensorView a, TensorView b, boolean bTransposed, TensorView c, boolean accumulate,
                               int chunks, int firstChunk, long arrivalCounters, int arrivalValue, Duration timeout,
                               long doneCounters, int doneValue, String tiling, CudaStream stream) {
                AtomicGemmKernel.Hooks hooks = new AtomicGemmKernel.Hooks(arrivalCounters, arrivalValue,
                        arrivalCounters == 0 ? Duration.ZERO : timeout, doneCounters, doneValue);
                BLayout layout = bTransposed ? BLayout.NK : BLayout.KN;
                AtomicGemmConfig config = AtomicGemmConfig.forTiling(tiling, (int) a.rows(), (int) c.cols(),
                        (int) a.cols(), chunks, layout, kernel.multiprocessors());
                kernel.launch(a, b, layout, c, 1f, accumulate ? 1f : 0f, chunks, firstChunk, hooks, config, stream);
            }

            @Override
            public Optional<RuntimeException> error(IntFunction<String> peerOfChunk) {
                return kernel.error(peerOfChunk).map(e -> e);
            }

            @Override
            public void close() {
                kernel.close();
            }
        };
    }
}
