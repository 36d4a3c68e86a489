package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.devicekernels.DeviceKernels;

import java.util.Optional;

/**
 * One way the planner may run a shape: a method's schedule with options, or (no schedule) the NCCL reference.
 *
 * @param label the schedule's label ("ring:sub=4"), or "nccl"
 */
public record Candidate(String label, Optional<Schedule> schedule) {
    public static final String NCCL = "nccl";

    public static Candidate nccl() {
        return new Candidate(NCCL, Optional.empty());
    }

    public static Candidate of(Schedule s) {
        return new Candidate(s.label(), Optional.of(s));
    }

    public boolean isNccl() {
        return schedule.isEmpty();
    }

    /** Makes the op (collective over the domain). */
    public OverlapOp create(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, ExecutionSettings exec) {
        return schedule.map(s -> OverlapOp.create(comm, s, kernels, exec))
                .orElseGet(() -> OverlapOp.ncclReference(comm, shape, kernels));
    }
}
