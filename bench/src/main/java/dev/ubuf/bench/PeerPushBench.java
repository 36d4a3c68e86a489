package dev.ubuf.bench;

import dev.ubuf.comm.ThreadDomain;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.comm.UserBuffer;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaEvent;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.KernelLibrary;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.nccl.NcclCommunicator;
import dev.ubuf.nccl.NcclRedOp;
import dev.ubuf.resource.Closer;
import dev.ubuf.tensor.DType;
import dev.ubuf.timing.InterleavedTimer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How fast each GPU's partials can leave it when every rank sends to every peer at once, as the reduce-scatter
 * method {@code scatter} sends them (one copy stream per peer): the copy engines beside NCCL's reduce-scatter, which
 * sends the same bytes from each GPU ((tp-1) times its output) with kernels on the SMs. At tp 4 on H100s, where the
 * transfer outlasts the GEMMs, {@code scatter} reached about 150 GB/s per GPU against NCCL's 190: this tells whether
 * the copy engines themselves are slower at these sizes, or the schedule around them.
 *
 * <p>Candidates per size B, timed in the same shuffled iterations ({@link InterleavedTimer}: the maximum over ranks):
 * {@code ce_one} (B to the next rank only: one link's rate), {@code ce} (B to each peer, a stream per peer),
 * {@code ce_split2} (each peer's B halved onto two streams: more copy engines at work), {@code sm_C} (an SM copy
 * kernel of C blocks per peer) and {@code nccl_rs} (NCCL's reduce-scatter whose output is B per rank, bf16).
 */
public final class PeerPushBench {
    private PeerPushBench() {
    }

    /** Every candidate at every size on {@code tp} GPUs (ranks as threads); the results file, or null off rank 0. */
    public static ResultsFile run(UbufEnvironment env, int tp, List<Long> sizes, List<Integer> smCtas, int warmup,
                                  int iters) throws Exception {
        long maxBytes = sizes.stream().mapToLong(Long::longValue).max().orElseThrow();
        ResultsFile[] rf = new ResultsFile[1];
        ThreadDomain.run(tp, env.timeout(), (rank, boot, ctx) -> {
            if (rank == 0) {
                rf[0] = new ResultsFile(tp + "x " + ctx.device().name(), ResultsFile.commitFromEnvironment());
            }
            try (Closer closer = new Closer("pushes bench")) {
                TpCommunicator comm = closer.register("communicator", TpCommunicator.create(boot, ctx, env, null));
                KernelLibrary lib = closer.register("kernels", KernelLibrary.load(ctx));
                // Slot d-1 of a rank's buffer receives from the rank d behind it; NCCL's input is tp blocks of B.
                UserBuffer ub = closer.register("receive slots", comm.register("pushes", (tp - 1) * maxBytes));
                DeviceBuffer send = closer.register("send", ctx.allocate(tp * maxBytes));
                DeviceBuffer reduced = closer.register("nccl output", ctx.allocate(maxBytes));
                CudaStream s = closer.register("timer stream", ctx.createStream(StreamPriority.NORMAL));
                List<CudaStream> push = new ArrayList<>();
                List<CudaEvent> joins = new ArrayList<>();
                for (int i = 0; i < 2 * (tp - 1); i++) {
                    push.add(closer.register("push stream " + i, ctx.createStream(StreamPriority.HIGH)));
                    joins.add(closer.register("join " + i, ctx.createEvent(false)));
                }
                CudaEvent fork = closer.register("fork", ctx.createEvent(false));
                InterleavedTimer timer = closer.register("timer", new InterleavedTimer(comm, s));
                DeviceKernels kernels = new DeviceKernels(lib);
                NcclCommunicator nccl = comm.nccl();
                s.fill8(send.address(), (byte) 0, tp * maxBytes); // zeros: bf16 sums stay finite
                for (long bytes : sizes) {
                    Map<String, Runnable> c = new LinkedHashMap<>();
                    c.put("ce_one", () -> fanOut(s, fork, push, joins, 1, 1,
                            (d, part, st) -> st.copy(dst(ub, rank, d, tp, bytes), send.address(), bytes)));
                    c.put("ce", () -> fanOut(s, fork, push, joins, tp - 1, 1,
                            (d, part, st) -> st.copy(dst(ub, rank, d, tp, bytes), src(send, d, bytes), bytes)));
                    c.put("ce_split2", () -> fanOut(s, fork, push, joins, tp - 1, 2, (d, part, st) -> {
                        long half = bytes / 2;
                        long off = part == 0 ? 0 : half;
                        long len = part == 0 ? half : bytes - half;
                        st.copy(dst(ub, rank, d, tp, bytes) + off, src(send, d, bytes) + off, len);
                    }));
                    for (int ctas : smCtas) {
                        c.put("sm_" + ctas, () -> fanOut(s, fork, push, joins, tp - 1, 1, (d, part, st) ->
                                kernels.copyBytes(dst(ub, rank, d, tp, bytes), src(send, d, bytes), bytes, ctas, st)));
                    }
                    c.put("nccl_rs", () -> nccl.reduceScatter(send.address(), reduced.address(), bytes / 2,
                            DType.BF16, NcclRedOp.SUM, s.nativeHandle()));
                    InterleavedTimer.Result r = timer.time(c, warmup, iters, bytes);
                    if (rank == 0) {
                        report(rf[0], tp, bytes, r);
                    }
                }
                // Bounded by UB_TIMEOUT and a dead peer, as every host wait; then no rank frees its slots while a
                // peer may still copy into them.
                comm.await(s, () -> "bench pushes: the last copies into the peers' slots");
                boot.barrier();
            }
        });
        return rf[0];
    }

    /** One copy (or part of one) of the d-th peer's bytes on {@code stream}. */
    @FunctionalInterface
    private interface Push {
        void issue(int d, int part, CudaStream stream);
    }

    /** Forks {@code peers} x {@code parts} pushes off {@code s}, each on a stream of its own, and joins them back. */
    private static void fanOut(CudaStream s, CudaEvent fork, List<CudaStream> push, List<CudaEvent> joins, int peers,
                               int parts, Push p) {
        fork.record(s);
        int k = 0;
        for (int part = 0; part < parts; part++) {
            for (int d = 1; d <= peers; d++, k++) {
                CudaStream st = push.get(k);
                st.waitEvent(fork);
                p.issue(d, part, st);
                joins.get(k).record(st);
            }
        }
        for (int i = 0; i < k; i++) {
            s.waitEvent(joins.get(i));
        }
    }

    /** The slot of rank {@code rank + d} that receives from this rank (it is d ranks behind that peer). */
    private static long dst(UserBuffer ub, int rank, int d, int tp, long bytes) {
        return ub.peer((rank + d) % tp).address() + (d - 1) * bytes;
    }

    private static long src(DeviceBuffer send, int d, long bytes) {
        return send.address() + (d - 1) * bytes;
    }

    private static void report(ResultsFile rf, int tp, long bytes, InterleavedTimer.Result r) {
        for (var e : r.stats().entrySet()) {
            double ms = e.getValue().median();
            long out = e.getKey().equals("ce_one") ? bytes : (tp - 1) * bytes;
            double gbps = out / (ms * 1e-3) / 1e9;
            Map<String, Object> rec = ResultsFile.record("pushes", e.getKey(), tp, "bytes", bytes, 1, 1, ms);
            rec.put("p10_ms", e.getValue().p10());
            rec.put("p90_ms", e.getValue().p90());
            rec.put("bytes_out_per_gpu", out);
            rec.put("gbps", gbps);
            rec.put("rank_mode", "threads");
            rf.add(rec);
            System.out.printf("pushes tp %d %,12d bytes a peer  %-10s %.4f ms  %6.1f GB/s out of each GPU%n", tp,
                    bytes, e.getKey(), ms, gbps);
        }
    }
}
