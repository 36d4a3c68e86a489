package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.layers.config.GemmName;
import dev.ubuf.op.OverlapOp;

/**
 * One call of a layer GEMM's overlapped op with its operands, handed to the context's {@link Collectives}, which
 * decides how it runs.
 */
public final class OverlapCall {
    private final GemmName gemm;
    private final OverlapOp op;
    private final OperandBindings operands;

    OverlapCall(GemmName gemm, OverlapOp op, OperandBindings operands) {
        this.gemm = gemm;
        this.op = op;
        this.operands = operands;
    }

    /** The layer GEMM this call is for. */
    public GemmName gemm() {
        return gemm;
    }

    public OverlapOp op() {
        return op;
    }

    /** False for a bulk collective called without a weight: it moves data and multiplies nothing. */
    public boolean hasGemm() {
        return operands.weight() != null;
    }

    /** Issues the call with its communication on {@code stream}. */
    public void forward(CudaStream stream) {
        op.forward(operands, stream);
    }

    /** Issues the op's GEMMs alone on {@code stream}, no communication: the outputs are not the op's result. */
    public void forwardGemmsOnly(CudaStream stream) {
        op.forwardGemmsOnly(operands, stream);
    }
}
