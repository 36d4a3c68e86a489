package dev.ubuf.op;

/** The collective an overlapped GEMM hides: the two families of overlap methods. */
public enum Collective {
    /** out[M, N] = allgather_rows(x_shard[M/tp, K]) * W[K, N] (column-parallel fprop, e.g. qkv/fc1). */
    ALL_GATHER("ag"),
    /** out[M/tp, N] = reducescatter_rows(x[M, K] * W[K, N]) (row-parallel fprop, e.g. proj/fc2). */
    REDUCE_SCATTER("rs");

    private final String resultName;

    Collective(String resultName) {
        this.resultName = resultName;
    }

    /** "ag" or "rs": the {@code op} of plans and results files. */
    public String resultName() {
        return resultName;
    }

    public static Collective parse(String s) {
        for (Collective c : values()) {
            if (c.resultName.equalsIgnoreCase(s) || c.name().equalsIgnoreCase(s)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + s + "' (expected ag or rs)");
    }
}
