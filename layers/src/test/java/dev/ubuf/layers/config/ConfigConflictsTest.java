package dev.ubuf.layers.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Settings that contradict the GEMM, the flags or each other are rejected, naming the key and where it was
 * written (file:line:column for files).
 */
class ConfigConflictsTest {

    static UbConfig.Builder tp(int tp) {
        return UbConfig.builder().tensorModelParallelSize(tp).sequenceParallel(true).tpCommOverlap(true);
    }

    static UbConfigException rejected(UbConfig.Builder base, String yaml) {
        return assertThrows(UbConfigException.class, () -> base.load(yaml, "layer.yaml", ConfigFormat.YAML).build());
    }

    static void assertProblem(UbConfigException e, String key, int line, int column, String... phrases) {
        assertEquals(key, e.key(), e.getMessage());
        assertEquals(ConfigOrigin.file("layer.yaml", line, column), e.origin(), e.getMessage());
        assertTrue(e.getMessage().startsWith("layer.yaml:" + line + ":" + column + ": " + key + ": "), e.getMessage());
        for (String p : phrases) {
            assertTrue(e.getMessage().contains(p), () -> "'" + p + "' missing from: " + e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad"})
    void pipelineOnAnAllGatherGemmIsRejected(String gemm) {
        UbConfigException e = rejected(tp(4), gemm + ":\n  method: pipeline\n");
        assertProblem(e, gemm + ".method", 2, 11, "pipeline overlaps a reduce-scatter", "use ring_exchange");
    }

    @ParameterizedTest
    @ValueSource(strings = {"qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad", "proj_fprop", "fc2_fprop"})
    void bulkOutsideTheDgradAndWgradOfQkvAndFc1IsRejected(String gemm) {
        UbConfigException e = rejected(tp(4), gemm + ":\n  method: bulk\n");
        assertProblem(e, gemm + ".method", 2, 11, "bulk overlaps only the dgrad and wgrad of qkv and fc1");
    }

    @Test
    void ringExchangeIsAllowedForAllGatherAndReduceScatterGemms() {
        UbConfig c = tp(4).load("""
                qkv_fprop: {method: ring_exchange}
                proj_dgrad: {method: ring_exchange}
                proj_fprop: {method: ring_exchange}
                fc2_fprop: {method: ring_exchange}
                """, "layer.yaml", ConfigFormat.YAML).build();
        assertEquals(UbMethod.RING_EXCHANGE, c.gemm(GemmName.PROJ_FPROP).method());
        assertEquals(UbMethod.RING_EXCHANGE, c.methodTable().entry(GemmName.FC2_FPROP).orElseThrow().method());
    }

    @ParameterizedTest
    @ValueSource(strings = {"ring_exchange", "pipeline"})
    void aNonBulkWgradIsRejected(String method) {
        UbConfigException e = rejected(tp(4), "fc1_wgrad:\n  num_sm: 4\n  method: " + method + "\n");
        assertProblem(e, "fc1_wgrad.method", 3, 11, "only bulk (or auto) applies");
    }

    @Test
    void aReduceScatterMethodOnQkvDgradNeedsUbOverlapRsDgrad() {
        UbConfigException e = rejected(tp(4), "qkv_dgrad:\n  method: ring_exchange\n");
        assertProblem(e, "qkv_dgrad.method", 2, 11, "needs ub_overlap_rs_dgrad: true",
                "bulk all-gather of ub_bulk_dgrad");
        UbConfig ok = tp(4).overlapRsDgrad(true)
                .load("qkv_dgrad:\n  method: ring_exchange\n", "layer.yaml", ConfigFormat.YAML).build();
        assertEquals(UbMethod.RING_EXCHANGE, ok.methodTable().entry(GemmName.QKV_DGRAD).orElseThrow().method());
    }

    @Test
    void theWgradOfADgradThatReduceScattersCannotBeConfiguredAsInTe() {
        UbConfigException e = rejected(tp(4).overlapRsDgrad(true), """
                fc1_dgrad:
                  method: pipeline
                fc1_wgrad:
                  method: bulk
                """);
        assertProblem(e, "fc1_wgrad", 3, 1, "cannot be configured while fc1_dgrad.method is pipeline (layer.yaml:2:11)");
    }

    @Test
    void aBulkDgradEntryUnderUbOverlapRsDgradRunsAsAPipelinedReduceScatter() {
        UbConfig c = tp(4).overlapRsDgrad(true).load("""
                qkv_dgrad: {method: bulk, num_sm: 8}
                qkv_wgrad: {method: bulk, num_sm: 4}
                """, "layer.yaml", ConfigFormat.YAML).build();
        MethodTable.Entry dgrad = c.methodTable().entry(GemmName.QKV_DGRAD).orElseThrow();
        assertEquals(UbMethod.PIPELINE, dgrad.method());
        assertEquals(8, dgrad.options().orElseThrow().numSm());
        assertTrue(dgrad.reason().contains("bulk entry run as a pipelined reduce-scatter"), dgrad.reason());
        assertEquals(UbMethod.NONE, c.methodTable().entry(GemmName.QKV_WGRAD).orElseThrow().method());
    }

    @Test
    void aggregateNeedsAnEvenTensorParallelSize() {
        UbConfigException e = rejected(tp(3), "qkv_fprop:\n  method: ring_exchange\n  aggregate: 1\n");
        assertProblem(e, "qkv_fprop.aggregate", 3, 14, "needs an even tensor-parallel size",
                "tensor_model_parallel_size is 3 (builder)");
        UbConfigException fromFile = rejected(UbConfig.builder(),
                "tensor_model_parallel_size: 5\nfc2_dgrad:\n  aggregate: true\n");
        assertProblem(fromFile, "fc2_dgrad.aggregate", 3, 14, "tensor_model_parallel_size is 5 (layer.yaml:1:29)");
        assertTrue(tp(4).load("fc1_fprop: {aggregate: 1}", "layer.yaml", ConfigFormat.YAML).build()
                .gemm(GemmName.FC1_FPROP).aggregate());
    }

    @Test
    void aggregateAppliesOnlyToRingExchangeAllGathers() {
        UbConfigException e = rejected(tp(4), "proj_fprop:\n  aggregate: 1\n");
        assertProblem(e, "proj_fprop.aggregate", 2, 14, "applies only to ring_exchange all-gather overlaps");
    }

    @Test
    void ringExchangeRunsTpStepsSoOtherSplitCountsAreRejected() {
        UbConfigException e = rejected(tp(4), "qkv_fprop:\n  num_splits: 3\n");
        assertProblem(e, "qkv_fprop.num_splits", 2, 15, "always runs tensor_model_parallel_size = 4 steps");
        assertEquals(4, tp(4).load("qkv_fprop: {num_splits: 4}", "layer.yaml", ConfigFormat.YAML).build()
                .gemm(GemmName.QKV_FPROP).numSplits());
    }

    @Test
    void numSplitsBelowOneIsRejected() {
        assertProblem(rejected(tp(4), "proj_fprop:\n  num_splits: 0\n"), "proj_fprop.num_splits", 2, 15,
                "num_splits must be >= 1, got 0");
    }

    @Test
    void negativeNumSmIsRejected() {
        assertProblem(rejected(tp(4), "fc2_fprop:\n  num_sm: -2\n"), "fc2_fprop.num_sm", 2, 11,
                "num_sm must be >= 0, got -2");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 3, 5, 16})
    void cgaSizeOutsideOneTwoFourEightIsRejected(int cga) {
        assertProblem(rejected(tp(4), "qkv_wgrad:\n  cga_size: " + cga + "\n"), "qkv_wgrad.cga_size", 2, 13,
                "cga_size must be 1, 2, 4 or 8");
    }

    @Test
    void isReduceScatterMustAgreeWithTheGemm() {
        assertProblem(rejected(tp(4), "qkv_fprop:\n  is_reduce_scatter: true\n"), "qkv_fprop.is_reduce_scatter",
                2, 22, "carries no reduce-scatter");
        UbConfig ok = tp(4).load("proj_fprop: {is_reduce_scatter: true}\nqkv_wgrad: {is_reduce_scatter: 1}\n",
                "layer.yaml", ConfigFormat.YAML).build();
        assertTrue(ok.gemm(GemmName.QKV_WGRAD).isExplicit(GemmKey.IS_REDUCE_SCATTER));
    }

    @Test
    void projAndFc2WgradHaveNoMethodToConfigure() {
        assertProblem(rejected(tp(4), "proj_wgrad:\n  method: ring_exchange\n"), "proj_wgrad.method", 2, 11,
                "has no communication of its own");
        // Other keys of such an entry are accepted (TE creates a communicator for it).
        assertEquals(8, tp(4).load("fc2_wgrad: {num_sm: 8}", "layer.yaml", ConfigFormat.YAML).build()
                .gemm(GemmName.FC2_WGRAD).numSm());
    }

    @Test
    void aTensorParallelSizeBelowOneIsRejected() {
        assertProblem(rejected(UbConfig.builder(), "tensor_model_parallel_size: 0\n"), "tensor_model_parallel_size",
                1, 29, "must be >= 1");
    }

    @Test
    void contradictionsFromTheBuilderNameTheBuilder() {
        UbConfigException e = assertThrows(UbConfigException.class, () -> tp(4)
                .gemm(GemmName.FC1_FPROP, g -> g.method(UbMethod.PIPELINE)).build());
        assertEquals("builder: fc1_fprop.method: pipeline: pipeline overlaps a reduce-scatter, but fc1_fprop consumes"
                + " an all-gather (TE rejects it too); use ring_exchange or auto", e.getMessage());
    }

    @Test
    void recordsBuiltDirectlyGetTheSameChecks() {
        UbConfig good = tp(4).build();
        java.util.Map<GemmName, GemmOverlapConfig> gemms = new java.util.EnumMap<>(good.gemms());
        GemmOverlapConfig d = gemms.get(GemmName.QKV_FPROP);
        gemms.put(GemmName.QKV_FPROP, new GemmOverlapConfig(GemmName.QKV_FPROP, UbMethod.PIPELINE, d.numSm(),
                d.cgaSize(), d.numSplits(), d.setSmMargin(), false, true, false, false, d.commPriority(),
                d.gemmPriority(), false, java.util.Set.of(GemmKey.METHOD)));
        UbConfigException e = assertThrows(UbConfigException.class, () -> new UbConfig(true, true, true, false, true,
                true, java.util.Optional.empty(), true, 4, gemms));
        assertEquals("qkv_fprop.method", e.key());
    }
}
