package dev.ubuf.bench;

import dev.ubuf.ag.AgShape;
import dev.ubuf.op.OverlapShape;
import dev.ubuf.rs.RsShape;
import dev.ubuf.tensor.DType;

import java.util.ArrayList;
import java.util.List;

/**
 * The tensor-parallel GEMMs of real transformer layers: per model, QKV and FC1 as AllGather→GEMM (column-parallel),
 * the attention output projection and FC2 as GEMM→ReduceScatter (row-parallel), split over tp ranks. A gated MLP
 * (SwiGLU) has FC1 = 2 × FFN columns.
 *
 * @param attention whether the model's layer has attention GEMMs in the sweep (an expert MLP alone does not)
 */
public record ModelShapes(String name, int hidden, int ffn, int queryHeads, int kvHeads, int headDim, boolean gated,
                          boolean attention) {

    public static final List<ModelShapes> SWEEP = List.of(
            new ModelShapes("llama3-8b", 4096, 14336, 32, 8, 128, true, true),
            new ModelShapes("llama3-70b", 8192, 28672, 64, 8, 128, true, true),
            new ModelShapes("qwen2.5-32b", 5120, 27648, 40, 8, 128, true, true),
            new ModelShapes("mixtral-8x7b-expert", 4096, 14336, 32, 8, 128, true, false),
            new ModelShapes("gpt3-175b", 12288, 49152, 96, 96, 128, false, true));

    /** Tokens of the sweep, and the small ones run on the first model only. */
    public static final List<Integer> TOKENS = List.of(1024, 2048, 4096, 8192, 16384);
    public static final List<Integer> SMALL_TOKENS = List.of(256, 512);

    /** One GEMM of a model at a token count, named like TE's ub_cfgs keys. */
    public record Gemm(String model, String name, OverlapShape shape) {
    }

    /** This model's TP GEMMs at {@code tokens} rows over {@code tp} ranks. */
    public List<Gemm> gemms(int tp, long tokens, DType t) {
        List<Gemm> g = new ArrayList<>();
        long qkv = (long) (queryHeads + 2L * kvHeads) * headDim;
        long fc1 = gated ? 2L * ffn : ffn;
        if (attention) {
            g.add(new Gemm(name, "qkv_fprop", new AgShape(tp, tokens, hidden, qkv / tp, t)));
            g.add(new Gemm(name, "proj_fprop", new RsShape(tp, tokens, (long) queryHeads * headDim / tp, hidden, t,
                    false)));
        }
        g.add(new Gemm(name, "fc1_fprop", new AgShape(tp, tokens, hidden, fc1 / tp, t)));
        g.add(new Gemm(name, "fc2_fprop", new RsShape(tp, tokens, ffn / tp, hidden, t, false)));
        return g;
    }

    /** The whole sweep: every model at every token count, and the small token counts on the first model. */
    public static List<Gemm> sweep(int tp, DType t, List<Integer> tokens) {
        List<Gemm> all = new ArrayList<>();
        for (ModelShapes m : SWEEP) {
            for (int n : tokens) {
                all.addAll(m.gemms(tp, n, t));
            }
        }
        for (int n : SMALL_TOKENS) {
            all.addAll(SWEEP.getFirst().gemms(tp, n, t));
        }
        return all;
    }
}
