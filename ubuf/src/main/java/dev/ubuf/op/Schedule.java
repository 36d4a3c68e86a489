package dev.ubuf.op;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.plan.Plan;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One method compiled for one shape and one set of options: the plans of every rank of the domain. Making a schedule
 * validates shape and options against the method; {@link #plan(int)} is then pure arithmetic, so the same plans run
 * on the GPU and on the host executor in CPU tests.
 */
public interface Schedule {
    OverlapMethod method();

    OverlapShape shape();

    /** The options this schedule was made with (keys of {@link OverlapMethod#optionKeys()}), as given. */
    Map<String, String> options();

    /** The plan of rank {@code rank} (0..tp-1). */
    Plan plan(int rank);

    /** The plans of all ranks, checked to agree on every flag ({@link Plan#validateDomain}). */
    default List<Plan> plans() {
        List<Plan> plans = new ArrayList<>();
        for (int r = 0; r < shape().tp(); r++) {
            plans.add(plan(r));
        }
        Plan.validateDomain(plans);
        return List.copyOf(plans);
    }

    /** How the executor should run it, given the caller's settings and this GPU's SM count (e.g. an SM budget). */
    default ExecutionSettings settings(ExecutionSettings base, int smCount) {
        return base;
    }

    /** "ring" or "ring:cs=2,sub=4": the method name with the options given, in the method's key order. */
    default String label() {
        if (options().isEmpty()) {
            return method().name();
        }
        return method().name() + ":" + method().optionKeys().keySet().stream().filter(options()::containsKey)
                .map(k -> k + "=" + options().get(k)).collect(Collectors.joining(","));
    }
}
