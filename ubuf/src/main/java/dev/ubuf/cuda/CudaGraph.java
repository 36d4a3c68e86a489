package dev.ubuf.cuda;

import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.JCudaDriver;

import java.util.concurrent.atomic.AtomicBoolean;

/** An instantiated CUDA graph captured from a stream; replay it with {@link #launch(CudaStream)}. */
public final class CudaGraph implements AutoCloseable {
    private final CudaContext context;
    private final CUgraph graph;
    private final CUgraphExec exec = new CUgraphExec();
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY: a kernel keeps the priority of the stream it was captured on. */
    static final long USE_NODE_PRIORITY = 8;

    CudaGraph(CudaContext context, CUgraph graph, long flags) {
        this.context = context;
        this.graph = graph;
        try {
            Cuda.check(JCudaDriver.cuGraphInstantiate(exec, graph, flags), "cuGraphInstantiate");
        } catch (RuntimeException e) {
            JCudaDriver.cuGraphDestroy(graph);
            throw e;
        }
        this.entry = context.ledger().track(this, "CUDA graph", "", 0);
    }

    public void launch(CudaStream stream) {
        if (closed.get()) {
            throw new IllegalStateException("graph is closed");
        }
        Cuda.check(JCudaDriver.cuGraphLaunch(exec, stream.handle()), "cuGraphLaunch");
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Cuda.check(JCudaDriver.cuGraphExecDestroy(exec), "cuGraphExecDestroy");
                Cuda.check(JCudaDriver.cuGraphDestroy(graph), "cuGraphDestroy");
            } finally {
                entry.close();
            }
        }
    }
}
