package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The sequence-parallel gradient reductions a context's layers left for later
 * ({@link TpContext#deferGradientReductions}): each a partial sum of this rank's tokens that the TP group's
 * all-reduce completes. {@link #reduce} issues them as
 * one NCCL group and adds each into its gradients; until then those gradients lack them, so a step updates
 * {@link #parameters()} only after it. Closing stops the deferral and refuses to drop what was never reduced.
 */
public final class GradientReductions implements AutoCloseable {
    /** One gradient's partial sums, {@code partial} added into {@code grads} (the gradients of {@code parameters}). */
    record Pending(String name, TensorView partial, TensorView grads, List<Parameter> parameters) {
        Pending {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(partial, "partial");
            Objects.requireNonNull(grads, "grads");
            parameters = List.copyOf(parameters);
        }
    }

    private final TpContext context;
    private final List<Pending> pending = new ArrayList<>();
    private boolean closed;

    GradientReductions(TpContext context) {
        this.context = context;
    }

    void add(Pending p) {
        if (closed) {
            throw new IllegalStateException("gradient reductions added after they were closed: " + p.name());
        }
        pending.add(p);
    }

    /** Whether nothing waits. */
    public boolean isEmpty() {
        return pending.isEmpty();
    }

    /** The parameters whose gradients wait for {@link #reduce}, in the order their layers left them. */
    public List<Parameter> parameters() {
        List<Parameter> ps = new ArrayList<>();
        for (Pending p : pending) {
            ps.addAll(p.parameters());
        }
        return List.copyOf(ps);
    }

    /**
     * Issues every waiting reduction on {@code stream} (one all-reduce over the TP group, then the additions) and
     * stops deferring: layers' later backward calls reduce their gradients themselves. Collective: every rank of
     * the group reduces the same gradients.
     */
    public void reduce(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        close0();
        List<Pending> now = List.copyOf(pending);
        pending.clear();
        context.reduce(now, stream);
    }

    /** Stops deferring; refuses (after stopping) if some reduction was never issued, whose gradient would be wrong. */
    @Override
    public void close() {
        close0();
        if (!pending.isEmpty()) {
            List<String> names = pending.stream().map(Pending::name).toList();
            pending.clear();
            throw new IllegalStateException("gradient reductions closed without being issued, their gradients lack "
                    + "the other ranks' sums: " + names);
        }
    }

    private void close0() {
        closed = true;
        context.stopDeferring(this);
    }
}
