package dev.ubuf.layers.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The printable method table: one line per GEMM with what runs and why. */
class MethodTableTest {

    @Test
    void describePrintsOneLinePerGemmWithMethodOptionsAndReason() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(4).sequenceParallel(true).tpCommOverlap(true)
                .overlapRs(false).gemm(GemmName.FC1_FPROP, g -> g.aggregate(true)).build();
        List<String> lines = c.methodTable().describe().lines().toList();
        assertEquals(14, lines.size(), "a settings line, a header and twelve GEMMs:\n" + String.join("\n", lines));
        assertEquals("tensor_model_parallel_size=4 sequence_parallel=true ub_tp_comm_overlap=true ub_overlap_ag=true"
                + " ub_overlap_rs=false ub_overlap_rs_dgrad=false ub_bulk_wgrad=true ub_bulk_dgrad=true", lines.get(0));
        assertTrue(lines.get(1).matches("gemm +communication +method +options / reason"), lines.get(1));
        assertTrue(lines.get(2).matches("qkv_fprop +all-gather of the input X +ring_exchange +aggregate=false use_ce=true"
                + " num_sm=1 cga_size=1 set_sm_margin=false  \\(by ub_overlap_ag, TE's default method\\)"), lines.get(2));
        assertTrue(lines.get(5).matches("proj_fprop +reduce-scatter of the output +none +ub_overlap_rs is false; one GEMM,"
                + " then NCCL reduce-scatter"), lines.get(5));
        assertTrue(lines.get(8).matches("fc1_fprop +all-gather of the input X +ring_exchange +aggregate=true .*"),
                lines.get(8));
        assertTrue(lines.get(13).matches("fc2_wgrad +none +none +no communication of its own: .*"), lines.get(13));
    }

    @Test
    void aConfiguredMethodIsSaidToBeConfigured() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(2).sequenceParallel(true).tpCommOverlap(true)
                .gemm(GemmName.PROJ_FPROP, g -> g.method(UbMethod.RING_EXCHANGE)).build();
        assertEquals("by ub_overlap_rs, method configured", c.explain(GemmName.PROJ_FPROP));
        assertEquals("by ub_overlap_rs, TE's default method", c.explain(GemmName.FC2_FPROP));
    }

    @Test
    void explainStartsWithTheOverallReasonAndListsEveryGemm() {
        UbConfig c = UbConfig.builder().tensorModelParallelSize(4).sequenceParallel(true).overlapRsDgrad(true).build();
        List<String> lines = c.explain().lines().toList();
        assertEquals("No GEMM is overlapped: ub_tp_comm_overlap is false (the master switch): every ub_* flag is off,"
                + " as in TE's TransformerLayer.", lines.get(0));
        assertEquals("ub_overlap_rs_dgrad is true but has no effect: ub_tp_comm_overlap is false (the master switch):"
                + " every ub_* flag is off, as in TE's TransformerLayer.", lines.get(1));
        assertEquals(14, lines.size());
        assertTrue(lines.get(2).startsWith("qkv_fprop: none - ub_tp_comm_overlap is false"), lines.get(2));
    }
}
