package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.devicekernels.DeviceKernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One way the planner may run a shape: a method's schedule with options, or (no schedule) NCCL: the reference, or
 * its reduce-scatter pipelined in column blocks ({@code nccl:splits=S[,margin=M]}).
 *
 * @param label the schedule's label ("ring:sub=4"), "nccl" or "nccl:splits=S[,margin=M]"
 */
public record Candidate(String label, Optional<Schedule> schedule) {
    public static final String NCCL = "nccl";

    public static Candidate nccl() {
        return new Candidate(NCCL, Optional.empty());
    }

    /**
     * NCCL's reduce-scatter pipelined over {@code splits} GEMM column blocks, each GEMM leaving {@code margin} SMs to
     * NCCL (see {@link NcclReferenceOp}).
     */
    public static Candidate ncclPipelined(int splits, int margin) {
        return new Candidate(new NcclPipeline(splits, margin).label(), Optional.empty());
    }

    /**
     * The NCCL candidate a label names, "nccl" or "nccl:splits=S[,margin=M]", checked against {@code shape}; empty
     * for any other label (a registered method's). A malformed or unsupported NCCL label is an
     * {@link IllegalArgumentException}.
     */
    public static Optional<Candidate> ncclNamed(String label, OverlapShape shape) {
        if (label.equals(NCCL)) {
            return Optional.of(nccl());
        }
        if (!label.startsWith(NcclPipeline.PREFIX)) {
            return Optional.empty();
        }
        NcclPipeline p = NcclPipeline.parse(label);
        Optional<String> why = NcclReferenceOp.whyUnsupported(shape, p);
        if (why.isPresent()) {
            throw new IllegalArgumentException(why.get());
        }
        return Optional.of(new Candidate(p.label(), Optional.empty()));
    }

    public static Candidate of(Schedule s) {
        return new Candidate(s.label(), Optional.of(s));
    }

    /**
     * The candidate a variant label names: an NCCL one ({@link #ncclNamed}) or a registered method's schedule for
     * {@code shape} ("ring:sub=4"); a bad label is an {@link IllegalArgumentException} naming what is wrong.
     */
    public static Candidate named(MethodRegistry registry, OverlapShape shape, String label) {
        return ncclNamed(label, shape).orElseGet(() -> of(registry.schedule(shape, label)));
    }

    /** The NCCL pipeline this candidate runs; null for the reference (and for a schedule). */
    private NcclPipeline ncclPipeline() {
        return schedule.isPresent() || label.equals(NCCL) ? null : NcclPipeline.parse(label);
    }

    public boolean isNccl() {
        return schedule.isEmpty();
    }

    /** Why this candidate cannot run with {@code exec} (an NCCL one always can). */
    public Optional<String> unsupportedWith(ExecutionSettings exec) {
        return schedule.flatMap(s -> Planner.unsupportedWith(s, exec));
    }

    /** Makes the op (collective over the domain). */
    public OverlapOp create(TpCommunicator comm, OverlapShape shape, DeviceKernels kernels, ExecutionSettings exec) {
        return schedule.map(s -> OverlapOp.create(comm, s, kernels, exec))
                .orElseGet(() -> new NcclReferenceOp(comm, shape, kernels, ncclPipeline()));
    }
}
