package dev.ubuf.bench;

import dev.ubuf.comm.FlagRegion;
import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.gemm.Gemm;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.DType;
import dev.ubuf.tensor.TensorView;
import dev.ubuf.timing.InterleavedTimer;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Why copy engines carry the data: on two GPUs, (1) an 8192³ bf16 GEMM alone, beside the same GPUs copying to each
 * other on the copy engines, and beside NCCL moving the same bytes (send/recv kernels on the SMs); (2) copy-engine
 * against NCCL send/recv bandwidth, both directions at once, from 1 MB to 1 GB. All candidates of a part are timed
 * in the same shuffled iterations ({@link InterleavedTimer}).
 */
public final class CopyEngineEvidence {
    private static final long GEMM_DIM = 8192;
    /** Bytes each rank moves beside the GEMM: enough to outlast it (about 1.5 ms at about 390 GB/s one way). */
    private static final long BESIDE_BYTES = 1L << 30;

    private CopyEngineEvidence() {
    }

    public static ResultsFile run(UbufEnvironment env, int warmup, int iters, List<Long> sizes) throws Exception {
        ResultsFile[] rf = new ResultsFile[1];
        long maxBytes = Math.max(BESIDE_BYTES, sizes.stream().mapToLong(Long::longValue).max().orElse(0));
        ThreadDomain.run(2, env.timeout(), (rank, boot, ctx) -> {
            if (rank == 0) {
                rf[0] = new ResultsFile("2x " + ctx.device().name(), ResultsFile.commitFromEnvironment());
            }
            int peer = 1 - rank;
            DType t = DType.BF16;
            try (TpCommunicator comm = TpCommunicator.create(boot, ctx, env, null);
                 KernelLibrary lib = KernelLibrary.load(ctx);
                 UserBuffer ub = comm.register("ce-evidence", 2 * maxBytes);
                 FlagRegion unused = comm.flags("ce-evidence-flags", 1);
                 CudaStream s = ctx.createStream(StreamPriority.NORMAL);
                 CudaStream side = ctx.createStream(StreamPriority.HIGH);
                 DeviceBuffer a = ctx.allocate(GEMM_DIM * GEMM_DIM * 2);
                 DeviceBuffer b = ctx.allocate(GEMM_DIM * GEMM_DIM * 2);
                 DeviceBuffer c = ctx.allocate(GEMM_DIM * GEMM_DIM * 2);
                 Gemm gemm = new Gemm(ctx);
                 InterleavedTimer timer = new InterleavedTimer(comm, s)) {
                DeviceKernels kernels = new DeviceKernels(lib);
                TensorView av = TensorView.of(a, GEMM_DIM, GEMM_DIM, t);
                TensorView bv = TensorView.of(b, GEMM_DIM, GEMM_DIM, t);
                TensorView cv = TensorView.of(c, GEMM_DIM, GEMM_DIM, t);
                kernels.fillRandom(av, 3 + rank, 1f, s);
                kernels.fillRandom(bv, 5 + rank, 0.01f, s);
                NcclCommunicator nccl = comm.nccl();
                long src = ub.local().address();
                long dst = ub.peer(peer).address() + maxBytes;
                // The GEMM's own events time it while the side traffic (forked before it, sized to outlast it) runs on
                // another stream; the traffic is joined back before the next sample, so nothing spills over.
                Map<String, Runnable> sides = new LinkedHashMap<>();
                sides.put("gemm", null);
                sides.put("gemm_beside_ce", () -> side.copy(dst, src, BESIDE_BYTES));
                sides.put("gemm_beside_nccl", () -> sendRecv(nccl, src, ub.local().address() + maxBytes, BESIDE_BYTES,
                        peer, side));
                Map<String, org.apache.commons.math3.stat.descriptive.DescriptiveStatistics> st = new LinkedHashMap<>();
                sides.keySet().forEach(k -> st.put(k, new org.apache.commons.math3.stat.descriptive.DescriptiveStatistics()));
                java.util.Random order = new java.util.Random(11);
                try (var fork = ctx.createEvent(false); var join = ctx.createEvent(false);
                     var gs = ctx.createEvent(true); var ge = ctx.createEvent(true)) {
                    java.util.List<String> names = new java.util.ArrayList<>(sides.keySet());
                    for (int i = 0; i < warmup + iters; i++) {
                        java.util.Collections.shuffle(names, order);
                        for (String name : names) {
                            boot.barrier();
                            Runnable traffic = sides.get(name);
                            fork.record(s);
                            side.waitEvent(fork);
                            if (traffic != null) {
                                traffic.run();
                            }
                            gs.record(s);
                            gemm.multiply(av, bv, cv, s);
                            ge.record(s);
                            join.record(side);
                            s.waitEvent(join);
                            comm.await(s, () -> "copy-engine evidence: " + name);
                            double ms = ge.elapsedMillisSince(gs);
                            byte[][] all = boot.allGather(java.nio.ByteBuffer.allocate(8).putDouble(ms).array());
                            double max = Math.max(java.nio.ByteBuffer.wrap(all[0]).getDouble(),
                                    java.nio.ByteBuffer.wrap(all[1]).getDouble());
                            if (i >= warmup) {
                                st.get(name).addValue(max);
                            }
                        }
                    }
                }
                if (rank == 0) {
                    double alone = st.get("gemm").getPercentile(50);
                    for (var e : st.entrySet()) {
                        double ms = e.getValue().getPercentile(50);
                        Map<String, Object> rec = record("gemm", e.getKey(), ms, GEMM_DIM, GEMM_DIM, GEMM_DIM, "bf16");
                        rec.put("p10_ms", e.getValue().getPercentile(10));
                        rec.put("p90_ms", e.getValue().getPercentile(90));
                        rec.put("slowdown_vs_alone", ms / alone);
                        rec.put("side_bytes_per_rank_each_way", BESIDE_BYTES);
                        rf[0].add(rec);
                        System.out.printf("%-18s %.4f ms  (%.3fx the GEMM alone)%n", e.getKey(), ms, ms / alone);
                    }
                }
                for (long bytes : sizes) {
                    Map<String, Runnable> bw = new LinkedHashMap<>();
                    bw.put("ce", () -> s.copy(dst, src, bytes));
                    bw.put("nccl", () -> sendRecv(nccl, src, ub.local().address() + maxBytes, bytes, peer, s));
                    InterleavedTimer.Result q = timer.time(bw, warmup, iters, bytes);
                    if (rank == 0) {
                        for (var e : q.stats().entrySet()) {
                            double ms = e.getValue().median();
                            double gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
                            Map<String, Object> rec = record("p2p", e.getKey() + "_both_ways", ms, bytes, 1, 1, "bytes");
                            rec.put("gbps", gbps);
                            rf[0].add(rec);
                            System.out.printf("p2p %-5s %,14d bytes both ways: %.4f ms, %.1f GB/s aggregate%n",
                                    e.getKey(), bytes, ms, gbps);
                        }
                    }
                }
            }
        });
        return rf[0];
    }

    /** Both ranks send {@code bytes} to each other through NCCL (its kernels run on SMs). */
    private static void sendRecv(NcclCommunicator nccl, long send, long recv, long bytes, int peer, CudaStream s) {
        NcclCommunicator.groupStart();
        nccl.send(send, bytes / 2, DType.BF16, peer, s.nativeHandle());
        nccl.recv(recv, bytes / 2, DType.BF16, peer, s.nativeHandle());
        NcclCommunicator.groupEnd();
    }

    private static Map<String, Object> record(String op, String method, double ms, long m, long n, long k, String dt) {
        Map<String, Object> r = ResultsFile.record(op, method, 2, dt, m, n, k, ms);
        r.put("timing", "interleaved-shuffled, max over ranks, enqueue excluded");
        return r;
    }
}
