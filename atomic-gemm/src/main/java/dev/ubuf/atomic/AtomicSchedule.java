package dev.ubuf.atomic;

import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;
import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.IntFunction;

/** An atomic method compiled for one shape: every rank's plan, built and checked to agree on construction. */
record AtomicSchedule(OverlapMethod method, OverlapShape shape, Map<String, String> options, List<Plan> plans)
        implements Schedule {

    AtomicSchedule {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(shape, "shape");
        options = Map.copyOf(options);
        plans = List.copyOf(plans);
    }

    static AtomicSchedule build(OverlapMethod method, OverlapShape shape, Map<String, String> options,
                                IntFunction<Plan> planOfRank) {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape.tp(); r++) {
            plans.add(planOfRank.apply(r));
        }
        Plan.validateDomain(plans);
        return new AtomicSchedule(method, shape, options, plans);
    }

    @Override
    public Plan plan(int rank) {
        if (rank < 0 || rank >= shape.tp()) {
            throw new IllegalArgumentException("rank " + rank + " outside domain of " + shape.tp());
        }
        return plans.get(rank);
    }

    /** What both atomic methods need of a shape (TMA alignment, chunks = ranks); throws naming the problem. */
    static void requireShape(String what, OverlapShape shape, List<DType> inputs) {
        if (shape.tp() < 2) {
            throw new IllegalArgumentException(what + " needs tp >= 2, got " + shape.tp());
        }
        if (shape.tp() > AtomicGemmKernel.MAX_CHUNKS) {
            throw new IllegalArgumentException(what + ": tp=" + shape.tp() + " exceeds " + AtomicGemmKernel.MAX_CHUNKS
                    + " chunks");
        }
        if (shape.fp8().isPresent()) {
            throw new IllegalArgumentException(what + " has no FP8 kernel: the atomic GEMM reads bf16/fp16 operands");
        }
        if (!inputs.contains(shape.dtype())) {
            throw new IllegalArgumentException(what + " runs " + inputs.stream().map(DType::shortName).toList()
                    + " shapes (the atomic GEMM reads bf16/fp16 and writes bf16/fp32), not "
                    + shape.dtype().shortName());
        }
        if (shape.k() % 8 != 0 || shape.n() % 8 != 0) {
            throw new IllegalArgumentException(what + ": k=" + shape.k() + " and n=" + shape.n()
                    + " must be multiples of 8 (TMA needs 16-byte row strides)");
        }
        if (shape.m() > Integer.MAX_VALUE || shape.k() > Integer.MAX_VALUE || shape.n() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + ": m, k and n must be below 2^31");
        }
    }

    /** The reason a device cannot run the atomic methods: anything but compute capability 9.0 (sm_90a). */
    static Optional<String> unsupportedOn(String what, CudaDevice device) {
        return unsupportedOn(what, device.name(), device.computeCapability());
    }

    static Optional<String> unsupportedOn(String what, String deviceName, int cc) {
        if (cc == 90) {
            return Optional.empty();
        }
        return Optional.of(what + " needs an sm_90a GPU (H100/H200, compute capability 9.0) for the atomic GEMM; "
                + deviceName + " has " + cc / 10 + "." + cc % 10);
    }
}
