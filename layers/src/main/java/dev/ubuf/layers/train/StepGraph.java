package dev.ubuf.layers.train;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaGraph;
import dev.ubuf.cuda.CudaStream;

/**
 * A training step captured as a CUDA graph ({@link Trainer#capture}): one host call enqueues the whole step, so the
 * host's time issuing a step's hundreds of kernels, copies and waits no longer paces the GPU. Owns the graph; the
 * trainer, its stack and the tensors it was captured on must outlive it, and its last replay must have finished
 * (the caller awaited the stream) before it or the stack is closed.
 */
public final class StepGraph implements AutoCloseable {
    private final CudaContext context;
    private final CudaGraph graph;

    StepGraph(CudaContext context, CudaGraph graph) {
        this.context = context;
        this.graph = graph;
    }

    /** Enqueues one step on {@code stream}; returns without waiting. Collective, as a step is. */
    public void replay(CudaStream stream) {
        context.makeCurrent();
        graph.launch(stream);
    }

    @Override
    public void close() {
        context.makeCurrent();
        graph.close();
    }
}
