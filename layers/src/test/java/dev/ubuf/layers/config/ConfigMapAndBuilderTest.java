package dev.ubuf.layers.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The Map form (what a YAML loader hands over) and the typed builder give the same records as a file. */
class ConfigMapAndBuilderTest {

    @Test
    void aMapWithAFilesKeysGivesTheSameConfigAsTheFile() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("ub_tp_comm_overlap", true);
        map.put("sequence_parallel", true);
        map.put("tensor_model_parallel_size", 4);
        map.put("proj_fprop", Map.of("method", "pipeline", "num_sm", 24, "num_splits", 4, "set_sm_margin", 1));
        map.put("fc1_fprop", Map.of("method", "ring_exchange", "aggregate", 1L));
        UbConfig fromMap = UbConfig.fromMap(map);
        UbConfig fromYaml = UbConfig.builder().load("""
                ub_tp_comm_overlap: true
                sequence_parallel: true
                tensor_model_parallel_size: 4
                proj_fprop: {method: pipeline, num_sm: 24, num_splits: 4, set_sm_margin: 1}
                fc1_fprop: {method: ring_exchange, aggregate: 1}
                """, "same.yaml", ConfigFormat.YAML).build();
        assertEquals(fromYaml, fromMap);
        assertEquals(24, fromMap.gemm(GemmName.PROJ_FPROP).numSm());
        assertTrue(fromMap.gemm(GemmName.FC1_FPROP).aggregate());
    }

    @Test
    void theTypedBuilderGivesTheSameConfigAsTheMap() {
        UbConfig built = UbConfig.builder()
                .tpCommOverlap(true).sequenceParallel(true).tensorModelParallelSize(4)
                .gemm(GemmName.PROJ_FPROP, g -> g.method(UbMethod.PIPELINE).numSm(24).numSplits(4).setSmMargin(true))
                .gemm(GemmName.FC1_FPROP, g -> g.method(UbMethod.RING_EXCHANGE).aggregate(true))
                .build();
        UbConfig fromMap = UbConfig.fromMap(Map.of(
                "ub_tp_comm_overlap", true, "sequence_parallel", true, "tensor_model_parallel_size", 4,
                "proj_fprop", Map.of("method", "pipeline", "num_sm", 24, "num_splits", 4, "set_sm_margin", true),
                "fc1_fprop", Map.of("method", "ring_exchange", "aggregate", true)));
        assertEquals(fromMap, built);
    }

    @Test
    void everyFlagHasATypedSetter() {
        UbConfig c = UbConfig.builder().tpCommOverlap(true).overlapAg(false).overlapRs(false).overlapRsDgrad(true)
                .bulkWgrad(false).bulkDgrad(false).ubName(GemmName.Layer.QKV).build();
        assertTrue(c.tpCommOverlap());
        assertFalse(c.overlapAg());
        assertFalse(c.overlapRs());
        assertTrue(c.overlapRsDgrad());
        assertFalse(c.bulkWgrad());
        assertFalse(c.bulkDgrad());
        assertEquals(GemmName.Layer.QKV, c.ubName().orElseThrow());
        assertEquals(c, UbConfig.builder().flag(UbFlag.UB_TP_COMM_OVERLAP, true).flag(UbFlag.UB_OVERLAP_AG, false)
                .flag(UbFlag.UB_OVERLAP_RS, false).flag(UbFlag.UB_OVERLAP_RS_DGRAD, true)
                .flag(UbFlag.UB_BULK_WGRAD, false).flag(UbFlag.UB_BULK_DGRAD, false).ubName(GemmName.Layer.QKV).build());
    }

    @Test
    void everyGemmKeyHasATypedSetter() {
        GemmOverlapConfig c = UbConfig.builder().tensorModelParallelSize(2)
                .gemm(GemmName.PROJ_DGRAD, g -> g.method(UbMethod.RING_EXCHANGE).isReduceScatter(false).numSm(3)
                        .cgaSize(4).numSplits(2).setSmMargin(true).aggregate(true).useCe(false).atomicGemm(false)
                        .fp8Buf(false).commPriority(-3).gemmPriority(0).pipelineRsOverlapFirstGemm(false))
                .build().gemm(GemmName.PROJ_DGRAD);
        assertEquals(java.util.EnumSet.allOf(GemmKey.class), c.explicitKeys());
        assertEquals(3, c.numSm());
        assertEquals(4, c.cgaSize());
        assertTrue(c.aggregate());
        assertFalse(c.useCe());
        assertEquals(-3, c.commPriority().orElseThrow());
    }

    @Test
    void mapErrorsNameTheKeyAndTheSource() {
        UbConfigException wrongType = assertThrows(UbConfigException.class, () -> UbConfig.fromMap(
                Map.of("qkv_wgrad", Map.of("num_sm", "8"))));
        assertEquals("map: qkv_wgrad.num_sm: must be an integer (32-bit), got the string \"8\"", wrongType.getMessage());
        UbConfigException unknown = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .apply(Map.of("qkv_wgrad", Map.of("num_sms", 8)), "trainer args"));
        assertEquals("trainer args: qkv_wgrad.num_sms: unknown key (known: method, is_reduce_scatter, num_sm,"
                + " cga_size, num_splits, set_sm_margin, aggregate, use_ce, atomic_gemm, fp8_buf, comm_priority,"
                + " gemm_priority, pipeline_rs_overlap_first_gemm)", unknown.getMessage());
        UbConfigException odd = assertThrows(UbConfigException.class, () -> UbConfig.fromMap(
                Map.of("ub_overlap_ag", List.of(true))));
        assertEquals("map: ub_overlap_ag: must be true or false (or 0 or 1), got a list", odd.getMessage());
        UbConfigException object = assertThrows(UbConfigException.class, () -> UbConfig.fromMap(
                Map.of("qkv_fprop", Map.of("method", UbMethod.PIPELINE))));
        assertTrue(object.getMessage().startsWith("map: qkv_fprop.method: unsupported value type"), object.getMessage());
        UbConfigException noFp8 = assertThrows(UbConfigException.class, () -> UbConfig.fromMap(
                Map.of("qkv_fprop", Map.of("fp8_buf", 1))));
        assertTrue(noFp8.getMessage().startsWith("map: qkv_fprop.fp8_buf: true needs fp8: true"), noFp8.getMessage());
    }

    @Test
    void theBuilderRejectsValuesAtOnce() {
        UbConfig.Builder b = UbConfig.builder();
        assertEquals("builder: qkv_fprop.num_sm: num_sm must be >= 0, got -1", assertThrows(UbConfigException.class,
                () -> b.gemm(GemmName.QKV_FPROP, g -> g.numSm(-1))).getMessage());
        assertEquals("builder: tensor_model_parallel_size: must be >= 1, got 0", assertThrows(UbConfigException.class,
                () -> b.tensorModelParallelSize(0)).getMessage());
        assertEquals("builder: fp8_margin: must be >= 0, got -1", assertThrows(UbConfigException.class,
                () -> b.fp8Margin(-1)).getMessage());
        assertEquals("builder: fp8_amax_history_len: must be >= 1, got 0", assertThrows(UbConfigException.class,
                () -> b.fp8AmaxHistoryLen(0)).getMessage());
        assertTrue(assertThrows(UbConfigException.class, () -> b.gemm(GemmName.QKV_FPROP,
                g -> g.method(UbMethod.NONE))).getMessage().contains("none is not a method a configuration can name"));
    }

    @Test
    void theResultIsImmutable() {
        UbConfig c = UbConfig.builder().gemm(GemmName.QKV_FPROP, g -> g.numSm(2)).build();
        assertThrows(UnsupportedOperationException.class, () -> c.gemms().remove(GemmName.QKV_FPROP));
        assertThrows(UnsupportedOperationException.class, () -> c.gemm(GemmName.QKV_FPROP).explicitKeys().clear());
        assertThrows(UnsupportedOperationException.class, () -> c.methodTable().entries().clear());
    }
}
