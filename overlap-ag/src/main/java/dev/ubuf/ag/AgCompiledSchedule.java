package dev.ubuf.ag;

import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * An AG method compiled for one shape: validated on construction (every rank's plan is built and checked to agree),
 * so a schedule that exists can run.
 */
record AgCompiledSchedule(AgSchedule method, AgShape shape, AgOptions agOptions, Map<String, String> options,
                          List<Plan> plans) implements Schedule {

    AgCompiledSchedule(AgSchedule method, AgShape shape, AgOptions agOptions, Map<String, String> options) {
        this(method, shape, agOptions, options, AgPlans.domain(method, shape, agOptions));
    }

    AgCompiledSchedule {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(shape, "shape");
        options = Map.copyOf(options);
        plans = List.copyOf(plans);
    }

    @Override
    public Plan plan(int rank) {
        if (rank < 0 || rank >= shape.tp()) {
            throw new IllegalArgumentException("rank " + rank + " outside domain of " + shape.tp());
        }
        return plans.get(rank);
    }
}
