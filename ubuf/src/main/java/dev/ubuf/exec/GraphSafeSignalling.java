package dev.ubuf.exec;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.devicekernels.DeviceKernels;

import java.time.Duration;
import java.util.List;

/**
 * Signals and waits as one-thread kernels that compute their sequence numbers from a device epoch (calls started so
 * far, advanced by a kernel at the start of each call), so a captured call replays correctly. A wait kernel gives up
 * after {@code timeout} on its own, so a failed peer never leaves a stream blocked. Runs of signals or waits that a
 * stream makes in a row are one kernel each.
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

    /** Up to {@link DeviceKernels#FLAG_RUN} signals per kernel. */
    @Override
    public void signalRun(CudaStream s, List<Send> sends) {
        for (int from = 0; from < sends.size(); from += DeviceKernels.FLAG_RUN) {
            List<Send> part = sends.subList(from, Math.min(sends.size(), from + DeviceKernels.FLAG_RUN));
            if (part.size() == 1) {
                Send x = part.getFirst();
                signal(s, x.peer(), x.flag(), x.perCall(), x.k(), x.absolute());
                continue;
            }
            long[] at = new long[part.size()];
            int[] perCall = new int[part.size()];
            int[] k = new int[part.size()];
            for (int i = 0; i < at.length; i++) {
                at[i] = flags.address(part.get(i).peer(), part.get(i).flag());
                perCall[i] = part.get(i).perCall();
                k[i] = part.get(i).k();
            }
            kernels.signalRun(at, perCall, k, epoch.address(), s);
        }
    }

    /** Up to {@link DeviceKernels#FLAG_RUN} waits per kernel. */
    @Override
    public void awaitRun(CudaStream s, List<Wait> waits) {
        for (int from = 0; from < waits.size(); from += DeviceKernels.FLAG_RUN) {
            List<Wait> part = waits.subList(from, Math.min(waits.size(), from + DeviceKernels.FLAG_RUN));
            if (part.size() == 1) {
                Wait w = part.getFirst();
                await(s, w.flag(), w.perCall(), w.count(), w.absolute());
                continue;
            }
            long[] at = new long[part.size()];
            int[] perCall = new int[part.size()];
            int[] count = new int[part.size()];
            for (int i = 0; i < at.length; i++) {
                at[i] = flags.address(flags.rank(), part.get(i).flag());
                perCall[i] = part.get(i).perCall();
                count[i] = part.get(i).count();
            }
            kernels.waitRun(at, perCall, count, epoch.address(), timeout, s);
        }
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
