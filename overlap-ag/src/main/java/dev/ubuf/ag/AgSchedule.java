package dev.ubuf.ag;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * An AG method compiled for one shape, with its typed options ({@code agOptions}) and the string options they came
 * from ({@code options}, empty for the typed form): validated on construction (every rank's plan is built and
 * checked to agree), so a schedule that exists can run.
 */
public record AgSchedule(AgOverlapMethod method, AgShape shape, AgOptions agOptions, Map<String, String> options,
                          List<Plan> plans) implements Schedule {

    public AgSchedule(AgOverlapMethod method, AgShape shape, AgOptions agOptions, Map<String, String> options) {
        this(method, shape, agOptions, options, AgPlans.domain(method, shape, agOptions));
    }

    public AgSchedule {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(shape, "shape");
        options = Map.copyOf(options);
        plans = List.copyOf(plans);
    }

    /**
     * With {@link AgOptions#freeSms()} the GEMMs leave that many SMs (at most half) to the signal and wait kernels;
     * a caller's own GEMM budget is kept.
     */
    @Override
    public ExecutionSettings settings(ExecutionSettings base, int smCount) {
        int free = agOptions.freeSms();
        return base.leavingSmsFree(free, smCount, label() + ": free=" + free);
    }

    @Override
    public Plan plan(int rank) {
        if (rank < 0 || rank >= shape.tp()) {
            throw new IllegalArgumentException("rank " + rank + " outside domain of " + shape.tp());
        }
        return plans.get(rank);
    }
}
