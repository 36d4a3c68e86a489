package dev.ubuf.nccl;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * An {@code ncclUniqueId}: the 128 opaque bytes rank 0 creates with {@link #generate()} and sends to every other rank
 * (over ubuf's bootstrap) before they all call {@link NcclCommunicator#initRank}. Immutable: the array is copied in
 * and out.
 */
public record NcclUniqueId(byte[] bytes) {
    /** {@code NCCL_UNIQUE_ID_BYTES} in nccl.h (v2.28.3-1). */
    public static final int BYTES = 128;

    public NcclUniqueId {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException(
                    "an ncclUniqueId has exactly " + BYTES + " bytes, got " + bytes.length);
        }
        bytes = bytes.clone();
    }

    /** A fresh id from {@code ncclGetUniqueId} (opens a bootstrap listener in this process, as NCCL does). */
    public static NcclUniqueId generate() {
        return new NcclUniqueId(Nccl.library().getUniqueId());
    }

    /** A copy of the 128 bytes. */
    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NcclUniqueId other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** Only a short prefix, so logs stay readable. */
    @Override
    public String toString() {
        return "NcclUniqueId[" + HexFormat.of().formatHex(bytes, 0, 8) + "...]";
    }
}
