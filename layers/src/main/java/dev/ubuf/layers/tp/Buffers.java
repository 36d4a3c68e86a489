package dev.ubuf.layers.tp;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;

import java.util.ArrayList;
import java.util.List;

/** The device buffers one layer owns (parameters, activations, workspaces), freed together, last first. */
final class Buffers implements AutoCloseable {
    private final CudaContext ctx;
    private final String owner;
    private final List<DeviceBuffer> owned = new ArrayList<>();

    Buffers(CudaContext ctx, String owner) {
        this.ctx = ctx;
        this.owner = owner;
    }

    /** A dense rows x cols matrix of {@code dtype}, named "owner.name" in the context's ledger. */
    TensorView matrix(long rows, long cols, DType dtype, String name) {
        DeviceBuffer b = ctx.allocate(rows * cols * dtype.bytes(), owner + "." + name);
        owned.add(b);
        return TensorView.of(b, rows, cols, dtype);
    }

    @Override
    public void close() {
        for (int i = owned.size() - 1; i >= 0; i--) {
            owned.get(i).close();
        }
        owned.clear();
    }
}
