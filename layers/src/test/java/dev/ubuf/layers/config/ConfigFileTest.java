package dev.ubuf.layers.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * YAML and JSON files: a Megatron-LM/NeMo overlap file loads unchanged; unknown keys, wrong types, keys ubuf
 * cannot honour yet and broken syntax are rejected with the file's line and column.
 */
class ConfigFileTest {

    @TempDir
    Path dir;

    static Path resource(String name) {
        try {
            return Path.of(ConfigFileTest.class.getResource(name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    Path write(String name, String text) throws IOException {
        return Files.writeString(dir.resolve(name), text);
    }

    static UbConfig.Builder tp4() {
        return UbConfig.builder().tensorModelParallelSize(4).sequenceParallel(true).tpCommOverlap(true);
    }

    @Test
    void aMegatronOverlapFileLoadsUnchanged() {
        UbConfig c = tp4().load(resource("megatron_gpt_h8192_tp4.yaml")).build();

        GemmOverlapConfig qkvDgrad = c.gemm(GemmName.QKV_DGRAD);
        assertEquals(UbMethod.BULK, qkvDgrad.method());
        assertEquals(4, qkvDgrad.numSm());
        assertEquals(2, qkvDgrad.cgaSize());
        assertFalse(qkvDgrad.setSmMargin(), "set_sm_margin: 0 reads as false");
        assertEquals(8, c.gemm(GemmName.QKV_WGRAD).numSm());

        assertFalse(c.gemm(GemmName.QKV_FPROP).aggregate(), "aggregate: 0");
        assertTrue(c.gemm(GemmName.FC1_FPROP).aggregate(), "aggregate: 1");
        assertEquals(Set.of(GemmKey.METHOD, GemmKey.AGGREGATE, GemmKey.ATOMIC_GEMM),
                c.gemm(GemmName.FC2_DGRAD).explicitKeys());

        GemmOverlapConfig proj = c.gemm(GemmName.PROJ_FPROP);
        assertEquals(UbMethod.PIPELINE, proj.method());
        assertEquals(24, proj.numSm());
        assertEquals(4, proj.numSplits());
        assertTrue(proj.setSmMargin(), "set_sm_margin: 1 reads as true");
        assertFalse(proj.fp8Buf(), "fp8_buf: 0 is accepted");
        assertEquals(16, c.gemm(GemmName.FC2_FPROP).numSm());

        // qkv_dgrad and fc1_dgrad gather nothing: their wgrads read X where the fprop gathered it.
        assertEquals(List.of(GemmName.QKV_FPROP, GemmName.QKV_WGRAD, GemmName.PROJ_FPROP, GemmName.PROJ_DGRAD,
                GemmName.FC1_FPROP, GemmName.FC1_WGRAD, GemmName.FC2_FPROP, GemmName.FC2_DGRAD),
                c.methodTable().overlapped());
        assertEquals(GemmOverlapConfig.teDefault(GemmName.PROJ_WGRAD, 4), c.gemm(GemmName.PROJ_WGRAD),
                "an entry the file does not have keeps TE's defaults");
    }

    @Test
    void aJsonFileCarriesFlagsAndEntries() {
        UbConfig c = UbConfig.fromFile(resource("layer_tp8.json"));
        assertTrue(c.tpCommOverlap());
        assertTrue(c.sequenceParallel());
        assertEquals(8, c.tensorModelParallelSize());
        assertTrue(c.overlapRsDgrad());

        GemmOverlapConfig qkv = c.gemm(GemmName.QKV_FPROP);
        assertTrue(qkv.aggregate());
        assertFalse(qkv.useCe(), "use_ce: false selects the SM copy kernels");
        assertEquals(UbMethod.RING_EXCHANGE, c.methodTable().entry(GemmName.QKV_DGRAD).orElseThrow().method());
        GemmOverlapConfig fc1Dgrad = c.gemm(GemmName.FC1_DGRAD);
        assertEquals(UbMethod.PIPELINE, fc1Dgrad.method());
        assertEquals(8, fc1Dgrad.numSplits());
        assertEquals(12, fc1Dgrad.numSm());
        assertEquals(UbMethod.AUTO, c.gemm(GemmName.PROJ_FPROP).method());
        assertEquals(OptionalInt.of(-5), c.gemm(GemmName.FC2_FPROP).commPriority());
        assertEquals(OptionalInt.of(0), c.gemm(GemmName.FC2_FPROP).gemmPriority());
        assertEquals(UbMethod.NONE, c.methodTable().entry(GemmName.FC1_WGRAD).orElseThrow().method());
    }

    @Test
    void theFlagsCanComeFromTheFileToo() throws IOException {
        Path f = write("flags.yaml", """
                ub_tp_comm_overlap: true
                ub_overlap_ag: 0
                ub_bulk_wgrad: false
                sequence_parallel: 1
                tensor_model_parallel_size: 2
                ub_name: fc2
                """);
        UbConfig c = UbConfig.fromFile(f);
        assertTrue(c.tpCommOverlap());
        assertFalse(c.overlapAg());
        assertFalse(c.bulkWgrad());
        assertTrue(c.sequenceParallel());
        assertEquals(2, c.tensorModelParallelSize());
        assertEquals(GemmName.Layer.FC2, c.ubName().orElseThrow());
        assertEquals(List.of(GemmName.FC2_FPROP), c.methodTable().overlapped());
    }

    @Test
    void anUnknownKeyInAnEntryIsNamedWithItsPosition() throws IOException {
        Path f = write("typo.yaml", """
                # overlap settings
                proj_fprop:
                  method: pipeline
                  num_split: 4
                """);
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.fromFile(f));
        assertEquals("proj_fprop.num_split", e.key());
        assertEquals(ConfigOrigin.file(f.toString(), 4, 3), e.origin());
        assertTrue(e.getMessage().startsWith(f + ":4:3: proj_fprop.num_split: unknown key (known: method,"),
                e.getMessage());
    }

    @Test
    void anUnknownTopLevelKeyIsNamedWithItsPositionAndTheKnownKeys() throws IOException {
        Path f = write("top.json", "{\n  \"ub_tp_comm_overlap\": true,\n  \"qkv_fprops\": {}\n}\n");
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.fromFile(f));
        assertEquals("qkv_fprops", e.key());
        assertEquals(ConfigOrigin.file(f.toString(), 3, 3), e.origin());
        assertTrue(e.getMessage().contains("known: ub_tp_comm_overlap, ub_overlap_ag"), e.getMessage());
        assertTrue(e.getMessage().contains("or a GEMM name"), e.getMessage());
    }

    @Test
    void megatronsFlagNamesGetTheTeNameSuggested() {
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("tp_comm_overlap_rs_dgrad: true\n", "args.yaml", ConfigFormat.YAML));
        assertTrue(e.getMessage().startsWith("args.yaml:1:1: tp_comm_overlap_rs_dgrad: unknown key (Megatron-LM's name;"
                + " TE's and ubuf's is ub_overlap_rs_dgrad)"), e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "qkv_fprop:\\n  num_sm: four\\n          | qkv_fprop.num_sm        | 2:11 | must be an integer (32-bit), got the string \"four\"",
            "qkv_fprop:\\n  num_sm: 1.5\\n           | qkv_fprop.num_sm        | 2:11 | must be an integer (32-bit), got 1.5",
            "qkv_fprop:\\n  num_sm: 99999999999\\n   | qkv_fprop.num_sm        | 2:11 | must be an integer (32-bit), got 99999999999",
            "qkv_fprop:\\n  aggregate: 2\\n          | qkv_fprop.aggregate     | 2:14 | must be true or false (or 0 or 1), got 2",
            "qkv_fprop:\\n  use_ce: \"false\"\\n     | qkv_fprop.use_ce        | 2:11 | must be true or false (or 0 or 1), got the string \"false\"",
            "qkv_fprop:\\n  method: 1\\n             | qkv_fprop.method        | 2:11 | must be a string, got 1",
            "qkv_fprop:\\n  method: Ring_Exchange\\n | qkv_fprop.method        | 2:11 | unknown method \"Ring_Exchange\" (expected ring_exchange, pipeline, bulk or auto)",
            "qkv_fprop:\\n  method: none\\n          | qkv_fprop.method        | 2:11 | unknown method \"none\"",
            "qkv_fprop: ring_exchange\\n              | qkv_fprop               | 1:12 | must be a mapping of settings",
            "qkv_fprop:\\n                           | qkv_fprop               | 1:11 | must be a mapping of settings (method, is_reduce_scatter",
            "qkv_fprop:\\n  num_sm: [1, 2]\\n        | qkv_fprop.num_sm        | 2:11 | must be an integer (32-bit), got a list",
            "sequence_parallel: yes please\\n       | sequence_parallel       | 1:20 | must be true or false (or 0 or 1), got the string \"yes please\"",
            "tensor_model_parallel_size: 4.0\\n     | tensor_model_parallel_size | 1:29 | must be an integer (32-bit), got 4.0",
            "ub_name: attention\\n                  | ub_name                 | 1:10 | must be qkv, proj, fc1 or fc2",
            "ub_overlap_ag: {}\\n                   | ub_overlap_ag           | 1:16 | must be true or false (or 0 or 1), got a mapping",
    })
    void aValueOfTheWrongTypeIsNamedWithItsPosition(String yaml, String key, String position, String message) {
        String text = yaml.replace("\\n", "\n");
        UbConfigException e = assertThrows(UbConfigException.class,
                () -> UbConfig.builder().load(text, "types.yaml", ConfigFormat.YAML).build());
        assertEquals(key, e.key(), e.getMessage());
        assertEquals("types.yaml:" + position, e.origin().toString(), e.getMessage());
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void jsonPositionsPointAtTheValue() {
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("{\"fc1_dgrad\": {\"num_sm\": \"4\"}}", "cfg.json", ConfigFormat.JSON).build());
        assertEquals("cfg.json:1:26: fc1_dgrad.num_sm: must be an integer (32-bit), got the string \"4\"",
                e.getMessage());
    }

    @Test
    void atomicGemmIsAcceptedOnRingAndPipelineGemmsOnly() {
        UbConfig c = tp4().load(resource("atomic_gemm.yaml")).build();
        assertTrue(c.gemm(GemmName.PROJ_FPROP).atomicGemm());
        assertFalse(c.gemm(GemmName.QKV_FPROP).atomicGemm());
        UbConfigException bulk = assertThrows(UbConfigException.class, () -> tp4()
                .load("qkv_dgrad: {method: bulk, atomic_gemm: 1}", "a.yaml", ConfigFormat.YAML).build());
        assertTrue(bulk.getMessage().contains("qkv_dgrad.atomic_gemm: true applies to ring_exchange and pipeline"),
                bulk.getMessage());
    }

    @Test
    void anFp8BufferOnAReduceScatterIsRejectedWhereItIsWritten() {
        UbConfigException e = assertThrows(UbConfigException.class, () -> tp4()
                .load("fp8: true\nfc2_fprop:\n  method: pipeline\n  fp8_buf: true\n", "fp8.yaml", ConfigFormat.YAML)
                .build());
        assertTrue(e.getMessage().startsWith("fp8.yaml:4:12: fc2_fprop.fp8_buf: true applies to all-gather GEMMs"),
                e.getMessage());
        assertTrue(e.getMessage().contains("never in FP8"), e.getMessage());
    }

    @Test
    void theRecentTeKeysUbufCannotHonourYetAreRejectedWhenOn() {
        UbConfigException first = assertThrows(UbConfigException.class, () -> tp4()
                .load("proj_fprop: {pipeline_rs_overlap_first_gemm: 1}", "te.yaml", ConfigFormat.YAML));
        assertTrue(first.getMessage().contains("proj_fprop.pipeline_rs_overlap_first_gemm: true is not supported yet"),
                first.getMessage());
        UbConfigException external = assertThrows(UbConfigException.class, () -> tp4()
                .load("proj_wgrad: {method: external}", "te.yaml", ConfigFormat.YAML));
        assertTrue(external.getMessage().startsWith("te.yaml:1:22: proj_wgrad.method: \"external\" is not supported"),
                external.getMessage());
        UbConfig off = tp4().load("proj_fprop: {pipeline_rs_overlap_first_gemm: false, atomic_gemm: false}",
                "te.yaml", ConfigFormat.YAML).build();
        assertFalse(off.gemm(GemmName.PROJ_FPROP).atomicGemm());
    }

    @Test
    void aDuplicateKeyIsRejectedWithBothPositions() {
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("fc1_fprop:\n  aggregate: 0\n  aggregate: 1\n", "dup.yaml", ConfigFormat.YAML));
        assertEquals("dup.yaml:3:3: aggregate: duplicate key (first at dup.yaml:2:3)", e.getMessage());
    }

