package dev.ubuf.rs;

import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.op.Schedule;
import dev.ubuf.plan.Plan;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/** An RS method compiled for one shape: its {@link RsSchedule} and the string options it was made from. */
record RsCompiledSchedule(RsOverlapMethod method, RsSchedule schedule, Map<String, String> options)
        implements Schedule {

    RsCompiledSchedule {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(schedule, "schedule");
        options = Map.copyOf(options);
    }

    @Override
    public RsShape shape() {
        return schedule.shape();
    }

    @Override
    public Plan plan(int rank) {
        return schedule.plan(rank);
    }

    @Override
    public List<Plan> plans() {
        return schedule.plans();
    }

    @Override
    public ExecutionSettings settings(ExecutionSettings base, int smCount) {
        return method.settings(schedule, base, smCount);
    }
}
