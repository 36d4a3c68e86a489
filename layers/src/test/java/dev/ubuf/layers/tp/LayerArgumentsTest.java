package dev.ubuf.layers.tp;

import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbConfig;
import dev.ubuf.tensor.DType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the context and the layers reject before any GPU work, each with a sentence naming the value. */
class LayerArgumentsTest {
    private static void rejects(String expected, org.junit.jupiter.api.function.Executable call) {
        var e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void contextChecksTpConfigDtypeAndMaxTokens() {
        UbConfig tp2 = UbConfig.builder().tensorModelParallelSize(2).build();
        assertDoesNotThrow(() -> TpContext.checkArguments(2, tp2, DType.BF16, 8192));
        rejects("need tp >= 2", () -> TpContext.checkArguments(1, UbConfig.builder().build(), DType.BF16, 8));
        rejects("tensor_model_parallel_size is 2 but the communicator has 4", () ->
                TpContext.checkArguments(4, tp2, DType.BF16, 8192));
        rejects("maxTokens = 8191 must be a positive multiple of tp = 2", () ->
                TpContext.checkArguments(2, tp2, DType.BF16, 8191));
        rejects("dtype must be fp32, fp16 or bf16", () -> TpContext.checkArguments(2, tp2, DType.FP8_E4M3, 8));
    }

    @Test
    void layersCheckTheirParallelismAndFeatureSplits() {
        rejects("fc2 is row-parallel", () -> ColumnParallelLinear.checkArguments(2, GemmName.Layer.FC2, 8, 8));
        rejects("outFeatures = 9 is not divisible by tp = 2", () ->
                ColumnParallelLinear.checkArguments(2, GemmName.Layer.QKV, 8, 9));
        rejects("qkv is column-parallel", () -> RowParallelLinear.checkArguments(2, GemmName.Layer.QKV, 8, 8));
        rejects("inFeatures = 6 is not divisible by tp = 4", () ->
                RowParallelLinear.checkArguments(4, GemmName.Layer.PROJ, 6, 8));
        rejects("features must be positive", () -> RowParallelLinear.checkArguments(2, GemmName.Layer.PROJ, 0, 8));
        rejects("ffn = 10 is not divisible by tp = 4", () ->
                LayerNormMLP.checkArguments(4, 16, 10, Activation.GELU));
        assertDoesNotThrow(() -> LayerNormMLP.checkArguments(2, 16, 10, Activation.SWIGLU));
        assertTrue(Activation.SWIGLU.fc1Outputs(10) == 20 && Activation.GELU.fc1Outputs(10) == 10);
    }

    @Test
    void withFp8EveryGemmDimensionMustBeAMultipleOf16() {
        UbConfig fp8 = UbConfig.builder().tensorModelParallelSize(2).fp8(true).build();
        assertDoesNotThrow(() -> TpContext.checkArguments(2, fp8, DType.BF16, 8192));
        rejects("maxTokens = 8200 must be a multiple of 16 with fp8", () ->
                TpContext.checkArguments(2, fp8, DType.BF16, 8200));
        assertDoesNotThrow(() -> TpContext.checkArguments(2, UbConfig.builder().tensorModelParallelSize(2).build(),
                DType.BF16, 8200));
        rejects("inFeatures (K) = 40 must be a multiple of 16 with fp8", () ->
                ColumnParallelLinear.checkFp8(true, 2, GemmName.Layer.QKV, 40, 64));
        rejects("outFeatures / tp (this rank's N) = 24 must be a multiple of 16", () ->
                ColumnParallelLinear.checkFp8(true, 2, GemmName.Layer.FC1, 64, 48));
        rejects("inFeatures / tp (this rank's K) = 8 must be a multiple of 16", () ->
                RowParallelLinear.checkFp8(true, 2, GemmName.Layer.PROJ, 16, 64));
        rejects("fc2: outFeatures (N) = 72 must be a multiple of 16", () ->
                RowParallelLinear.checkFp8(true, 2, GemmName.Layer.FC2, 64, 72));
        // SwiGLU doubles fc1's outputs: ffn/tp = 8 fails on fc2's K even where fc1's 2 ffn/tp = 16 would pass.
        rejects("fc2: inFeatures / tp (this rank's K) = 8", () ->
                LayerNormMLP.checkFp8(true, 2, 64, 16, Activation.SWIGLU));
        assertDoesNotThrow(() -> LayerNormMLP.checkFp8(true, 2, 64, 32, Activation.GELU));
        assertDoesNotThrow(() -> LayerNormMLP.checkFp8(false, 2, 63, 10, Activation.GELU), "only with fp8");
    }

    @Test
    void overlappedLayersRefuseOneHardwareQueue() {
        var why = TpContext.oneHardwareQueue(java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "1"), true);
        assertTrue(why.isPresent() && why.get().contains("CUDA_DEVICE_MAX_CONNECTIONS=1")
                && why.get().contains("ub_tp_comm_overlap: false"), why.toString());
        assertTrue(TpContext.oneHardwareQueue(java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", " 1 "), true)
                .isPresent());
        assertTrue(TpContext.oneHardwareQueue(java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "1"), false).isEmpty(),
                "nothing overlapped: NCCL and GEMMs on the caller's stream run on one queue");
        assertTrue(TpContext.oneHardwareQueue(java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "2"), true).isEmpty());
        assertTrue(TpContext.oneHardwareQueue(java.util.Map.of(), true).isEmpty());
    }

    @Test
    void graphCapturableOverlappedLayersNeedThirtyTwoHardwareQueues() {
        for (java.util.Map<String, String> env : java.util.List.of(java.util.Map.<String, String>of(),
                java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "8"),
                java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "31"),
                java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", "many"))) {
            var why = TpContext.fewQueuesForGraphs(env, true);
            assertTrue(why.isPresent() && why.get().contains("CUDA_DEVICE_MAX_CONNECTIONS=32"), env + ": " + why);
        }
        assertTrue(TpContext.fewQueuesForGraphs(java.util.Map.of(), true).orElseThrow().contains("unset, so 8"));
        assertTrue(TpContext.fewQueuesForGraphs(java.util.Map.of("CUDA_DEVICE_MAX_CONNECTIONS", " 32 "), true)
                .isEmpty());
        assertTrue(TpContext.fewQueuesForGraphs(java.util.Map.of(), false).isEmpty(),
                "eager ops (stream memory operations) or nothing overlapped: no such need");
    }
}
