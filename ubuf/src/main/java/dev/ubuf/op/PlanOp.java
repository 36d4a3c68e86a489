package dev.ubuf.op;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.exec.CudaPlanExecutor;
import dev.ubuf.exec.ExecutionSettings;
import dev.ubuf.exec.OperandBindings;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.MatrixSpec;
import dev.ubuf.plan.Plan;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.trace.TraceSpan;

import java.util.Arrays;
import java.util.List;

/**
 * An op backed by a plan: this rank's plan of a {@link Schedule}, the user buffer and flags it registered on the
 * domain, and the executor that issues it. Closing drains the executor, then frees the flags and the user buffer,
 * each after a barrier of the domain (see {@link UserBuffer#close()}), so no peer touches freed memory.
 */
public final class PlanOp implements OverlapOp {
    private final TpCommunicator comm;
    private final Schedule schedule;
    private final Plan plan;
    private final DeviceKernels kernels;
    private final ExecutionSettings settings;
    private final UserBuffer ubuf;
    private final FlagRegion flags;
    private final CudaPlanExecutor executor;
    private CudaPlanExecutor gemmsOnly;
    private CudaPlanExecutor gemmsOnTheirStreams;
    private boolean closed;

    PlanOp(TpCommunicator comm, Schedule schedule, DeviceKernels kernels, ExecutionSettings settings) {
        if (schedule.shape().tp() != comm.tp()) {
            throw new IllegalArgumentException("shape is for tp " + schedule.shape().tp() + ", communicator has "
                    + comm.tp());
        }
        List<Plan> domain = schedule.plans();
        if (schedule.shape().inputInUserBuffer() && domain.getFirst().matrices().containsKey(BufferRole.INPUT)) {
            // Its callers bind no input: a method that ignores the shape's flag would fail at the first call.
            throw new IllegalArgumentException(domain.getFirst().op() + "/" + domain.getFirst().method() + " reads an"
                    + " input tensor, but " + schedule.shape().key() + " takes its input in the user buffer: the"
                    + " method must plan without INPUT for such a shape");
        }
        this.comm = comm;
        this.schedule = schedule;
        this.plan = domain.get(comm.rank());
        this.kernels = kernels;
        this.settings = schedule.settings(settings, comm.context().device().smCount());
        String name = plan.op() + "-" + plan.method();
        MatrixSpec u = plan.matrices().get(BufferRole.UBUF);
        this.ubuf = comm.register(name + "-ubuf", u == null ? 256 : u.bytes());
        FlagRegion f = null;
        try {
            f = comm.flags(name + "-flags", Math.max(1, plan.flagCount()));
            this.executor = new CudaPlanExecutor(plan, comm, ubuf, f, kernels, this.settings, sendersOf(domain, plan));
        } catch (RuntimeException e) {
            if (f != null) {
                f.close();
            }
            ubuf.close();
            throw e;
        }
        this.flags = f;
    }

    /** For each flag of {@code mine}, the rank that signals it (-1 when none does). */
    public static int[] sendersOf(List<Plan> domain, Plan mine) {
        int[] senders = new int[mine.flagCount()];
        Arrays.fill(senders, -1);
        for (Plan p : domain) {
            for (int f = 0; f < senders.length; f++) {
                if (p.signalsSentPerCall(mine.rank(), f) > 0) {
                    senders[f] = p.rank();
                }
            }
        }
        return senders;
    }

    public Schedule schedule() {
        return schedule;
    }

    public Plan plan() {
        return plan;
    }

    @Override
    public OverlapShape shape() {
        return schedule.shape();
    }

    @Override
    public TpCommunicator communicator() {
        return comm;
    }

    @Override
    public String methodName() {
        return schedule.method().name();
    }

    @Override
    public String label() {
        return schedule.label();
    }

    @Override
    public void forward(OperandBindings operands, CudaStream stream) {
        executor.run(operands, stream);
    }

    @Override
    public void forwardGemmsOnly(OperandBindings operands, CudaStream stream) {
        if (gemmsOnly == null) {
            gemmsOnly = new CudaPlanExecutor(plan.gemmsOnly(), comm, ubuf, flags, kernels, settings, new int[0]);
        }
        gemmsOnly.run(operands, stream);
    }

    @Override
    public void forwardGemmsOnTheirStreams(OperandBindings operands, CudaStream stream) {
        if (gemmsOnTheirStreams == null) {
            gemmsOnTheirStreams = new CudaPlanExecutor(plan.gemmsOnTheirStreams(), comm, ubuf, flags, kernels, settings,
                    new int[0]);
        }
        gemmsOnTheirStreams.run(operands, stream);
    }

    @Override
    public void await(CudaStream stream) {
        comm.await(stream, executor::pendingWaits);
        executor.checkKernelErrors();
    }

    @Override
    public TensorView userBuffer() {
        MatrixSpec u = plan.matrix(BufferRole.UBUF);
        return ubuf.matrix(comm.rank(), u.rows(), u.cols(), u.dtype());
    }

    @Override
    public void enableTrace() {
        executor.enableTrace();
    }

    @Override
    public List<TraceSpan> trace() {
        return executor.trace();
    }

    @Override
    public List<TraceSpan> trace(CudaEvent origin) {
        return executor.trace(origin);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        for (CudaPlanExecutor e : new CudaPlanExecutor[]{gemmsOnTheirStreams, gemmsOnly, executor}) {
            try {
                if (e != null) {
                    e.close();
                }
            } catch (RuntimeException x) {
                if (failure == null) {
                    failure = x;
                } else {
                    failure.addSuppressed(x);
                }
            }
        }
        if (!executor.drained()) {
            throw failure; // its streams may still touch the flags and the user buffer: they stay allocated
        }
        try {
            flags.close();
        } finally {
            ubuf.close();
        }
        if (failure != null) {
            throw failure;
        }
    }
}
