package dev.ubuf.layers.config;

import static dev.ubuf.layers.config.GemmName.FC1_DGRAD;
import static dev.ubuf.layers.config.GemmName.FC1_FPROP;
import static dev.ubuf.layers.config.GemmName.FC1_WGRAD;
import static dev.ubuf.layers.config.GemmName.FC2_DGRAD;
import static dev.ubuf.layers.config.GemmName.FC2_FPROP;
import static dev.ubuf.layers.config.GemmName.FC2_WGRAD;
import static dev.ubuf.layers.config.GemmName.PROJ_DGRAD;
import static dev.ubuf.layers.config.GemmName.PROJ_FPROP;
import static dev.ubuf.layers.config.GemmName.PROJ_WGRAD;
import static dev.ubuf.layers.config.GemmName.QKV_DGRAD;
import static dev.ubuf.layers.config.GemmName.QKV_FPROP;
import static dev.ubuf.layers.config.GemmName.QKV_WGRAD;
import static dev.ubuf.layers.config.UbMethod.BULK;
import static dev.ubuf.layers.config.UbMethod.NONE;
import static dev.ubuf.layers.config.UbMethod.PIPELINE;
import static dev.ubuf.layers.config.UbMethod.RING_EXCHANGE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The top-level flags: TE TransformerLayer's defaults, the master switch, and what each flag turns off or on. */
class UbFlagsTest {

    /** tp 4 with sequence parallelism: where overlap can happen once the master switch is on. */
    static UbConfig.Builder tp4() {
        return UbConfig.builder().tensorModelParallelSize(4).sequenceParallel(true);
    }

    static Map<GemmName, UbMethod> methods(UbConfig config) {
        Map<GemmName, UbMethod> m = new EnumMap<>(GemmName.class);
        for (MethodTable.Entry e : config.methodTable().entries()) {
            m.put(e.gemm(), e.method());
        }
        return m;
    }

    static Map<GemmName, UbMethod> teDefaultTable() {
        Map<GemmName, UbMethod> m = new EnumMap<>(GemmName.class);
        m.put(QKV_FPROP, RING_EXCHANGE);
        // The qkv/fc1 wgrads read X where the fprop gathered it: their dgrads gather nothing (TE: bulk all-gather).
        m.put(QKV_DGRAD, NONE);
        m.put(QKV_WGRAD, BULK);
        m.put(PROJ_FPROP, PIPELINE);
        m.put(PROJ_DGRAD, RING_EXCHANGE);
        m.put(PROJ_WGRAD, NONE);
        m.put(FC1_FPROP, RING_EXCHANGE);
        m.put(FC1_DGRAD, NONE);
        m.put(FC1_WGRAD, BULK);
        m.put(FC2_FPROP, PIPELINE);
        m.put(FC2_DGRAD, RING_EXCHANGE);
        m.put(FC2_WGRAD, NONE);
        return m;
    }

    @Test
    void flagsDefaultToTransformerLayersDefaults() {
        UbConfig c = UbConfig.builder().build();
        assertFalse(c.tpCommOverlap(), "ub_tp_comm_overlap defaults to false");
        assertTrue(c.overlapAg());
        assertTrue(c.overlapRs());
        assertFalse(c.overlapRsDgrad());
        assertTrue(c.bulkWgrad());
        assertTrue(c.bulkDgrad());
        assertFalse(c.sequenceParallel());
        assertEquals(1, c.tensorModelParallelSize());
        assertTrue(c.ubName().isEmpty());
        for (UbFlag f : UbFlag.values()) {
            assertEquals(f.teDefault(), c.flag(f), f.teName());
        }
    }

    @Test
    void withoutTheMasterSwitchNothingIsOverlappedAndTheReasonSaysSo() {
        UbConfig c = tp4().build();
        assertFalse(c.overlapPossible());
        assertEquals(List.of(), c.methodTable().overlapped());
        for (UbFlag f : UbFlag.values()) {
            assertFalse(c.effective(f), f + " cannot apply without the master switch");
        }
        assertTrue(c.whyNoOverlap().orElseThrow().startsWith("ub_tp_comm_overlap is false"));
        assertTrue(c.explain(QKV_FPROP).contains("ub_tp_comm_overlap is false"), c.explain(QKV_FPROP));
        assertTrue(c.explain(QKV_FPROP).contains("NCCL all-gather, then one GEMM"), c.explain(QKV_FPROP));
        assertTrue(c.explain(PROJ_FPROP).contains("one GEMM, then NCCL reduce-scatter"), c.explain(PROJ_FPROP));
    }