    @Test
    void brokenSyntaxIsReportedWithItsPosition() {
        UbConfigException yaml = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("qkv_fprop:\n  method: [ring_exchange\n", "broken.yaml", ConfigFormat.YAML));
        assertTrue(yaml.getMessage().startsWith("broken.yaml:2:25: not valid YAML: "), yaml.getMessage());
        assertFalse(yaml.getMessage().contains("\n"), "one line: " + yaml.getMessage());
        UbConfigException json = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("{\"qkv_fprop\": {\"num_sm\": 4,}}", "broken.json", ConfigFormat.JSON));
        assertTrue(json.getMessage().startsWith("broken.json:1:28: not valid JSON: "), json.getMessage());
    }

    @Test
    void aDocumentThatIsNotAMappingIsRejected() {
        UbConfigException list = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("- qkv_fprop\n- proj_fprop\n", "list.yaml", ConfigFormat.YAML));
        assertEquals("list.yaml:1:1: a configuration is a mapping of keys, got a list", list.getMessage());
        UbConfigException twoDocs = assertThrows(UbConfigException.class, () -> UbConfig.builder()
                .load("ub_tp_comm_overlap: true\n---\nub_overlap_ag: false\n", "two.yaml", ConfigFormat.YAML));
        assertTrue(twoDocs.getMessage().contains("more than one document"), twoDocs.getMessage());
    }

    @Test
    void anEmptyFileIsAnEmptyConfiguration() throws IOException {
        assertEquals(UbConfig.builder().build(), UbConfig.fromFile(write("empty.yaml", "# nothing set\n")));
    }

    @Test
    void theFormatComesFromTheFileName() throws IOException {
        Path txt = write("overlap.txt", "qkv_fprop: {}\n");
        UbConfigException e = assertThrows(UbConfigException.class, () -> UbConfig.fromFile(txt));
        assertTrue(e.getMessage().endsWith("expected .yaml, .yml or .json"), e.getMessage());
        assertEquals(ConfigFormat.YAML, ConfigFormat.forFile(Path.of("a.YML")));
        assertEquals(ConfigFormat.JSON, ConfigFormat.forFile(Path.of("a.json")));
    }

    @Test
    void laterSourcesReplaceEarlierOnesKeyByKey() throws IOException {
        Path base = write("base.yaml", "proj_fprop:\n  num_sm: 24\n  num_splits: 4\n");
        Path override = write("override.yaml", "proj_fprop:\n  num_splits: 8\n");
        GemmOverlapConfig c = tp4().load(base).load(override).build().gemm(GemmName.PROJ_FPROP);
        assertEquals(24, c.numSm(), "kept from the first file");
        assertEquals(8, c.numSplits(), "replaced by the second");
        UbConfigException e = assertThrows(UbConfigException.class, () -> tp4().load(base)
                .load("proj_fprop:\n  method: bulk\n", "late.yaml", ConfigFormat.YAML).build());
        assertEquals("late.yaml:2:11", e.origin().toString(), "the error names where the offending value came from");
    }
}
