package dev.ubuf.exec;

/**
 * How a plan's steps are carried out on the GPU (not what they are).
 *
 * @param useCopyEngine  copies on the copy engines (cuMemcpyAsync), else by an SM copy kernel (TE's use_ce=false)
 * @param smCopyCtas     thread blocks of the SM copy kernel when useCopyEngine is false
 * @param gemmSmBudget   SM_COUNT_TARGET for the plan's GEMMs, 0 for the whole GPU (pipelined RS leaves SMs to the
 *                       reduce kernel)
 * @param graphSafe      signal and wait with one-thread kernels reading a device epoch instead of stream memory
 *                       operations with host sequence numbers, so the op can be captured in a CUDA graph and replayed
 */
public record ExecutionSettings(boolean useCopyEngine, int smCopyCtas, int gemmSmBudget, boolean graphSafe) {
    public static final ExecutionSettings DEFAULT = new ExecutionSettings(true, 16, 0, false);

    public ExecutionSettings {
        if (smCopyCtas < 1 || gemmSmBudget < 0) {
            throw new IllegalArgumentException("smCopyCtas must be >= 1 and gemmSmBudget >= 0");
        }
    }

    public ExecutionSettings withCopyEngine(boolean ce) {
        return new ExecutionSettings(ce, smCopyCtas, gemmSmBudget, graphSafe);
    }

    public ExecutionSettings withSmCopyCtas(int ctas) {
        return new ExecutionSettings(useCopyEngine, ctas, gemmSmBudget, graphSafe);
    }

    public ExecutionSettings withGemmSmBudget(int sms) {
        return new ExecutionSettings(useCopyEngine, smCopyCtas, sms, graphSafe);
    }

    public ExecutionSettings withGraphSafe(boolean safe) {
        return new ExecutionSettings(useCopyEngine, smCopyCtas, gemmSmBudget, safe);
    }

    /**
     * These settings with the GEMMs leaving {@code sms} of the GPU's {@code smCount} SMs free, at most half; a GEMM
     * budget already set is kept. {@code taker} names what takes them, for the message (a schedule's label and its
     * options).
     */
    public ExecutionSettings leavingSmsFree(int sms, int smCount, String taker) {
        if (sms == 0) {
            return this;
        }
        if (2 * sms > smCount) {
            throw new IllegalArgumentException(taker + " would take " + sms + " of this GPU's " + smCount
                    + " SMs from the GEMMs, more than half; choose fewer");
        }
        return gemmSmBudget != 0 ? this : withGemmSmBudget(smCount - sms);
    }
}
