package dev.ubuf.exec;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.devicekernels.DeviceKernels;

import java.time.Duration;

/**
 * Signals and waits as one-thread kernels that compute their sequence numbers from a device epoch (calls started so
 * far, advanced by a kernel at the start of each call), so a captured call replays correctly. A wait kernel gives up
 * after {@code timeout} on its own, so a failed peer never leaves a stream blocked.
 */
final class GraphSafeSignalling implements Signalling {
    private final FlagRegion flags;
    private final DeviceKernels kernels;
    private final Duration timeout;
    private final DeviceBuffer epoch;

    GraphSafeSignalling(FlagRegion flags, DeviceKernels kernels, CudaContext context, Duration timeout) {
        this.flags = flags;
        this.kernels = kernels;
        this.timeout = timeout;
        this.epoch = context.allocate(Integer.BYTES);
        try (CudaStream z = context.createStream(StreamPriority.NORMAL)) {
            z.fill32(epoch.address(), 0, 1);
            z.synchronize();
        } catch (RuntimeException e) {
            epoch.close();
            throw e;
        }
    }

    @Override
    public void beginCall(CudaStream caller) {
        kernels.advanceEpoch(epoch.address(), caller);
    }

    @Override
    public void signal(CudaStream s, int peer, int flag, int perCall, int k, int absolute) {
        kernels.signal(flags.address(peer, flag), epoch.address(), perCall, k, s);
    }

    @Override
    public void await(CudaStream s, int flag, int perCall, int count, int absolute) {
        kernels.waitFlag(flags.address(flags.rank(), flag), epoch.address(), perCall, count, timeout, s);
    }

    @Override
    public boolean graphSafe() {
        return true;
    }

    @Override
    public boolean releaseWaits(int[] completedValues, java.time.Duration deadline) {
        return true; // the wait kernels expire by themselves after the timeout
    }

    @Override
    public void close() {
        epoch.close();
    }
}
