package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodOptions;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * A GEMM→ReduceScatter method of this module. A method is one class implementing this interface ({@link #name()},
 * the keys it reads, {@link #whyUnsupported} and {@link #plan}), registered in META-INF/services and module-info;
 * the {@link OverlapMethod} side is written once here: the option keys (a subset of {@link #ALL_KEYS}), their
 * parsing into {@link RsOptions}, and compiling into an {@link RsSchedule}.
 */
public interface RsOverlapMethod extends OverlapMethod {
    /** Every RS option key, in the order they are listed, with what it sets and its default. */
    SequencedMap<String, String> ALL_KEYS = allKeys();

    /** The keys of {@link #ALL_KEYS} this method reads. */
    List<String> keys();

    /** Why this method cannot run {@code shape} with {@code options}, or empty when it can. */
    Optional<String> whyUnsupported(RsShape shape, RsOptions options);

    /**
     * The plan of rank {@code rank} (0..tp-1) for a shape and options this method supports (made through
     * {@link RsSchedule}, which checks {@link #whyUnsupported} first).
     */
    Plan plan(RsShape shape, RsOptions options, int rank);

    @Override
    default Collective collective() {
        return Collective.REDUCE_SCATTER;
    }

    @Override
    default SequencedMap<String, String> optionKeys() {
        SequencedMap<String, String> k = new LinkedHashMap<>();
        for (String key : keys()) {
            k.put(key, ALL_KEYS.get(key));
        }
        return k;
    }

    /** The typed options a string map stands for (absent keys: {@link RsOptions#DEFAULTS}). */
    default RsOptions options(RsShape shape, Map<String, String> given) {
        MethodOptions o = new MethodOptions(name(), optionKeys(), given);
        RsOptions d = RsOptions.DEFAULTS;
        return d.withComputeStreams(o.intValue("cs", d.computeStreams(), 1, 3))
                .withNumSplits(o.intValue("splits", d.numSplits(), 1, 1 << 20))
                .withGemmSmMargin(o.intValue("margin", d.gemmSmMargin(), 0, 1 << 16))
                .withRingSubChunks(o.intValue("sub", d.ringSubChunks(), 1, 1 << 20))
                .withRingSlots(o.intValue("slots", d.ringSlots(), 2, 1 << 10))
                .withRingPartialDtype(o.boolValue("lowp", false) ? shape.dtype() : d.ringPartialDtype())
                .withRingBidirectional(o.boolValue("bidir", d.ringBidirectional()))
                .withBulkStaged(o.boolValue("stage", d.bulkStaged()))
                .withPushCtas(o.intValue("sm", d.pushCtas(), 0, 64))
                .withSerialPushes(o.boolValue("serial", d.serialPushes()))
                .withRingFusedTail(o.boolValue("fuse", d.ringFusedTail()))
                .withRingDirect(o.boolValue("direct", d.ringDirect()))
                .withFreeSms(o.intValue("free", d.freeSms(), 0, 1 << 16))
                .withOwnPieces(o.intValue("tail", d.ownPieces(), 1, 1 << 20));
    }

    @Override
    default Schedule schedule(OverlapShape shape, Map<String, String> options) {
        if (!(shape instanceof RsShape rs)) {
            throw new IllegalArgumentException("rs/" + name() + " needs an RsShape, got " + shape.key());
        }
        return new RsSchedule(this, rs, options(rs, options), options);
    }

    /** Typed form: this method for {@code shape} with {@code options}. */
    default RsSchedule schedule(RsShape shape, RsOptions options) {
        return new RsSchedule(this, shape, options, Map.of());
    }

    /** How the executor runs a schedule of this method; the default leaves the caller's settings. */
    default ExecutionSettings settings(RsSchedule schedule, ExecutionSettings base, int smCount) {
        return base;
    }

    private static SequencedMap<String, String> allKeys() {
        RsOptions d = RsOptions.DEFAULTS;
        SequencedMap<String, String> k = new LinkedHashMap<>();
        k.put("cs", "compute streams the GEMMs round-robin over, 1..3 (default " + d.computeStreams() + ")");
        k.put("splits", "pipeline: column blocks of the GEMM, must divide n (default " + d.numSplits() + ")");
        k.put("margin", "pipeline: SMs kept free of the GEMMs for the reduce kernel (default " + d.gemmSmMargin() + ")");
        k.put("sub", "ring, scatter: row sub-chunks per step, at most m/tp (default " + d.ringSubChunks() + ")");
        k.put("tail", "scatter: row pieces of the own step's GEMM and reduction, at most m/tp (default: as sub)");
        k.put("slots", "ring: receive slots, at least 2 (default " + d.ringSlots() + ")");
        k.put("lowp", "ring, scatter: 1 = partial sums travel in the op's dtype, 0 = in fp32 (default 0)");
        k.put("bidir", "ring: 1 = half of each chunk's rows goes each way round the ring (default 0)");
        k.put("fuse", "ring with lowp=1: 1 = the last step's GEMM adds the received sum as its C operand, no"
                + " reduction pass after it; scatter with lowp=1: 1 = the own GEMM adds the partial that arrives first"
                + " as its C operand, one source fewer for the reduction (default 0)");
        k.put("direct", "ring with lowp=1: 1 = each GEMM writes its running sum straight into the next rank's slot"
                + " (no copy, no reduction pass; the last GEMM adds the received sum) (default 0)");
        k.put("free", "ring, scatter: SMs the GEMMs leave free, so the signal and wait kernels beside them start at"
                + " once (default " + d.freeSms() + ")");
        k.put("stage", "bulk: 1 = copies pull the peers' rows into a local scratch, then a local sum (default 0)");
        k.put("sm", "scatter: 0 = pushes on the copy engines, C = an SM copy kernel of C blocks per push, the GEMMs"
                + " leaving C SMs per peer (default " + d.pushCtas() + ")");
        k.put("serial", "scatter, bulk with stage=1: 1 = every push (pull) on one copy stream, one peer at a time,"
                + " 0 = a stream per peer (default 0)");
        return java.util.Collections.unmodifiableSequencedMap(k);
    }
}
