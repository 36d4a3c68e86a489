package dev.ubuf.ag;

import dev.ubuf.op.Collective;
import dev.ubuf.op.MethodOptions;
import dev.ubuf.op.OverlapMethod;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * An AllGather(-GEMM) method of this module: one class implementing {@link #name()} and {@link #plan}, registered
 * in META-INF/services and module-info. It builds the plan of one rank. Matrices: INPUT = the caller's shard
 * [m/tp, k] (absent with {@link AgOptions#inputInUbuf()} or {@link AgShape#inputInUserBuffer()}), UBUF = the gathered input [m, k] (rank r's shard at rows
 * r*m/tp..), WEIGHT [k, n] and OUTPUT [m, n] (absent for bulk).
 *
 * <p>Hand-out contract: after a call joined, UBUF holds the gathered input in natural order and stays valid until
 * the rank's next call starts (e.g. for wgrad). Credits make that safe: at the start of each call a rank tells every
 * rank that writes into its UBUF that it may, and a writer waits for that credit before its first write of the call.
 * So no peer can overwrite the buffer while the caller still reads the previous result.
 *
 * <p>The {@link OverlapMethod} side (options "cs", "ms" and "free", compiling for a shape into an
 * {@link AgSchedule}) is written once here.
 */
public interface AgOverlapMethod extends OverlapMethod {
    /** The plan of rank {@code rank} (0..tp-1); throws IllegalArgumentException when the method cannot run it. */
    Plan plan(AgShape shape, int rank, AgOptions options);

    @Override
    default Collective collective() {
        return Collective.ALL_GATHER;
    }

    @Override
    default SequencedMap<String, String> optionKeys() {
        SequencedMap<String, String> k = new LinkedHashMap<>();
        k.put("cs", "compute streams the GEMM chunks round-robin over, 1.." + AgOptions.MAX_COMPUTE_STREAMS
                + " (default " + AgOptions.defaults().computeStreams() + ")");
        k.put("ms", "comm streams the one-shot and bulk pushes spread over, 1.." + AgOptions.MAX_COMM_STREAMS
                + " (default " + AgOptions.defaults().commStreams() + ")");
        k.put("free", "SMs the GEMMs leave free, so the signal and wait kernels beside them start at once (default "
                + AgOptions.defaults().freeSms() + ")");
        return k;
    }

    /** The typed options a string map stands for. */
    default AgOptions options(Map<String, String> given) {
        MethodOptions o = new MethodOptions(name(), optionKeys(), given);
        AgOptions d = AgOptions.defaults();
        return d.withComputeStreams(o.intValue("cs", d.computeStreams(), 1, AgOptions.MAX_COMPUTE_STREAMS))
                .withCommStreams(o.intValue("ms", d.commStreams(), 1, AgOptions.MAX_COMM_STREAMS))
                .withFreeSms(o.intValue("free", d.freeSms(), 0, 1 << 16));
    }

    @Override
    default Schedule schedule(OverlapShape shape, Map<String, String> options) {
        if (!(shape instanceof AgShape ag)) {
            throw new IllegalArgumentException("ag/" + name() + " needs an AgShape, got " + shape.key());
        }
        return new AgSchedule(this, ag, options(options), options);
    }

    /** Typed form: this method for {@code shape} with {@code options}. */
    default AgSchedule schedule(AgShape shape, AgOptions options) {
        return new AgSchedule(this, shape, options, Map.of());
    }

    /**
     * Compute-stream counts 1, 3 (the default) and 2 where the method runs the shape. One stream comes first, so the
     * planner takes it on a near-tie ({@link dev.ubuf.op.CandidateTimes#NEAR_TIE}): alone the counts time alike, but
     * inside a layer's step chunk GEMMs on several streams run side by side and stretch each other (an 8B, tp 2 layer
     * trace: aggregate's two 4096-row GEMMs took 662 and 1101 us where each takes about 585 alone). Not
     * {@code free=1}, named only: timed as graph replays, as the layers run their ops, it gained 0-3% on one stream
     * and never reached the fastest candidate (8B FP8 on 4 H200s: ring:cs=1 0.3968 ms, with free=1 0.3962, aggregate
     * 0.3743 for fc1; 0.2239, 0.2179 and ring:cs=2 0.2020 for fc2's dgrad).
     */
    @Override
    default List<Map<String, String>> tuningSpace(OverlapShape shape) {
        if (!hasGemm()) {
            return List.of();
        }
        try {
            schedule(shape, Map.of());
        } catch (IllegalArgumentException e) {
            return List.of();
        }
        return List.of(Map.of("cs", "1"), Map.of(), Map.of("cs", "2"));
    }
}
