package dev.ubuf.exec;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.ops.DeviceKernels;
import dev.ubuf.plan.BufferRole;
import dev.ubuf.plan.MatrixSpec;
import dev.ubuf.plan.Plan;
import dev.ubuf.tensor.TensorView;

import java.util.List;

/**
 * One rank's overlapped op, ready to run: its plan, the user buffer and flags it registered on the domain (a
 * collective: every rank creates its runner together) and the executor that issues it. The typed AG and RS ops
 * are front ends over this. Closing releases in reverse order: executor, flags, buffer.
 */
public final class PlanRunner implements AutoCloseable {
    private final TpCommunicator comm;
    private final Plan plan;
    private final UserBuffer ubuf;
    private final FlagRegion flags;
    private final CudaPlanExecutor executor;

    /**
     * @param domain every rank's plan (validated with {@link Plan#validateDomain}); this rank runs its own, the others
     *               tell who signals each flag, so a stuck wait can name the peer it waits for
     */
    public PlanRunner(TpCommunicator comm, List<Plan> domain, DeviceKernels kernels, ExecutionSettings settings) {
        if (domain.size() != comm.tp()) {
            throw new IllegalArgumentException(domain.size() + " plans for a domain of " + comm.tp());
        }
        Plan.validateDomain(domain);
        this.comm = comm;
        this.plan = domain.get(comm.rank());
        String name = plan.op() + "-" + plan.method();
        MatrixSpec u = plan.matrices().get(BufferRole.UBUF);
        this.ubuf = comm.register(name + "-ubuf", u == null ? 256 : u.bytes());
        FlagRegion f = null;
        try {
            f = comm.flags(name + "-flags", Math.max(1, plan.flagCount()));
            this.executor = new CudaPlanExecutor(plan, comm, ubuf, f, kernels, settings, sendersOf(domain, plan));
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
        java.util.Arrays.fill(senders, -1);
        for (Plan p : domain) {
            for (int f = 0; f < senders.length; f++) {
                if (p.signalsSentPerCall(mine.rank(), f) > 0) {
                    senders[f] = p.rank();
                }
            }
        }
        return senders;
    }

    public Plan plan() {
        return plan;
    }

    /** This rank's user buffer as the plan's UBUF matrix (e.g. the gathered input after an AG). */
    public TensorView ubufMatrix() {
        MatrixSpec u = plan.matrix(BufferRole.UBUF);
        return ubuf.matrix(comm.rank(), u.rows(), u.cols(), u.dtype());
    }

    public void run(OperandBindings bindings, CudaStream caller) {
        executor.run(bindings, caller);
    }

    /** See {@link CudaPlanExecutor#enableTrace()}. */
    public void enableTrace() {
        executor.enableTrace();
    }

    public String traceReport() {
        return executor.traceReport();
    }

    /** Waits for {@code stream} with the UB_TIMEOUT deadline; a timeout names the flags this rank waits on. */
    public void await(CudaStream stream) {
        comm.await(stream, executor::pendingWaits);
    }

    @Override
    public void close() {
        try {
            executor.close();
        } finally {
            flags.close();
            ubuf.close();
        }
    }
}
