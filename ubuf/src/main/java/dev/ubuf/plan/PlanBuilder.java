package dev.ubuf.plan;

import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** Mutable helper that plan factories use to assemble an immutable {@link Plan}. */
public final class PlanBuilder {
    private final String op;
    private final String method;
    private final int rank;
    private final int tp;
    private final List<StreamRole> streams = new ArrayList<>();
    private final Map<BufferRole, MatrixSpec> matrices = new EnumMap<>(BufferRole.class);
    private final List<Integer> flagsReceived = new ArrayList<>();
    private final List<PlanStep> steps = new ArrayList<>();
    private int events;

    public PlanBuilder(String op, String method, int rank, int tp) {
        this.op = op;
        this.method = method;
        this.rank = rank;
        this.tp = tp;
    }

    public int rank() {
        return rank;
    }

    public int tp() {
        return tp;
    }

    /** Adds a stream and returns its index. */
    public int stream(StreamRole role) {
        streams.add(role);
        return streams.size() - 1;
    }

    public PlanBuilder matrix(BufferRole role, DType dtype, long rows, long cols) {
        matrices.put(role, new MatrixSpec(role, dtype, rows, cols));
        return this;
    }

    /** Declares a flag on which this rank receives {@code perCall} signals per call; returns its index. */
    public int flag(int perCall) {
        flagsReceived.add(perCall);
        return flagsReceived.size() - 1;
    }

    public PlanBuilder add(PlanStep step) {
        steps.add(step);
        return this;
    }

    /** Records a new event on {@code stream} and returns it. */
    public int record(int stream) {
        int e = events++;
        steps.add(new PlanStep.RecordEvent(stream, e));
        return e;
    }

    /** Makes {@code waiter} wait for everything issued so far on {@code on}. */
    public PlanBuilder order(int on, int waiter) {
        if (on != waiter) {
            int e = record(on);
            steps.add(new PlanStep.WaitEvent(waiter, e));
        }
        return this;
    }

    public Plan build() {
        return new Plan(op, method, rank, tp, streams, matrices, flagsReceived, events, steps);
    }
}
