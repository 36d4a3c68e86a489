package dev.ubuf.exec;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.StreamPriority;

/**
 * Signals as stream writes of absolute sequence numbers to the peer's flag (cuStreamWriteValue32, ordered after the
 * stream's earlier copies), waits as stream waits (cuStreamWaitValue32, cyclic >=). Host sequence numbers are baked
 * into each call, so a captured graph would replay stale values: not graph-safe.
 *
 * <p>Why a wait observes the peer's data: the peer writes our memory with a copy on its stream and then, on the same
 * stream, writes our flag; the driver starts the flag write only after the copy has completed, and our stream's
 * work after the wait is ordered after the flag's value is seen. CU_STREAM_WAIT_VALUE_FLUSH adds a flush of writes
 * from third-party devices (RDMA NICs) that may still be in flight; it is used where the device reports it can flush
 * (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES), and is not needed for peer GPUs over NVLink or PCIe.
 */
final class StreamMemOpSignalling implements Signalling {
    private final FlagRegion flags;
    private final CudaContext context;
    private final boolean flush;

    StreamMemOpSignalling(FlagRegion flags, CudaContext context) {
        this.flags = flags;
        this.context = context;
        this.flush = context.device().canFlushRemoteWrites();
    }

    @Override
    public void beginCall(CudaStream caller) {
    }

    @Override
    public void signal(CudaStream s, int peer, int flag, int perCall, int k, int absolute) {
        flags.signal(s, peer, flag, absolute);
    }

    @Override
    public void await(CudaStream s, int flag, int perCall, int count, int absolute) {
        s.waitValue32(flags.address(flags.rank(), flag), absolute, flush);
    }

    @Override
    public boolean graphSafe() {
        return false;
    }

    @Override
    public boolean releaseWaits(int[] completedValues, java.time.Duration deadline) {
        // A stream of its own, so the writes run while the plan's streams are blocked on the very flags written.
        CudaStream s = context.createStream(StreamPriority.HIGH);
        for (int f = 0; f < completedValues.length; f++) {
            if (completedValues[f] != 0) {
                s.writeValue32(flags.address(flags.rank(), f), completedValues[f]);
            }
        }
        if (!s.synchronize(deadline)) {
            return false; // its writes may still run: the stream stays open (the context's ledger shows it)
        }
        s.close();
        return true;
    }

    @Override
    public void close() {
    }
}
