package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;


/** The device buffers one layer owns (parameters, activations, workspaces), freed together, last first. */
final class Buffers implements AutoCloseable {
    private final CudaContext ctx;
    private final String owner;
    private final Closer owned;

    Buffers(CudaContext ctx, String owner) {
        this.ctx = ctx;
        this.owner = owner;
        this.owned = new Closer("the buffers of " + owner);
    }

    /** A dense rows x cols matrix of {@code dtype}, named "owner.name" in the context's ledger. */
    TensorView matrix(long rows, long cols, DType dtype, String name) {
        owned.requireOpen();
        DeviceBuffer b = owned.register(name, ctx.allocate(rows * cols * dtype.bytes(), owner + "." + name));
        return TensorView.of(b, rows, cols, dtype);
    }

    @Override
    public void close() {
        owned.close();
    }
}