    @Test
    void anIndividualFlagCannotTurnOverlapOnWithoutTheMasterSwitch() {
        // TE's TransformerLayer and-s every flag with ub_tp_comm_overlap.
        UbConfig c = tp4().overlapAg(true).overlapRsDgrad(true).build();
        assertEquals(List.of(), c.methodTable().overlapped());
        assertFalse(c.effective(UbFlag.UB_OVERLAP_RS_DGRAD));
    }

    @Test
    void theMasterSwitchTurnsOnTesDefaultMethodForEveryGemm() {
        UbConfig c = tp4().tpCommOverlap(true).build();
        assertTrue(c.overlapPossible());
        assertEquals(teDefaultTable(), methods(c));
        assertEquals(List.of(QKV_FPROP, QKV_WGRAD, PROJ_FPROP, PROJ_DGRAD, FC1_FPROP, FC1_WGRAD, FC2_FPROP,
                FC2_DGRAD), c.methodTable().overlapped());
        assertEquals("no all-gather: fc1_wgrad reads X where fc1_fprop gathered it (ub_bulk_dgrad has nothing to"
                + " overlap)", c.explain(FC1_DGRAD));
        assertTrue(c.explain(PROJ_WGRAD).contains("uses dY as all-gathered for proj_dgrad"), c.explain(PROJ_WGRAD));
    }

    @Test
    void ubOverlapAgOffLeavesTheAllGatherGemmsToNccl() {
        UbConfig c = tp4().tpCommOverlap(true).overlapAg(false).build();
        Map<GemmName, UbMethod> expected = teDefaultTable();
        for (GemmName g : List.of(QKV_FPROP, FC1_FPROP, PROJ_DGRAD, FC2_DGRAD)) {
            expected.put(g, NONE);
        }
        assertEquals(expected, methods(c));
        assertEquals("ub_overlap_ag is false; NCCL all-gather, then one GEMM", c.explain(QKV_FPROP));
        assertFalse(c.effective(UbFlag.UB_OVERLAP_AG));
    }

    @Test
    void ubOverlapRsOffLeavesTheRowParallelForwardToNccl() {
        UbConfig c = tp4().tpCommOverlap(true).overlapRs(false).build();
        Map<GemmName, UbMethod> expected = teDefaultTable();
        expected.put(PROJ_FPROP, NONE);
        expected.put(FC2_FPROP, NONE);
        assertEquals(expected, methods(c));
        assertEquals("ub_overlap_rs is false; one GEMM, then NCCL reduce-scatter", c.explain(FC2_FPROP));
    }

    @Test
    void ubBulkWgradTurnsOffItsBulkOverlapAndUbBulkDgradHasNothingToOverlap() {
        UbConfig noDgrad = tp4().tpCommOverlap(true).bulkDgrad(false).build();
        assertEquals(teDefaultTable(), methods(noDgrad));
        assertEquals("no all-gather: qkv_wgrad reads X where qkv_fprop gathered it", noDgrad.explain(QKV_DGRAD));
        UbConfig noOverlap = tp4().build();
        assertTrue(noOverlap.explain(FC1_DGRAD).endsWith("; no all-gather: fc1_wgrad reads X where fc1_fprop gathered"
                + " it"), "the unoverlapped path reads NCCL's gathered copy: " + noOverlap.explain(FC1_DGRAD));

        UbConfig noWgrad = tp4().tpCommOverlap(true).bulkWgrad(false).build();
        assertEquals(NONE, methods(noWgrad).get(QKV_DGRAD));
        assertEquals(NONE, methods(noWgrad).get(QKV_WGRAD));
        assertEquals(NONE, methods(noWgrad).get(FC1_WGRAD));
        assertEquals("ub_bulk_wgrad is false; NCCL reduce-scatter of dX beside the GEMM", noWgrad.explain(FC1_WGRAD));
    }

