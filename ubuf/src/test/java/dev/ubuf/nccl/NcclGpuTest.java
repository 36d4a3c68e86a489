package dev.ubuf.nccl;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.cuda.CudaVmm;
import dev.ubuf.tensor.DType;
import dev.ubuf.testutil.GpuAssumptions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** NCCL on real GPUs, one process; skipped without a CUDA device or libnccl.so.2. */
class NcclGpuTest {
    private int devices;

    @BeforeEach
    void needsGpusAndNccl() {
        GpuAssumptions.assumeGpu(CudaVmm.driver().isAvailable(), "no usable CUDA driver on this machine");
        GpuAssumptions.assumeGpu(Nccl.isAvailable(), "libnccl.so.2 not loadable here");
        JCudaDriver.setExceptionsEnabled(true);
        JCudaDriver.cuInit(0);
        int[] count = new int[1];
        cuDeviceGetCount(count);
        devices = Math.min(count[0], 8);
        GpuAssumptions.assumeGpu(devices > 0, "no CUDA device");
        System.out.println("NCCL " + Nccl.versionString(Nccl.version()) + ", " + devices + " device(s)");
    }

    /** A CUdeviceptr whose raw address the test can read. */
    static final class DevicePtr extends CUdeviceptr {
        long address() {
            return getNativePointer();
        }
    }

    private static void makeCurrent(int ordinal) {
        CUdevice dev = new CUdevice();
        JCudaDriver.cuDeviceGet(dev, ordinal);
        CUcontext ctx = new CUcontext();
        cuDevicePrimaryCtxRetain(ctx, dev);
        cuCtxSetCurrent(ctx);
    }

    private static DevicePtr upload(float[] host) {
        DevicePtr p = new DevicePtr();
        cuMemAlloc(p, host.length * 4L);
        cuMemcpyHtoD(p, Pointer.to(host), host.length * 4L);
        return p;
    }

    private static float[] download(DevicePtr p, int n) {
        float[] host = new float[n];
        cuCtxSynchronize();
        cuMemcpyDtoH(Pointer.to(host), p, n * 4L);
        return host;
    }

    @Test
    void initAllThenAGroupedAllReduceFromOneThread() {
        int[] devs = new int[devices];
        for (int i = 0; i < devices; i++) {
            devs[i] = i;
        }
        int n = 1000;
        List<NcclCommunicator> comms = NcclCommunicator.initAll(devs);
        List<DevicePtr> bufs = new ArrayList<>();
        try {
            for (int r = 0; r < devices; r++) {
                assertEquals(r, comms.get(r).rank());
                assertEquals(devices, comms.get(r).size());
                makeCurrent(r);
                float[] h = new float[n];
                for (int i = 0; i < n; i++) {
                    h[i] = r + 1 + i;
                }
                bufs.add(upload(h));
            }
            NcclCommunicator.groupStart();
            for (int r = 0; r < devices; r++) {
                makeCurrent(r);
                comms.get(r).allReduce(bufs.get(r).address(), bufs.get(r).address(), n, DType.FP32, NcclRedOp.SUM,
                        0L);
            }
            NcclCommunicator.groupEnd();
            float rankSum = devices * (devices + 1) / 2f;
            for (int r = 0; r < devices; r++) {
                makeCurrent(r);
                float[] got = download(bufs.get(r), n);
                for (int i = 0; i < n; i++) {
                    assertEquals(rankSum + devices * i, got[i], "rank " + r + " element " + i);
                }
                assertEquals(NcclResult.SUCCESS, comms.get(r).asyncError());
            }
        } finally {
            for (int r = 0; r < bufs.size(); r++) {
                makeCurrent(r);
                cuMemFree(bufs.get(r));
            }
            for (NcclCommunicator c : comms) {
                c.close();
                c.close();
            }
        }
    }

    @Test
    void aThreadPerRankRunsEveryOperation() throws Exception {
        NcclUniqueId id = NcclUniqueId.generate();
        int tp = devices;
        int chunk = 256;
        ExecutorService pool = Executors.newFixedThreadPool(tp);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int r = 0; r < tp; r++) {
                int rank = r;
                done.add(pool.submit(() -> {
                    makeCurrent(rank);
                    try (NcclCommunicator c = NcclCommunicator.initRank(id, tp, rank)) {
                        runAll(c, chunk);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** AllGather, ReduceScatter, Broadcast and a send/recv ring on this rank's thread. */
    private static void runAll(NcclCommunicator c, int chunk) {
        int r = c.rank();
        int tp = c.size();
        float[] shard = new float[chunk];
        for (int i = 0; i < chunk; i++) {
            shard[i] = r * 1000 + i;
        }
        DevicePtr send = upload(shard);
        DevicePtr gathered = upload(new float[chunk * tp]);
        c.allGather(send.address(), gathered.address(), chunk, DType.FP32, 0L);
        float[] g = download(gathered, chunk * tp);
        for (int p = 0; p < tp; p++) {
            assertEquals(p * 1000 + 7, g[p * chunk + 7], "gathered block " + p);
        }

        // ReduceScatter of the gathered buffer: every rank contributes the same data, so block r = tp * block r.
        DevicePtr reduced = upload(new float[chunk]);
        c.reduceScatter(gathered.address(), reduced.address(), chunk, DType.FP32, NcclRedOp.SUM, 0L);
        float[] rs = download(reduced, chunk);
        assertEquals(tp * (r * 1000 + 3), rs[3], 0f);

        DevicePtr bcast = upload(new float[chunk]);
        c.broadcast(send.address(), bcast.address(), chunk, DType.FP32, 0, 0L);
        assertEquals(5f, download(bcast, chunk)[5], 0f, "rank 0's shard");

        DevicePtr inbox = upload(new float[chunk]);
        NcclCommunicator.groupStart();
        c.send(send.address(), chunk, DType.FP32, (r + 1) % tp, 0L);
        c.recv(inbox.address(), chunk, DType.FP32, (r - 1 + tp) % tp, 0L);
        NcclCommunicator.groupEnd();
        assertEquals(((r - 1 + tp) % tp) * 1000 + 9, download(inbox, chunk)[9], 0f, "from the left neighbour");

        // bf16 through the same path: values exactly representable.
        float[] ones = new float[chunk / 2]; // chunk bf16 values packed two per float slot
        DevicePtr bf = upload(ones);
        c.allReduce(bf.address(), bf.address(), chunk, DType.BF16, NcclRedOp.SUM, 0L);
        assertArrayEquals(new float[chunk / 2], download(bf, chunk / 2), "zeros stay zeros");

        assertEquals(NcclResult.SUCCESS, c.asyncError());
        for (DevicePtr p : List.of(send, gathered, reduced, bcast, inbox, bf)) {
            cuMemFree(p);
        }
    }

    /** JCuda's exception switch is process-wide: restore the default so later test classes see return codes. */
    @org.junit.jupiter.api.AfterAll
    static void restoreJCudaReturnCodes() {
        if (dev.ubuf.cuda.Cuda.unavailableReason(1).isEmpty()) { // without a driver JCuda never loaded
            JCudaDriver.setExceptionsEnabled(false);
        }
    }
}
