package dev.ubuf.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Entry-point names of the layer kernels (ubuf_layernorm.cu, ubuf_activation.cu, ubuf_colsum.cu, ubuf_train.cu; kernels/README.md
 * gives each one's parameters), so no caller spells them by hand. Every name ends in the element type's suffix.
 */
public final class LayerKernelNames {
    private LayerKernelNames() {
    }

    /** LayerNorm forward: y, and per-row fp32 mean and rstd. */
    public static String layerNormForward(KernelType type) {
        return "ubuf_layernorm_fwd_" + suffix(type);
    }

    /**
     * As {@link #layerNormForward} (the same bits), for rows of whole 16-byte words only: x and y rows, gamma and beta
     * 16-byte aligned, cols a multiple of the word, at most 4 words a thread.
     */
    public static String layerNormForwardWords(KernelType type) {
        return "ubuf_layernorm_fwd_words_" + suffix(type);
    }

    /**
     * As {@link #layerNormForwardWords} (the same bits) with each thread standing in for two of its block's: launched
     * on half the threads, at most 256.
     */
    public static String layerNormForwardWordsPaired(KernelType type) {
        return "ubuf_layernorm_fwd_words2_" + suffix(type);
    }

    /** LayerNorm backward, dx. */
    public static String layerNormBackwardDx(KernelType type) {
        return "ubuf_layernorm_bwd_dx_" + suffix(type);
    }

    /** LayerNorm backward in one pass: dx, and fp32 partial dgamma and dbeta per part of rows. */
    public static String layerNormBackward(KernelType type) {
        return "ubuf_layernorm_bwd_" + suffix(type);
    }

    /** As {@link #layerNormBackward}, its rows staged in shared memory ahead of use (dynamic shared memory). */
    public static String layerNormBackwardStaged(KernelType type) {
        return "ubuf_layernorm_bwd_staged_" + suffix(type);
    }

    /** LayerNorm backward, fp32 partial dgamma and dbeta per part of rows. */
    public static String layerNormBackwardParamsPartial(KernelType type) {
        return "ubuf_layernorm_bwd_params_partial_" + suffix(type);
    }

    /** fp32 partial column sums of a matrix of {@code type}, per part of rows. */
    public static String colSumsPartial(KernelType type) {
        return "ubuf_col_sums_partial_" + suffix(type);
    }

    /** The parts of fp32 partial column sums added into a row of {@code type}. */
    public static String colSumsF32To(KernelType type) {
        return "ubuf_col_sums_f32_to_" + suffix(type);
    }

    /** Two sets of fp32 partial column sums of the same shape added into two rows of {@code type}, one launch. */
    public static String colSums2F32To(KernelType type) {
        return "ubuf_col_sums2_f32_to_" + suffix(type);
    }

    public static String geluForward(KernelType type) {
        return "ubuf_gelu_fwd_" + suffix(type);
    }

    public static String geluBackward(KernelType type) {
        return "ubuf_gelu_bwd_" + suffix(type);
    }

    /** GELU over {@code n} elements of dense tensors, a 16-byte word a thread. */
    public static String geluForwardDense(KernelType type) {
        return "ubuf_gelu_fwd_dense_" + suffix(type);
    }

    /** GELU's backward over {@code n} elements of dense tensors, a 16-byte word a thread. */
    public static String geluBackwardDense(KernelType type) {
        return "ubuf_gelu_bwd_dense_" + suffix(type);
    }

    public static String biasGeluForward(KernelType type) {
        return "ubuf_bias_gelu_fwd_" + suffix(type);
    }

    /**
     * Bias + GELU forward without the pre-activation, a thread to a 16-byte word column:
     * {@code ubuf_bias_gelu_fwd_cols_<t>}.
     */
    public static String biasGeluForwardCols(KernelType type) {
        return "ubuf_bias_gelu_fwd_cols_" + suffix(type);
    }

    public static String swigluForward(KernelType type) {
        return "ubuf_swiglu_fwd_" + suffix(type);
    }

    /** SwiGLU forward, with or without fc1's bias, a thread per 16-byte word: {@code ubuf_swiglu_fwd_words_<t>}. */
    public static String swigluForwardWords(KernelType type) {
        return "ubuf_swiglu_fwd_words_" + suffix(type);
    }

    public static String swigluBackward(KernelType type) {
        return "ubuf_swiglu_bwd_" + suffix(type);
    }

    /** SwiGLU of fc1's output plus its bias, the sum rounded as a separate bias add would leave it. */
    public static String biasSwigluForward(KernelType type) {
        return "ubuf_bias_swiglu_fwd_" + suffix(type);
    }

    /** GELU's backward at x + bias, with the fp32 partial column sums of dx (the bias gradient's first step). */
    public static String biasGeluBackwardPartial(KernelType type) {
        return "ubuf_bias_gelu_bwd_partial_" + suffix(type);
    }

    /** SwiGLU's backward at x + bias, with the fp32 partial column sums of dx. */
    public static String biasSwigluBackwardPartial(KernelType type) {
        return "ubuf_bias_swiglu_bwd_partial_" + suffix(type);
    }

    /** Mean-squared-error gradient {@code dy = scale (y - target)} and per-row fp32 sums of {@code (y - target)^2}. */
    public static String mseGrad(KernelType type) {
        return "ubuf_mse_grad_" + suffix(type);
    }

    /** SGD step {@code w -= lr g}: w of {@code type}, g fp32. */
    public static String sgd(KernelType type) {
        return "ubuf_sgd_" + suffix(type);
    }

    /** Every layer kernel, sorted. */
    public static List<String> all() {
        List<String> names = new ArrayList<>();
        for (KernelType t : KernelType.values()) {
            names.add(layerNormForward(t));
            names.add(layerNormForwardWords(t));
            names.add(layerNormForwardWordsPaired(t));
            names.add(layerNormBackwardDx(t));
            names.add(layerNormBackward(t));
            names.add(layerNormBackwardStaged(t));
            names.add(layerNormBackwardParamsPartial(t));
            names.add(colSumsPartial(t));
            names.add(colSumsF32To(t));
            names.add(colSums2F32To(t));
            names.add(geluForward(t));
            names.add(geluBackward(t));
            names.add(geluForwardDense(t));
            names.add(geluBackwardDense(t));
            names.add(biasGeluForward(t));
            names.add(biasGeluForwardCols(t));
            names.add(swigluForward(t));
            names.add(swigluForwardWords(t));
            names.add(swigluBackward(t));
            names.add(biasSwigluForward(t));
            names.add(biasGeluBackwardPartial(t));
            names.add(biasSwigluBackwardPartial(t));
            names.add(mseGrad(t));
            names.add(sgd(t));
        }
        names.sort(null);
        return List.copyOf(names);
    }

    private static String suffix(KernelType type) {
        return Objects.requireNonNull(type, "type").suffix();
    }
}
