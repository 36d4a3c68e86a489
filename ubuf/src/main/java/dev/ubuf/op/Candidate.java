package dev.ubuf.op;

import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.devicekernels.DeviceKernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One way the planner may run a shape: a method's schedule with options, or (no schedule) NCCL: the reference, or
 * its reduce-scatter pipelined in column blocks ({@code nccl:splits=S}).
 *
 * @param label the schedule's label ("ring:sub=4"), "nccl" or "nccl:splits=S"
 */
public record Candidate(String label, Optional<Schedule> schedule) {
    public static final String NCCL = "nccl";
    private static final String NCCL_SPLITS = NCCL + ":splits=";

    public static Candidate nccl() {
        return new Candidate(NCCL, Optional.empty());
    }

    /** NCCL's reduce-scatter pipelined over {@code splits} GEMM column blocks (see {@link NcclReferenceOp}). */
    public static Candidate ncclPipelined(int splits) {
        if (splits < 2) {
            throw new IllegalArgumentException("nccl:splits must be at least 2, got " + splits);
        }
        return new Candidate(NCCL_SPLITS + splits, Optional.empty());
    }

    /**
     * The NCCL candidate a label names, "nccl" or "nccl:splits=S", checked against {@code shape}; empty for any other
     * label (a registered method's). A malformed or unsupported NCCL label is an {@link IllegalArgumentException}.
     */
    public static Optional<Candidate> ncclNamed(String label, OverlapShape shape) {
        if (label.equals(NCCL)) {
            return Optional.of(nccl());
        }
        if (!label.startsWith(NCCL + ":")) {
            return Optional.empty();
        }
        if (!label.startsWith(NCCL_SPLITS)) {
            throw new IllegalArgumentException("'" + label + "': nccl takes one option, splits (nccl:splits=4)");
        }
        int splits;
        try {
            splits = Integer.parseInt(label.substring(NCCL_SPLITS.length()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + label + "': splits must be a whole number");
        }
        Optional<String> why = NcclReferenceOp.whyUnsupported(shape, splits);
        if (why.isPresent()) {
            throw new IllegalArgumentException(why.get());
        }
        return Optional.of(ncclPipelined(splits));
    }

    /** The NCCL pipelined reduce-scatters the planner tries for {@code shape}, fewest blocks first. */
    static List<Candidate> ncclPipelines(OverlapShape shape) {
        List<Candidate> c = new ArrayList<>();
        for (int splits : NcclReferenceOp.PIPELINE_SPLITS) {
            if (NcclReferenceOp.whyUnsupported(shape, splits).isEmpty()) {
                c.add(ncclPipelined(splits));
            }
        }
        return c;
    }

    /** Blocks of the NCCL pipelined reduce-scatter; 1 for the reference; 0 for a schedule. */
    int ncclSplits() {
        if (schedule.isPresent()) {
            return 0;
        }
        return label.equals(NCCL) ? 1 : Integer.parseInt(label.substring(NCCL_SPLITS.length()));
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
                .orElseGet(() -> new NcclReferenceOp(comm, shape, kernels, ncclSplits()));
    }
}
