package dev.ubuf.op;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.exec.DequantScales;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.exec.OutputScaling;
import dev.ubuf.devicekernels.Fp8Kernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;

/**
 * Device operands for one rank of an overlapped GEMM of a given shape (input, weight, output and bias where the shape
 * has one), filled with device-random values: what the planner's tuning and the benchmarks run on. Owns the buffers.
 */
public final class OperandBuffers implements AutoCloseable {
    private final List<DeviceBuffer> owned = new ArrayList<>();
    private final OperandBindings bindings;
    private final OverlapShape shape;
    /** This rank's random input, also where the shape takes its input from the op's user buffer. */
    private final TensorView input;

    /**
     * @param seed random seed of this rank's input (the weight uses seed + 1, the bias seed + 2)
     */
    public OperandBuffers(CudaContext ctx, DeviceKernels kernels, OverlapShape shape, long seed, CudaStream stream) {
        this.shape = shape;
        try {
            OperandBindings b = shape.fp8().isPresent() ? fp8(ctx, kernels, shape, seed, stream)
                    : wide(ctx, kernels, shape, seed, stream);
            if (shape.fp8Output().isPresent()) {
                // Scale 1: the random sums stay well inside E4M3's and E5M2's range.
                TensorView scale = matrix(ctx, 1, 1, DType.FP32);
                kernels.fillBits(scale, Float.floatToRawIntBits(1f), stream);
                TensorView amax = matrix(ctx, 1, 1, DType.FP32);
                kernels.fillBits(amax, 0, stream);
                b = b.withOutputScaling(new OutputScaling(scale, amax, matrix(ctx, 1, 1, DType.FP32)));
            }
            this.input = b.input();
            if (shape.inputInUserBuffer()) {
                // The op reads this rank's shard from its user buffer: fillUserBuffer puts the input there.
                b = new OperandBindings(null, b.weight(), b.weightTransposed(), b.output(), b.bias(), b.scales(),
                        b.outputScaling());
            }
            this.bindings = b;
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private OperandBindings wide(CudaContext ctx, DeviceKernels kernels, OverlapShape shape, long seed,
                                 CudaStream stream) {
        TensorView x = matrix(ctx, shape.inputRows(), shape.k(), shape);
        kernels.fillRandom(x, seed, 1f, stream);
        TensorView w = matrix(ctx, shape.k(), shape.n(), shape);
        kernels.fillRandom(w, seed + 1, 1f / (float) Math.sqrt(shape.k()), stream);
        TensorView out = matrix(ctx, shape.outputRows(), shape.n(), shape.outputDtype());
        kernels.poison(out, stream);
        TensorView bias = null;
        if (shape.bias()) {
            bias = matrix(ctx, 1, shape.n(), shape);
            kernels.fillRandom(bias, seed + 2, 1f, stream);
        }
        return OperandBindings.of(x, w).withOutput(out).withBias(bias);
    }

    private TensorView matrix(CudaContext ctx, long rows, long cols, OverlapShape shape) {
        return matrix(ctx, rows, cols, shape.dtype());
    }

    private TensorView matrix(CudaContext ctx, long rows, long cols, DType type) {
        DeviceBuffer b = ctx.allocate(rows * cols * type.bytes());
        owned.add(b);
        return TensorView.of(b, rows, cols, type);
    }

    /**
     * An FP8 op's operands: random values in the output's type quantized (scale 1) into the FP8 input [rows, k] and
     * weight [n, k] (the NT layout), dequantization scales of 1, a poisoned output.
     */
    private OperandBindings fp8(CudaContext ctx, DeviceKernels kernels, OverlapShape shape, long seed,
                                CudaStream stream) {
        Fp8Kernels q = new Fp8Kernels(kernels.library());
        TensorView one = matrix(ctx, 1, 1, DType.FP32);
        kernels.fillBits(one, Float.floatToRawIntBits(1f), stream);
        TensorView xHigh = matrix(ctx, shape.inputRows(), shape.k(), shape.dtype());
        kernels.fillRandom(xHigh, seed, 1f, stream);
        TensorView x = matrix(ctx, shape.inputRows(), shape.k(), shape.inputDtype());
        q.quantize(xHigh, one, x, null, null, stream);
        TensorView wHigh = matrix(ctx, shape.n(), shape.k(), shape.dtype());
        kernels.fillRandom(wHigh, seed + 1, 1f, stream);
        TensorView w = matrix(ctx, shape.n(), shape.k(), shape.weightDtype());
        q.quantize(wHigh, one, w, null, null, stream);
        TensorView out = matrix(ctx, shape.outputRows(), shape.n(), shape.outputDtype());
        kernels.poison(out, stream);
        TensorView bias = null;
        if (shape.bias()) {
            bias = matrix(ctx, 1, shape.n(), shape.dtype());
            kernels.fillRandom(bias, seed + 2, 1f, stream);
        }
        return OperandBindings.of(x, w).withWeightTransposed().withOutput(out).withBias(bias)
                .withScales(new DequantScales(one, one));
    }

    public OperandBindings bindings() {
        return bindings;
    }

    /**
     * Where the shape takes its input from the op's user buffer: copies this rank's random input into {@code op}'s
     * shard of it ({@link OverlapOp#inputChunk()}), so that the op is measured on values and not on a fresh buffer's
     * zeros, over which GEMMs run faster (9% on an H200 at 8B dims). Nothing for other shapes.
     */
    public void fillUserBuffer(OverlapOp op, CudaStream stream) {
        if (!shape.inputInUserBuffer()) {
            return;
        }
        TensorView dst = op.inputChunk();
        dst.requireShape(input.rows(), input.cols(), shape.key() + " input chunk");
        long bytes = input.dtype().bytes();
        stream.copy2d(dst.address(), dst.ld() * bytes, input.address(), input.ld() * bytes, input.cols() * bytes,
                input.rows());
    }

    /** The operands a method takes: a bulk AG only the input, a bulk RS only the output (and bias). */
    public OperandBindings forMethod(boolean hasGemm, Collective c) {
        if (hasGemm) {
            return bindings;
        }
        return c == Collective.ALL_GATHER ? OperandBindings.inputOnly(bindings.input())
                : OperandBindings.outputOnly(bindings.output()).withBias(bindings.bias())
                .withOutputScaling(bindings.outputScaling());
    }

    @Override
    public void close() {
        for (int i = owned.size() - 1; i >= 0; i--) {
            owned.get(i).close();
        }
        owned.clear();
    }
}
