package dev.ubuf.layers.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Absent keys take Transformer Engine's defaults (initialize_ub's get_default_config), which follow the GEMM's
 * default method: ring_exchange 1 SM, cluster 1, no SM margin, tp splits; pipeline and bulk 16 SMs, cluster 2,
 * SM margin, 4 splits.
 */
class TeDefaultsTest {

    @ParameterizedTest(name = "{0} (tp {1}): {2}, num_sm={3}, cga_size={4}, num_splits={5}, set_sm_margin={6}")
    @CsvSource({
            "qkv_fprop,  4, ring_exchange, 1, 1, 4, false",
            "fc1_fprop,  8, ring_exchange, 1, 1, 8, false",
            "proj_dgrad, 4, ring_exchange, 1, 1, 4, false",
            "fc2_dgrad,  2, ring_exchange, 1, 1, 2, false",
            "proj_fprop, 4, pipeline,     16, 2, 4, true",
            "fc2_fprop,  8, pipeline,     16, 2, 4, true",
            "qkv_dgrad,  4, bulk,         16, 2, 4, true",
            "qkv_wgrad,  4, bulk,         16, 2, 4, true",
            "fc1_dgrad,  8, bulk,         16, 2, 4, true",
            "fc1_wgrad,  8, bulk,         16, 2, 4, true",
            "proj_wgrad, 4, none,         16, 2, 4, true",
            "fc2_wgrad,  4, none,         16, 2, 4, true",
    })
    void anAbsentEntryGetsTesDefaults(String gemm, int tp, String method, int numSm, int cgaSize, int numSplits,
                                      boolean setSmMargin) {
        GemmOverlapConfig c = UbConfig.builder().tensorModelParallelSize(tp).build()
                .gemm(GemmName.parse(gemm).orElseThrow());
        assertEquals(method, c.method().configName());
        assertEquals(numSm, c.numSm());
        assertEquals(cgaSize, c.cgaSize());
        assertEquals(numSplits, c.numSplits());
        assertEquals(setSmMargin, c.setSmMargin());
        assertFalse(c.aggregate());
        assertTrue(c.useCe(), "copies go on the copy engines by default");
        assertFalse(c.atomicGemm());
        assertFalse(c.fp8Buf(), "TE's fp8_buf default only applies to FP8 runs (fp8 is off here)");
        assertFalse(c.pipelineRsOverlapFirstGemm());
        assertEquals(OptionalInt.empty(), c.commPriority(), "empty: the device's greatest priority");
        assertEquals(OptionalInt.empty(), c.gemmPriority(), "empty: the device's least priority");
        assertEquals(Set.of(), c.explicitKeys());
        assertEquals(GemmOverlapConfig.teDefault(GemmName.parse(gemm).orElseThrow(), tp), c);
    }

    @Test
    void configuredKeysReplaceOnlyThemselves() {
        GemmOverlapConfig c = UbConfig.builder().tensorModelParallelSize(4)
                .gemm(GemmName.PROJ_FPROP, g -> g.numSm(24).setSmMargin(false))
                .build().gemm(GemmName.PROJ_FPROP);
        assertEquals(UbMethod.PIPELINE, c.method());
        assertEquals(24, c.numSm());
        assertFalse(c.setSmMargin());
        assertEquals(2, c.cgaSize(), "default kept");
        assertEquals(4, c.numSplits(), "default kept");
        assertEquals(Set.of(GemmKey.NUM_SM, GemmKey.SET_SM_MARGIN), c.explicitKeys());
        assertTrue(c.isExplicit(GemmKey.NUM_SM));
        assertFalse(c.isExplicit(GemmKey.METHOD));
    }

    @Test
    void defaultsFollowTheGemmsDefaultMethodNotTheConfiguredOneAsInTe() {
        // TE builds the defaults from the GEMM's default method, then applies the user's keys on top.
        GemmOverlapConfig ringProj = UbConfig.builder().tensorModelParallelSize(4)
                .gemm(GemmName.PROJ_FPROP, g -> g.method(UbMethod.RING_EXCHANGE))
                .build().gemm(GemmName.PROJ_FPROP);
        assertEquals(UbMethod.RING_EXCHANGE, ringProj.method());
        assertEquals(16, ringProj.numSm(), "pipeline's default, as TE gives it");
        assertEquals(2, ringProj.cgaSize());
        assertTrue(ringProj.setSmMargin());
    }

    @Test
    void aDgradConfiguredWithRingExchangeTakesRingDefaultsBecauseTeMovesItToThatList() {
        GemmOverlapConfig c = UbConfig.builder().tensorModelParallelSize(8).overlapRsDgrad(true)
                .gemm(GemmName.QKV_DGRAD, g -> g.method(UbMethod.RING_EXCHANGE))
                .build().gemm(GemmName.QKV_DGRAD);
        assertEquals(UbMethod.RING_EXCHANGE, c.method());
        assertEquals(1, c.numSm());
        assertEquals(1, c.cgaSize());
        assertEquals(8, c.numSplits());
        assertFalse(c.setSmMargin());
    }

    @Test
    void ringExchangeSplitsFollowTheTensorParallelSize() {
        assertEquals(2, UbConfig.builder().tensorModelParallelSize(2).build().gemm(GemmName.QKV_FPROP).numSplits());
        assertEquals(8, UbConfig.builder().tensorModelParallelSize(8).build().gemm(GemmName.FC2_DGRAD).numSplits());
    }

    @Test
    void optionsListWhatTheMethodUses() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(4).build();
        assertEquals("aggregate=false use_ce=true num_sm=1 cga_size=1 set_sm_margin=false",
                c.gemm(GemmName.QKV_FPROP).options());
        assertEquals("num_splits=4 num_sm=16 cga_size=2 set_sm_margin=true", c.gemm(GemmName.FC2_FPROP).options());
        assertEquals("num_sm=16 cga_size=2 set_sm_margin=true", c.gemm(GemmName.QKV_WGRAD).options());
    }
}
