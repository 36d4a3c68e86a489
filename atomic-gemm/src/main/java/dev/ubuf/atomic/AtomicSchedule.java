package dev.ubuf.atomic;

import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.op.MethodOptionException;
import dev.ubuf.op.MethodOptions;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;
import dev.ubuf.plan.PlanStep;
import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedMap;
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

    /** Both atomic methods' one option: the GEMM kernel's tiling. */
    static final String KERNEL = "kernel";

    /** Both atomic methods' options. */
    static SequencedMap<String, String> optionKeys() {
        SequencedMap<String, String> keys = new LinkedHashMap<>();
        keys.put(KERNEL, "the atomic GEMM's tiling: auto (default; 64-row ping-pong tiles up to K = 4096, 128-row"
                + " tiles in 2-CTA clusters beyond), pingpong, cooperative (128-row tiles, split-K where the rule"
                + " splits) or cooperative-cluster");
        return keys;
    }

    /**
     * The {@code kernel} option as a plan step names it ({@link PlanStep.AtomicGemm#kernel}): auto, or
     * {@link AtomicGemmConfig.Schedule#optionName}. Checks every key first.
     */
    static String kernel(OverlapMethod method, Map<String, String> options) {
        new MethodOptions(method.name(), method.optionKeys(), options);
        String v = options.get(KERNEL);
        if (v == null || v.trim().toLowerCase(Locale.ROOT).equals(PlanStep.AtomicGemm.AUTO_KERNEL)) {
            return PlanStep.AtomicGemm.AUTO_KERNEL;
        }
        try {
            return AtomicGemmConfig.Schedule.parse(v.trim()).optionName();
        } catch (IllegalArgumentException e) {
            throw new MethodOptionException("method '" + method.name() + "' option " + KERNEL + "=" + v
                    + " must be auto, pingpong, cooperative or cooperative-cluster");
        }
    }

    /**
     * The planner's candidates: none beyond two ranks (see the methods), the defaults, and where the rule takes
     * clustered tiles (more than {@link AtomicGemmConfig#PINGPONG_MAX_K_STEPS} K steps) also the ping-pong tiles. The
     * rule was made on an H100, where the ping-pong fell to 0.80-0.87 of cuBLASLt on the longest GEMMs; on an H200 the
     * ping-pong was ahead on 8 of the 11 sweep shapes with K > 4096, by up to 0.072 of cuBLASLt (16384x5120x8192:
     * 1.030 against 0.959; bench/results/2026-11-29-session36/call2-2bf03c3-h200), so which one wins is the
     * device's to say.
     */
    static List<Map<String, String>> tuningSpace(OverlapMethod method, OverlapShape shape) {
        if (shape.tp() > 2) {
            return List.of();
        }
        try {
            method.schedule(shape, Map.of());
        } catch (IllegalArgumentException e) {
            return List.of();
        }
        if (TileSchedule.kSteps((int) shape.k()) <= AtomicGemmConfig.PINGPONG_MAX_K_STEPS) {
            return List.of(Map.of());
        }
        return List.of(Map.of(), Map.of(KERNEL, AtomicGemmConfig.Schedule.PINGPONG.optionName()));
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
