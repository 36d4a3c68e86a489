package dev.ubuf.plan;

import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
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
    /** Per stream that needed one: the COMM stream its waits run on ({@link #awaitBefore}). */
    private final Map<Integer, Integer> waiters = new HashMap<>();
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

    /**
     * A wait for {@code count} signals on {@code flag} before whatever is added to {@code stream} next. Where a GEMM is
     * already queued on {@code stream}, the wait goes on a COMM stream of {@code stream}'s own (made at its first
     * use), which {@code stream} then waits for: under CUDA graphs a wait is a kernel, and behind the GEMM it would
     * start only once the GEMM ended, its launch and its run in the critical path even where the signal came long
     * before (8B tp 2 traces: 7.5-8.6 us each); beside the GEMM it runs while the GEMM does. Waits that
     * {@code stream} makes before any GEMM stay on it.
     */
    public PlanBuilder awaitBefore(int stream, int flag, int count) {
        boolean gemmQueued = steps.stream().anyMatch(s -> s.stream() == stream
                && (s instanceof PlanStep.Gemm || s instanceof PlanStep.AtomicGemm));
        if (!gemmQueued) {
            steps.add(new PlanStep.WaitSignal(stream, flag, count));
            return this;
        }
        Integer w = waiters.get(stream);
        if (w == null) {
            w = stream(StreamRole.COMM);
            waiters.put(stream, w);
        }
        steps.add(new PlanStep.WaitSignal(w, flag, count));
        return order(w, stream);
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
