package dev.ubuf.layers.config;

import dev.ubuf.fp8.Fp8Recipe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Map;
import java.util.Optional;

import static dev.ubuf.layers.config.ConfigConflictsTest.assertProblem;
import static dev.ubuf.layers.config.ConfigConflictsTest.rejected;
import static dev.ubuf.layers.config.ConfigConflictsTest.tp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FP8 keys of a configuration (fp8, fp8_recipe, fp8_format, fp8_margin, fp8_amax_history_len,
 * fp8_amax_compute_algo) and fp8_buf: each value is read into the recipe TE's users expect, TE's defaults fill the
 * rest, and every contradiction is rejected naming the key and its file position.
 */
class Fp8ConfigTest {

    private static UbConfig load(String yaml) {
        return tp(4).load(yaml, "layer.yaml", ConfigFormat.YAML).build();
    }

    @Test
    void fp8IsOffUnlessAskedForAndThenTakesTesDelayedScalingDefaults() {
        assertEquals(Optional.empty(), load("").fp8());
        assertFalse(load("fp8: false").fp8Enabled());
        UbConfig c = load("fp8: true");
        assertEquals(Optional.of(Fp8Recipe.DelayedScaling.TE_DEFAULT), c.fp8());
        assertTrue(c.explain().startsWith("FP8: fp8_recipe=delayed fp8_format=hybrid"), c.explain());
        assertTrue(c.methodTable().describe().contains(" fp8=true fp8_recipe=delayed"), c.methodTable().describe());
    }

