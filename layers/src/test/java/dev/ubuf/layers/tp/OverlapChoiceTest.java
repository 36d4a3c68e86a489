package dev.ubuf.layers.tp;

import dev.ubuf.layers.config.GemmName;
import dev.ubuf.layers.config.UbMethod;
import dev.ubuf.layers.config.UbConfig;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each GEMM's configured method becomes the op variant the layers make, or the NCCL path. */
class OverlapChoiceTest {
    private static UbConfig.Builder tp2() {
        return UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).tpCommOverlap(true);
    }

    @Test
    void teDefaultsRunRingAllGathersPipelinedReduceScattersAndBulkBackwardCollectives() {
        UbConfig c = tp2().build();
        assertEquals("ring", OverlapChoice.resolve(c, GemmName.FC1_FPROP).label());
        assertEquals("ring", OverlapChoice.resolve(c, GemmName.FC2_DGRAD).label());
        assertEquals("pipeline:splits=4,margin=16", OverlapChoice.resolve(c, GemmName.FC2_FPROP).label());
        OverlapChoice dgrad = OverlapChoice.resolve(c, GemmName.FC1_DGRAD);
        assertFalse(dgrad.overlapped(), "the wgrad reads X where fc1_fprop gathered it: nothing to gather");
        assertEquals(0, dgrad.gemmSmMargin(), "nothing beside the dgrad GEMM: every SM is its own");
        assertTrue(dgrad.why().contains("fc1_wgrad reads X where fc1_fprop gathered it"), dgrad.why());
        OverlapChoice wgrad = OverlapChoice.resolve(c, GemmName.FC1_WGRAD);
        assertTrue(wgrad.bulk());
        assertEquals("bulk:stage=1", wgrad.label(), "use_ce: the copy engines pull the peers' rows, a local sum");
        assertEquals(0, wgrad.gemmSmMargin(), "the reduce-scatter's rows move on the copy engines: no SMs to leave");
        assertTrue(wgrad.why().contains("copied on the copy engines"), wgrad.why());
        assertEquals("nccl", OverlapChoice.resolve(c, GemmName.FC2_WGRAD).label(), "no communication of its own");
        assertTrue(OverlapChoice.resolve(c, GemmName.FC1_FPROP).settings().useCopyEngine());
    }

    @Test
    void aBulkReduceScatterKeepsItsMarginWhenConfiguredOrOnSmCopies() {
        UbConfig explicit = tp2().gemm(GemmName.FC1_DGRAD, g -> g.setSmMargin(true).numSm(8)).build();
        assertEquals(0, OverlapChoice.resolve(explicit, GemmName.FC1_DGRAD).gemmSmMargin(),
                "a dgrad that gathers nothing has nothing to leave SMs to");
        UbConfig off = tp2().gemm(GemmName.FC1_WGRAD, g -> g.setSmMargin(false)).build();
        assertEquals(0, OverlapChoice.resolve(off, GemmName.FC1_WGRAD).gemmSmMargin());
        UbConfig pull = tp2().gemm(GemmName.FC1_WGRAD, g -> g.useCe(false)).build();
        OverlapChoice teKernel = OverlapChoice.resolve(pull, GemmName.FC1_WGRAD);
        assertEquals("bulk", teKernel.label(), "use_ce=false: TE's pull-reduce kernel");
        assertEquals(16, teKernel.gemmSmMargin(), "the pull-reduce kernel runs on the SMs TE's default leaves it");
        UbConfig staged16 = tp2().gemm(GemmName.FC1_WGRAD, g -> g.setSmMargin(true).numSm(16)).build();
        assertEquals(16, OverlapChoice.resolve(staged16, GemmName.FC1_WGRAD).gemmSmMargin(), "configured: kept");
    }

    @Test
    void atomicGemmRunsTheAtomicMethod() {
        UbConfig c = tp2()
                .gemm(GemmName.FC1_FPROP, g -> g.atomicGemm(true))
                .gemm(GemmName.FC2_FPROP, g -> g.atomicGemm(true))
                .build();
        assertEquals("atomic", OverlapChoice.resolve(c, GemmName.FC1_FPROP).label());
        assertEquals("atomic", OverlapChoice.resolve(c, GemmName.FC2_FPROP).label());
        assertEquals("ring", OverlapChoice.resolve(c, GemmName.FC2_DGRAD).label());
    }

    @Test
    void configuredOptionsReachTheVariant() {
        UbConfig c = tp2()
                .gemm(GemmName.FC1_FPROP, g -> g.aggregate(true).useCe(false))
                .gemm(GemmName.PROJ_FPROP, g -> g.numSplits(8).setSmMargin(false))
                .gemm(GemmName.FC2_FPROP, g -> g.method(UbMethod.RING_EXCHANGE).numSplits(2))
                .gemm(GemmName.FC2_DGRAD, g -> g.method(UbMethod.AUTO))
                .build();
        OverlapChoice fc1 = OverlapChoice.resolve(c, GemmName.FC1_FPROP);
        assertEquals("aggregate", fc1.label());
        assertFalse(fc1.settings().useCopyEngine(), "use_ce=false: SM copies");
        assertEquals("pipeline:splits=8,margin=0", OverlapChoice.resolve(c, GemmName.PROJ_FPROP).label());
        assertEquals("scatter:lowp=1", OverlapChoice.resolve(c, GemmName.FC2_FPROP).label(),
                "TE's peer-to-peer reduce-scatter, its partials in the activation type, as the unoverlapped path's");
        assertEquals(OverlapChoice.Kind.PLANNER, OverlapChoice.resolve(c, GemmName.FC2_DGRAD).kind());
    }

    @Test
    void overlapRsDgradTurnsTheBulkDgradIntoAPipelinedReduceScatterAndLeavesTheWgradWithoutCommunication() {
        UbConfig c = tp2().overlapRsDgrad(true).build();
        assertEquals("pipeline:splits=4,margin=16", OverlapChoice.resolve(c, GemmName.QKV_DGRAD).label());
        assertFalse(OverlapChoice.resolve(c, GemmName.QKV_WGRAD).overlapped());
    }

    @Test
    void everythingRunsNcclWhenTheMasterSwitchIsOffOrAFlagIsOff() {
        UbConfig off = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).build();
        for (GemmName g : GemmName.values()) {
            OverlapChoice ch = OverlapChoice.resolve(off, g);
            assertEquals(OverlapChoice.Kind.NCCL, ch.kind(), g.teName());
            assertTrue(ch.why().contains("ub_tp_comm_overlap"), ch.why());
        }
        UbConfig noAg = tp2().overlapAg(false).build();
        assertFalse(OverlapChoice.resolve(noAg, GemmName.FC1_FPROP).overlapped());
        assertTrue(OverlapChoice.resolve(noAg, GemmName.FC2_FPROP).overlapped());
    }

    @Test
    void ubNameLeavesOtherLayersOnNccl() {
        UbConfig c = tp2().ubName(GemmName.Layer.FC2).build();
        assertTrue(OverlapChoice.resolve(c, GemmName.FC2_FPROP).overlapped());
        OverlapChoice fc1 = OverlapChoice.resolve(c, GemmName.FC1_FPROP);
        assertFalse(fc1.overlapped());
        assertTrue(fc1.why().contains("ub_name is fc2"), fc1.why());
    }
}
