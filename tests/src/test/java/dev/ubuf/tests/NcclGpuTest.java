package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** NCCL AllGather and ReduceScatter across two GPUs, checked element by element (one JVM, ncclCommInitAll). */
class NcclGpuTest {
    @Test
    void allGatherAndReduceScatterAcrossTwoGpus() throws Exception {
        Gpu.assumeGpus(2);
        int tp = 2;
        long n = 1 << 20;
        long seed = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(seed);
        CudaContext[] ctx = {CudaContext.retainPrimary(0), CudaContext.retainPrimary(1)};
        List<NcclCommunicator> comms = NcclCommunicator.initAll(new int[]{0, 1});
        CudaStream[] s = new CudaStream[tp];
        DeviceBuffer[] send = new DeviceBuffer[tp];
        DeviceBuffer[] recv = new DeviceBuffer[tp];
        float[][] in = new float[tp][];
        try {
            // AllGather: every rank ends with [in0; in1].
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                s[r] = ctx[r].createStream(StreamPriority.NORMAL);
                send[r] = ctx[r].allocate(n * tp * 4);
                recv[r] = ctx[r].allocate(n * tp * 4);
                in[r] = HostTensors.random(rnd, n * tp, DType.FP32, 1f);
                HostTensors.upload(ctx[r], s[r], in[r], TensorView.of(send[r], 1, n * tp, DType.FP32));
                s[r].fill32(recv[r].address(), 0x7fc00000, n * tp);
                s[r].synchronize();
            }
            NcclCommunicator.groupStart();
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                comms.get(r).allGather(send[r].address(), recv[r].address(), n, DType.FP32, s[r].nativeHandle());
            }
            NcclCommunicator.groupEnd();
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                float[] got = HostTensors.download(ctx[r], s[r], TensorView.of(recv[r], 1, n * tp, DType.FP32));
                for (int src = 0; src < tp; src++) {
                    for (int i = 0; i < n; i++) {
                        assertEquals(in[src][i], got[(int) (src * n + i)], "allgather rank " + r + " element " + (src * n + i));
                    }
                }
            }
            // ReduceScatter (sum): rank r gets in0[r-th block] + in1[r-th block].
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                s[r].fill32(recv[r].address(), 0x7fc00000, n * tp);
            }
            NcclCommunicator.groupStart();
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                comms.get(r).reduceScatter(send[r].address(), recv[r].address(), n, DType.FP32, NcclRedOp.SUM,
                        s[r].nativeHandle());
            }
            NcclCommunicator.groupEnd();
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                float[] got = HostTensors.download(ctx[r], s[r], TensorView.of(recv[r], 1, n, DType.FP32));
                for (int i = 0; i < n; i++) {
                    float want = in[0][(int) (r * n + i)] + in[1][(int) (r * n + i)];
                    assertEquals(want, got[i], "reducescatter rank " + r + " element " + i + " (seed " + seed + ")");
                }
            }
        } finally {
            for (int r = 0; r < tp; r++) {
                ctx[r].makeCurrent();
                comms.get(r).close();
                if (recv[r] != null) recv[r].close();
                if (send[r] != null) send[r].close();
                if (s[r] != null) s[r].close();
                ctx[r].close();
            }
        }
    }
}