    @Test
    void everyDelayedScalingKeyIsRead() {
        UbConfig c = load("fp8: 1\nfp8_recipe: delayed\nfp8_format: e4m3\nfp8_margin: 2\nfp8_amax_history_len: 16\n"
                + "fp8_amax_compute_algo: most_recent\n");
        assertEquals(Optional.of(new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.E4M3, 16, 2,
                Fp8Recipe.AmaxCompute.MOST_RECENT)), c.fp8());
    }

    @ParameterizedTest
    @ValueSource(strings = {"current", "tensorwise"})
    void currentScalingIsReadUnderEitherName(String name) {
        UbConfig c = load("fp8: true\nfp8_recipe: " + name + "\n");
        assertEquals(Optional.of(new Fp8Recipe.CurrentScaling(Fp8Recipe.Formats.HYBRID)), c.fp8());
    }

    @Test
    void megatronsFormatStringTurnsFp8OnWithThatFormat() {
        assertEquals(Optional.of(new Fp8Recipe.DelayedScaling(Fp8Recipe.Formats.E4M3, 1024, 0,
                Fp8Recipe.AmaxCompute.MAX)), load("fp8: e4m3").fp8());
        assertEquals(Fp8Recipe.Formats.HYBRID, load("fp8: hybrid").fp8().orElseThrow().formats());
        assertProblem(rejected(tp(4), "fp8: e4m3\nfp8_format: hybrid\n"), "fp8_format", 2, 13, "contradicts");
        assertProblem(rejected(tp(4), "fp8: e5m2\n"), "fp8", 1, 6, "hybrid or e4m3", "\"e5m2\"");
    }

    @Test
    void theTypedBuilderMakesTheSameRecipeAsAFile() {
        UbConfig typed = tp(4).fp8(true).fp8Recipe(Fp8Key.Recipe.DELAYED).fp8Format(Fp8Recipe.Formats.HYBRID)
                .fp8Margin(1).fp8AmaxHistoryLen(8).fp8AmaxComputeAlgo(Fp8Recipe.AmaxCompute.MAX).build();
        assertEquals(load("fp8: true\nfp8_margin: 1\nfp8_amax_history_len: 8\n").fp8(), typed.fp8());
        UbConfig fromMap = UbConfig.fromMap(Map.of("fp8", true, "fp8_recipe", "current", "fp8_format", "e4m3"));
        assertEquals(Optional.of(new Fp8Recipe.CurrentScaling(Fp8Recipe.Formats.E4M3)), fromMap.fp8());
    }

    @ParameterizedTest
    @ValueSource(strings = {"fp8_recipe: current", "fp8_format: hybrid", "fp8_margin: 0", "fp8_amax_history_len: 4",
            "fp8_amax_compute_algo: max"})
    void aRecipeKeyWithoutFp8IsRejected(String line) {
        String key = line.substring(0, line.indexOf(':'));
        UbConfigException off = rejected(tp(4), "fp8: false\n" + line + "\n");
        assertProblem(off, key, 2, key.length() + 3, "has no effect: fp8 is false (layer.yaml:1:6)");
        UbConfigException absent = rejected(tp(4), line + "\n");
        assertProblem(absent, key, 1, key.length() + 3, "fp8 is not set (false)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"fp8_margin: 1", "fp8_amax_history_len: 4", "fp8_amax_compute_algo: most_recent"})
    void aDelayedScalingKeyUnderCurrentScalingIsRejected(String line) {
        String key = line.substring(0, line.indexOf(':'));
        UbConfigException e = rejected(tp(4), "fp8: true\nfp8_recipe: current\n" + line + "\n");
        assertProblem(e, key, 3, key.length() + 3, "applies to delayed scaling only",
                "fp8_recipe is current (layer.yaml:2:13)");
    }

    @Test
    void badValuesAreRejectedWithTheirPosition() {
        assertProblem(rejected(tp(4), "fp8: true\nfp8_recipe: mxfp8\n"), "fp8_recipe", 2, 13, "not supported",
                "whole");
        assertProblem(rejected(tp(4), "fp8: true\nfp8_recipe: lazy\n"), "fp8_recipe", 2, 13, "delayed or current");
        assertProblem(rejected(tp(4), "fp8: true\nfp8_format: e5m2\n"), "fp8_format", 2, 13, "hybrid");
        assertProblem(rejected(tp(4), "fp8: true\nfp8_margin: -1\n"), "fp8_margin", 2, 13, "must be >= 0, got -1");
        assertProblem(rejected(tp(4), "fp8: true\nfp8_amax_history_len: 0\n"), "fp8_amax_history_len", 2, 23,
                "must be >= 1, got 0");
        assertProblem(rejected(tp(4), "fp8: true\nfp8_amax_compute_algo: mean\n"), "fp8_amax_compute_algo", 2, 24,
                "max or most_recent");
        assertProblem(rejected(tp(4), "fp8: yes please\n"), "fp8", 1, 6, "true or false");
    }

    @Test
    void fp8BufDefaultsToTesTableWithFp8On() {
        UbConfig c = load("fp8: true");
        for (GemmName g : GemmName.values()) {
            boolean allGather = g == GemmName.QKV_FPROP || g == GemmName.FC1_FPROP || g == GemmName.PROJ_DGRAD
                    || g == GemmName.FC2_DGRAD || g == GemmName.QKV_DGRAD || g == GemmName.FC1_DGRAD;
            assertEquals(allGather, c.gemm(g).fp8Buf(), g.teName());
            assertEquals(GemmOverlapConfig.teDefault(g, 4, true, false), c.gemm(g), g.teName());
        }
        assertTrue(c.methodTable().describe().contains("fp8_buf=true"), c.methodTable().describe());
        // With ub_overlap_rs_dgrad the qkv/fc1 dgrads reduce-scatter dX: no FP8 buffer there (TE moves them too).
        UbConfig rs = tp(4).overlapRsDgrad(true).load("fp8: true", "layer.yaml", ConfigFormat.YAML).build();
        assertFalse(rs.gemm(GemmName.QKV_DGRAD).fp8Buf());
        assertFalse(rs.gemm(GemmName.FC1_DGRAD).fp8Buf());
        assertTrue(rs.gemm(GemmName.QKV_FPROP).fp8Buf());
        for (GemmName g : GemmName.values()) {
            assertFalse(load("").gemm(g).fp8Buf(), "fp8 off: " + g);
        }
    }

    @Test
    void anExplicitTrueOnAnAllGatherGemmIsAccepted() {
        UbConfig c = load("fp8: true\nqkv_fprop:\n  method: ring_exchange\n  fp8_buf: 1\n");
        assertTrue(c.gemm(GemmName.QKV_FPROP).fp8Buf());
        assertTrue(c.gemm(GemmName.QKV_FPROP).isExplicit(GemmKey.FP8_BUF));
    }

    @Test
    void fp8BufWithoutFp8IsRejected() {
        UbConfigException e = rejected(tp(4), "qkv_fprop:\n  fp8_buf: true\n");
        assertProblem(e, "qkv_fprop.fp8_buf", 2, 12, "true needs fp8: true", "fp8 is off (default)");
        UbConfigException off = rejected(tp(4), "fp8: false\nproj_dgrad:\n  fp8_buf: true\n");
        assertProblem(off, "proj_dgrad.fp8_buf", 3, 12, "fp8 is off (layer.yaml:1:6)");
        // false is always fine without FP8 (Megatron-LM files write fp8_buf: 0).
        assertFalse(load("qkv_fprop:\n  fp8_buf: 0\n").gemm(GemmName.QKV_FPROP).fp8Buf());
    }

    @ParameterizedTest
    @ValueSource(strings = {"proj_fprop", "fc2_fprop", "qkv_wgrad", "fc1_wgrad", "proj_wgrad"})
    void fp8BufOnAGemmThatDoesNotAllGatherIsRejected(String gemm) {
        UbConfigException e = rejected(tp(4), "fp8: true\n" + gemm + ":\n  fp8_buf: true\n");
        assertProblem(e, gemm + ".fp8_buf", 3, 12, "true applies to all-gather GEMMs", "never in FP8");
    }

    @Test
    void fp8BufOnADgradThatReduceScattersIsRejected() {
        UbConfigException e = rejected(tp(4).overlapRsDgrad(true), "fp8: true\nfc1_dgrad:\n  fp8_buf: true\n");
        assertProblem(e, "fc1_dgrad.fp8_buf", 3, 12, "reduce-scatter");
    }

    @Test
    void fp8BufFalseOnAnAllGatherGemmUnderFp8IsRejected() {
        UbConfigException e = rejected(tp(4), "fp8: true\nfc2_dgrad:\n  method: ring_exchange\n  fp8_buf: false\n");
        assertProblem(e, "fc2_dgrad.fp8_buf", 4, 12, "false is not possible with fp8: true", "remove the key");
        // On a reduce-scatter GEMM false is what runs anyway.
        assertFalse(load("fp8: true\nproj_fprop:\n  fp8_buf: 0\n").gemm(GemmName.PROJ_FPROP).fp8Buf());
    }

    @Test
    void aRecordBuiltDirectlyGetsTheSameFp8BufChecks() {
        GemmOverlapConfig on = GemmOverlapConfig.teDefault(GemmName.QKV_FPROP, 2, true, false);
        java.util.EnumMap<GemmName, GemmOverlapConfig> gemms = new java.util.EnumMap<>(GemmName.class);
        for (GemmName g : GemmName.values()) {
            gemms.put(g, g == GemmName.QKV_FPROP ? on : GemmOverlapConfig.teDefault(g, 2));
        }
        UbConfigException e = assertThrows(UbConfigException.class, () -> new UbConfig(true, true, true, false, true,
                true, Optional.empty(), true, 2, gemms));
        assertTrue(e.getMessage().contains("qkv_fprop.fp8_buf: true needs fp8: true"), e.getMessage());
        UbConfig fine = new UbConfig(true, true, true, false, true, true, Optional.empty(), true, 2, gemms,
                Optional.of(Fp8Recipe.DelayedScaling.TE_DEFAULT));
        assertTrue(fine.gemm(GemmName.QKV_FPROP).fp8Buf());
    }
}
