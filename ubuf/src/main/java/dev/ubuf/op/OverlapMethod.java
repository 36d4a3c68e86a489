package dev.ubuf.op;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * One overlap method (ring exchange, pipelined split, bulk, one-shot, ...): the seam through which any module adds
 * a method. An implementation is one class in its module, registered for {@link java.util.ServiceLoader} in
 * {@code META-INF/services/dev.ubuf.op.OverlapMethod}; {@link MethodRegistry} finds it and the {@link Planner}
 * considers it for every shape of its collective.
 */
public interface OverlapMethod {
    /** The name of plans, results files, command lines and layer configs: "ring", "pipeline", ... */
    String name();

    Collective collective();

    /** False for a method that only moves data (bulk): it takes no weight and is never planned for a GEMM. */
    default boolean hasGemm() {
        return true;
    }

    /** The option keys this method reads, in a stable order, each with a one-line description and its default. */
    SequencedMap<String, String> optionKeys();

    /**
     * This method compiled for {@code shape} with {@code options} (keys of {@link #optionKeys()}, absent ones take
     * their defaults). Throws IllegalArgumentException naming the problem when the method cannot run it.
     */
    Schedule schedule(OverlapShape shape, Map<String, String> options);

    /**
     * The option sets the planner should measure for this shape, each one valid for it; empty when the method
     * cannot run the shape at all. The default is the defaults alone.
     */
    default List<Map<String, String>> tuningSpace(OverlapShape shape) {
        try {
            schedule(shape, Map.of());
            return List.of(Map.of());
        } catch (IllegalArgumentException e) {
            return List.of();
        }
    }

    /**
     * Why this method cannot run on {@code device} at all (e.g. a kernel only some GPUs have), or empty when it can.
     * The planner skips such a method, with this reason, instead of measuring it.
     */
    default Optional<String> unsupportedOn(dev.ubuf.cuda.CudaDevice device) {
        return Optional.empty();
    }
}
