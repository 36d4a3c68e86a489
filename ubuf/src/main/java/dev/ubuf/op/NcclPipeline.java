package dev.ubuf.op;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SequencedMap;

/**
 * How {@link NcclReferenceOp} pipelines its reduce-scatter: the GEMM in {@code splits} column blocks, each leaving
 * {@code margin} SMs free (cuBLASLt's SM count target) so NCCL's kernel for the previous block finds SMs to start on
 * beside it: a GEMM that fills every SM holds NCCL back until it ends, which serialises the two (measured on two H100s:
 * every split count ran slower than the unpipelined reference without a margin). Label {@code nccl:splits=S} or
 * {@code nccl:splits=S,margin=M}. With a margin too it stayed slower than the reference on every shape measured at tp 2
 * and tp 4 (NCCL's kernels and the GEMMs slow each other on the SMs, and each smaller reduce-scatter pays NCCL's
 * latency again), so it is no planner candidate: it runs when named, a baseline of what Megatron-style NCCL overlap
 * gets, beside the copy-engine methods.
 */
record NcclPipeline(int splits, int margin) {
    static final String PREFIX = Candidate.NCCL + ":";
    private static final SequencedMap<String, String> KEYS = keys();

    NcclPipeline {
        if (splits < 2 || splits > 16) {
            throw new IllegalArgumentException("nccl: splits must be 2..16 (1 is the reference, \"nccl\"), got "
                    + splits);
        }
        if (margin < 0 || margin > 64) {
            throw new IllegalArgumentException("nccl: margin must be 0..64 SMs, got " + margin);
        }
    }

    private static SequencedMap<String, String> keys() {
        SequencedMap<String, String> k = new LinkedHashMap<>();
        k.put("splits", "GEMM column blocks, each reduce-scattered by NCCL while the next multiplies, 2..16");
        k.put("margin", "SMs each block GEMM leaves to NCCL's kernel, 0..64 (default 0)");
        return k;
    }

    /** {@code nccl:splits=S[,margin=M]}; an {@link IllegalArgumentException} names what is wrong. */
    static NcclPipeline parse(String label) {
        if (!label.startsWith(PREFIX) || label.length() == PREFIX.length()) {
            throw new IllegalArgumentException("'" + label + "': expected nccl:splits=S[,margin=M]");
        }
        Map<String, String> given = MethodOptions.parse(label, label.substring(PREFIX.length()), Candidate.NCCL,
                KEYS);
        MethodOptions o = new MethodOptions(Candidate.NCCL, KEYS, given);
        if (!given.containsKey("splits")) {
            throw new IllegalArgumentException("'" + label + "': nccl's options need splits (nccl:splits=4)");
        }
        return new NcclPipeline(o.intValue("splits", 0, 2, 16), o.intValue("margin", 0, 0, 64));
    }

    String label() {
        return PREFIX + "splits=" + splits + (margin == 0 ? "" : ",margin=" + margin);
    }
}
