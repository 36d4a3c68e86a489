package dev.ubuf.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class KernelNamesTest {

    @Test
    void namesFollowTheReadme() {
        assertEquals("ubuf_sum_bf16", KernelNames.sum(KernelType.BF16));
        assertEquals("ubuf_sum_f32", KernelNames.sumF32To(KernelType.F32), "fp32 -> fp32 is the plain fp32 sum");
        assertEquals("ubuf_sum_f32_to_f16", KernelNames.sumF32To(KernelType.F16));
        assertEquals("ubuf_sum_dense_bf16", KernelNames.sumDense(KernelType.BF16));
        assertEquals("ubuf_sum_dense_f32", KernelNames.sumDenseF32To(KernelType.F32));
        assertEquals("ubuf_sum_dense_f32_to_bf16", KernelNames.sumDenseF32To(KernelType.BF16));
        assertEquals("ubuf_cast_f32_to_bf16", KernelNames.castF32To(KernelType.BF16));
        assertEquals("ubuf_add_bias_f32", KernelNames.addBias(KernelType.F32));
        assertEquals("ubuf_fill_random_f16", KernelNames.fillRandom(KernelType.F16));
        assertEquals(List.of("ubuf_fill_u8", "ubuf_fill_u16", "ubuf_fill_u32"),
                List.of(KernelNames.fill(1), KernelNames.fill(2), KernelNames.fill(4)));
    }

    @Test
    void allHasOneHundredTwentyFourDistinctKernelsSeventyTwoOfThemLayerKernelsAndTwentyFiveFp8Kernels() {
        List<String> all = KernelNames.all();
        assertEquals(124, all.size());
        assertEquals(124, all.stream().distinct().count());
        assertEquals(72, LayerKernelNames.all().size());
        assertTrue(all.containsAll(LayerKernelNames.all()));
        assertEquals(25, Fp8KernelNames.all().size());
        assertTrue(all.containsAll(Fp8KernelNames.all()));
    }

    @Test
    void fp8KernelNamesFollowTheReadme() {
        assertEquals("ubuf_fp8_quantize_bf16_to_e4m3", Fp8KernelNames.quantize(KernelType.BF16, "e4m3"));
        assertEquals("ubuf_fp8_quantize_transpose_f32_to_e5m2",
                Fp8KernelNames.quantizeTranspose(KernelType.F32, "e5m2"));
        assertEquals("ubuf_fp8_dequantize_e5m2_to_f16", Fp8KernelNames.dequantize("e5m2", KernelType.F16));
        assertEquals("ubuf_fp8_amax_bf16", Fp8KernelNames.amax(KernelType.BF16));
        assertThrows(IllegalArgumentException.class, () -> Fp8KernelNames.quantize(KernelType.F32, "e3m4"));
    }

    @Test
    void layerKernelNamesFollowTheReadme() {
        assertEquals("ubuf_layernorm_fwd_bf16", LayerKernelNames.layerNormForward(KernelType.BF16));
        assertEquals("ubuf_layernorm_bwd_dx_f16", LayerKernelNames.layerNormBackwardDx(KernelType.F16));
        assertEquals("ubuf_layernorm_bwd_bf16", LayerKernelNames.layerNormBackward(KernelType.BF16));
        assertEquals("ubuf_mse_grad_bf16", LayerKernelNames.mseGrad(KernelType.BF16));
        assertEquals("ubuf_sgd_f32", LayerKernelNames.sgd(KernelType.F32));
        assertEquals("ubuf_layernorm_bwd_params_partial_f32",
                LayerKernelNames.layerNormBackwardParamsPartial(KernelType.F32));
        assertEquals("ubuf_col_sums_partial_bf16", LayerKernelNames.colSumsPartial(KernelType.BF16));
        assertEquals("ubuf_col_sums_f32_to_f32", LayerKernelNames.colSumsF32To(KernelType.F32));
        assertEquals("ubuf_col_sums2_f32_to_bf16", LayerKernelNames.colSums2F32To(KernelType.BF16));
        assertEquals("ubuf_gelu_fwd_f16", LayerKernelNames.geluForward(KernelType.F16));
        assertEquals("ubuf_gelu_bwd_bf16", LayerKernelNames.geluBackward(KernelType.BF16));
        assertEquals("ubuf_gelu_fwd_dense_f32", LayerKernelNames.geluForwardDense(KernelType.F32));
        assertEquals("ubuf_gelu_bwd_dense_bf16", LayerKernelNames.geluBackwardDense(KernelType.BF16));
        assertEquals("ubuf_bias_gelu_fwd_f32", LayerKernelNames.biasGeluForward(KernelType.F32));
        assertEquals("ubuf_swiglu_fwd_bf16", LayerKernelNames.swigluForward(KernelType.BF16));
        assertEquals("ubuf_swiglu_bwd_f16", LayerKernelNames.swigluBackward(KernelType.F16));
    }

    @Test
    void kernelsThatDoNotExistAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> KernelNames.castF32To(KernelType.F32));
        assertThrows(IllegalArgumentException.class, () -> KernelNames.fill(8));
        assertThrows(NullPointerException.class, () -> KernelNames.sum(null));
    }

    @Test
    void sumSourcesPackIntoEightSlotsZeroPadded() {
        assertArrayEquals(new long[] {0x1000, 0x2000, 0, 0, 0, 0, 0, 0}, SumSources.pack(0x1000, 0x2000));
        assertEquals(SumSources.BYTES, Long.BYTES * SumSources.pack(1, 2, 3, 4, 5, 6, 7, 8).length);
        assertThrows(IllegalArgumentException.class, () -> SumSources.pack());
        assertThrows(IllegalArgumentException.class, () -> SumSources.pack(1, 2, 3, 4, 5, 6, 7, 8, 9));
        assertThrows(IllegalArgumentException.class, () -> SumSources.pack(0x1000, 0));
    }

    @Test
    void typesRoundToNearestEvenLikeTheDeviceStores() {
        assertEquals(0x3f80, KernelType.BF16.encode(1.0f));
        assertEquals(0x3f80, KernelType.BF16.encode(Float.intBitsToFloat(0x3f808000)), "tie to even (down)");
        assertEquals(0x3f82, KernelType.BF16.encode(Float.intBitsToFloat(0x3f818000)), "tie to even (up)");
        assertEquals(0x3c00, KernelType.F16.encode(1.0f));
        assertEquals(0x7e00, KernelType.F16.encode(Float.NaN));
        assertEquals(Float.NaN, KernelType.BF16.round(Float.NaN));
        assertEquals(8, KernelType.BF16.elementsPer16Bytes());
        assertEquals(4, KernelType.F32.elementsPer16Bytes());
    }
}
