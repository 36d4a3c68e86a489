package dev.ubuf.layers.train;

import dev.ubuf.bootstrap.Bootstrap;
import dev.ubuf.bootstrap.DomainLayout;
import dev.ubuf.comm.TpCommunicator;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.PinnedHostBuffer;
import dev.ubuf.layers.tp.Parameter;
import dev.ubuf.tensor.TensorView;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;
import java.util.zip.CRC32C;

/**
 * Whether data-parallel replicas hold the same parameters, compared through a CRC32C of each rank's parameter bytes:
 * every replica's stacks must equal replica 0's at each TP position.
 *
 * @param identical whether, for every TP position and every stack compared, every replica's hash equals replica 0's
 * @param detail    one line: the hashes per TP rank, or the first difference
 */
public record ReplicaCheck(boolean identical, String detail) {
    /**
     * A CRC32C of every parameter value of {@code stack} on this rank, in order (their bytes, read back to the host;
     * waits for {@code stream}).
     */
    public static long hash(LayerStack stack, CudaStream stream) {
        CRC32C crc = new CRC32C();
        TpCommunicator comm = stack.context().comm();
        CudaContext ctx = comm.context().makeCurrent();
        for (Parameter p : stack.parameters()) {
            TensorView v = p.value();
            long n = v.spanBytes();
            try (PinnedHostBuffer host = ctx.allocateHost(n)) {
                stream.copyToHost(host, 0, v.memory(), v.byteOffset(), n);
                comm.await(stream, () -> "weight read-back of " + p.name());
                crc.update(host.segment().asSlice(0, n).asByteBuffer());
            }
        }
        return crc.getValue();
    }

    /**
     * Gathers every rank's hashes ({@code mine[i]}: stack {@code names[i]}) over {@code world} and compares them
     * (collective over the world; every rank returns the same verdict).
     */
    public static ReplicaCheck compare(DomainLayout layout, Bootstrap world, List<String> names, long[] mine) {
        ByteBuffer b = ByteBuffer.allocate(mine.length * Long.BYTES);
        for (long v : mine) {
            b.putLong(v);
        }
        byte[][] all = world.allGather(b.array());
        long[][] hashes = new long[all.length][mine.length];
        for (int r = 0; r < all.length; r++) {
            ByteBuffer rb = ByteBuffer.wrap(all[r]);
            for (int i = 0; i < mine.length; i++) {
                hashes[r][i] = rb.getLong();
            }
        }
        return of(layout, names, hashes);
    }

    /**
     * The verdict on the hashes {@code hashes[worldRank][i]} of stack {@code names[i]}: every rank of TP position t
     * must match rank t (replica 0).
     */
    public static ReplicaCheck of(DomainLayout layout, List<String> names, long[][] hashes) {
        for (int r = 0; r < layout.worldSize(); r++) {
            int first = layout.tpRank(r);
            for (int m = 0; m < names.size(); m++) {
                if (hashes[r][m] != hashes[first][m]) {
                    return new ReplicaCheck(false, String.format(Locale.ROOT,
                            "%s parameters of rank %d (replica %d) differ from rank %d's (replica 0): CRC32C %08x vs"
                                    + " %08x", names.get(m), r, layout.tpGroupOf(r), first, hashes[r][m],
                            hashes[first][m]));
                }
            }
        }
        StringJoiner j = new StringJoiner(" ");
        for (int t = 0; t < layout.tp(); t++) {
            StringJoiner h = new StringJoiner("/");
            for (int m = 0; m < names.size(); m++) {
                h.add(String.format(Locale.ROOT, "%08x", hashes[t][m]));
            }
            j.add("tp rank " + t + ": " + h);
        }
        return new ReplicaCheck(true, "all " + layout.dp() + " replicas hold bit-identical " + String.join(" and ",
                names) + " parameters (CRC32C " + String.join("/", names) + " per TP rank, " + j + ")");
    }
}