    @Test
    void ubOverlapRsDgradReplacesBothBulkOverlapsOfQkvAndFc1() {
        UbConfig c = tp4().tpCommOverlap(true).overlapRsDgrad(true).build();
        Map<GemmName, UbMethod> expected = teDefaultTable();
        // The dgrad reduce-scatters dX itself: TE runs its (bulk-method) communicator as a pipelined RS.
        expected.put(QKV_DGRAD, PIPELINE);
        expected.put(FC1_DGRAD, PIPELINE);
        expected.put(QKV_WGRAD, NONE);
        expected.put(FC1_WGRAD, NONE);
        assertEquals(expected, methods(c));
        assertEquals("reduce-scatter of dX", c.methodTable().entry(QKV_DGRAD).orElseThrow().communication());
        assertTrue(c.explain(QKV_WGRAD).contains("ub_overlap_rs_dgrad reduce-scatters dX during qkv_dgrad"),
                c.explain(QKV_WGRAD));
        assertTrue(c.effective(UbFlag.UB_OVERLAP_RS_DGRAD));
        assertFalse(c.effective(UbFlag.UB_BULK_DGRAD), "replaced by ub_overlap_rs_dgrad");
        assertFalse(c.effective(UbFlag.UB_BULK_WGRAD), "replaced by ub_overlap_rs_dgrad");
        assertTrue(c.bulkDgrad(), "the asked-for value is kept");
        assertTrue(c.explain().contains("ub_bulk_dgrad is true but has no effect: ub_overlap_rs_dgrad replaces it"),
                c.explain());
    }

    @Test
    void withoutSequenceParallelismEveryGemmIsUnoverlappedAndExplainSaysWhy() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(8).tpCommOverlap(true).build();
        assertFalse(c.sequenceParallel());
        assertEquals(List.of(), c.methodTable().overlapped());
        for (MethodTable.Entry e : c.methodTable().entries()) {
            assertEquals(NONE, e.method(), e.gemm().teName());
            assertTrue(e.reason().startsWith("sequence_parallel is false"), e.reason());
        }
        assertTrue(c.explain().startsWith("No GEMM is overlapped: sequence_parallel is false"), c.explain());
        for (UbFlag f : UbFlag.values()) {
            assertFalse(c.effective(f), f.teName());
        }
    }

    @Test
    void withOneTensorParallelRankEveryGemmIsUnoverlappedAndExplainSaysWhy() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(1).sequenceParallel(true).tpCommOverlap(true).build();
        assertEquals(List.of(), c.methodTable().overlapped());
        assertEquals("tensor_model_parallel_size is 1: there is no tensor-parallel communication to overlap",
                c.explain(QKV_FPROP));
        assertTrue(c.explain().startsWith("No GEMM is overlapped: tensor_model_parallel_size is 1"), c.explain());
    }

    @ParameterizedTest
    @EnumSource(GemmName.Layer.class)
    void ubNameLimitsTheTableToThatModulesThreeGemms(GemmName.Layer layer) {
        UbConfig c = tp4().tpCommOverlap(true).ubName(layer).build();
        List<GemmName> expected = List.of(GemmName.of(layer, GemmName.Pass.FPROP),
                GemmName.of(layer, GemmName.Pass.DGRAD), GemmName.of(layer, GemmName.Pass.WGRAD));
        assertEquals(expected, c.methodTable().entries().stream().map(MethodTable.Entry::gemm).toList());
        assertEquals(12, c.gemms().size(), "the settings of every GEMM are still there");
    }

    @Test
    void eachGemmHasItsRoleUnderSequenceParallelism() {
        assertTrue(QKV_FPROP.isAllGather() && FC1_FPROP.isAllGather() && PROJ_DGRAD.isAllGather()
                && FC2_DGRAD.isAllGather());
        assertTrue(PROJ_FPROP.isReduceScatter() && FC2_FPROP.isReduceScatter());
        assertTrue(QKV_DGRAD.isBulk() && QKV_WGRAD.isBulk() && FC1_DGRAD.isBulk() && FC1_WGRAD.isBulk());
        assertEquals(GemmName.Role.NONE, PROJ_WGRAD.role());
        assertEquals(GemmName.Role.REDUCE_SCATTER, QKV_DGRAD.role(true));
        assertEquals(GemmName.Role.NONE, FC1_WGRAD.role(true));
        assertEquals(List.of(QKV_DGRAD, FC1_DGRAD),
                List.of(GemmName.values()).stream().filter(GemmName::canReduceScatterDgrad).toList());
        for (GemmName g : GemmName.values()) {
            assertEquals(g, GemmName.parse(g.teName()).orElseThrow());
        }
    }
}
