package dev.ubuf.nccl;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What ubuf sets for NCCL before it starts, and the one combination it refuses, decided from the environment. */
class NcclEnvironmentTest {
    @Test
    void ncclConnectsAtInitAndUnderSkipMcNeverUsesMulticast() {
        assertEquals(Map.of("NCCL_RUNTIME_CONNECT", "0"), NcclEnvironment.defaults(Map.of()));
        assertEquals(List.of("NCCL_RUNTIME_CONNECT", "NCCL_NVLS_ENABLE"),
                List.copyOf(NcclEnvironment.defaults(Map.of("UB_SKIPMC", "1")).keySet()));
        assertEquals("0", NcclEnvironment.defaults(Map.of("UB_SKIPMC", "true")).get("NCCL_NVLS_ENABLE"));
        assertEquals(Map.of("NCCL_RUNTIME_CONNECT", "0"), NcclEnvironment.defaults(Map.of("UB_SKIPMC", "0")));
        // a malformed UB_SKIPMC errs on the safe side here (UbufEnvironment refuses it with a message)
        assertEquals("0", NcclEnvironment.defaults(Map.of("UB_SKIPMC", "yes")).get("NCCL_NVLS_ENABLE"));
    }

    @Test
    void theUsersValuesWin() {
        assertEquals(Map.of(), NcclEnvironment.defaults(Map.of("UB_SKIPMC", "1", "NCCL_RUNTIME_CONNECT", "1",
                "NCCL_NVLS_ENABLE", "0")));
        assertEquals(Map.of("NCCL_RUNTIME_CONNECT", "0"), NcclEnvironment.defaults(Map.of("NCCL_NVLS_ENABLE", "1")));
        // a blank value counts as unset, as UbufEnvironment reads its own variables
        assertEquals("0", NcclEnvironment.defaults(Map.of("UB_SKIPMC", "1", "NCCL_NVLS_ENABLE", " "))
                .get("NCCL_NVLS_ENABLE"));
    }

    @Test
    void skipMcBesideNvlsOnIsRefusedWithWhatToChange() {
        String why = NcclEnvironment.refusal(Map.of("UB_SKIPMC", "1", "NCCL_NVLS_ENABLE", "1"));
        assertTrue(why.contains("UB_SKIPMC=1") && why.contains("NCCL_NVLS_ENABLE=1") && why.contains("unset"), why);
        assertNull(NcclEnvironment.refusal(Map.of("UB_SKIPMC", "1", "NCCL_NVLS_ENABLE", "0")));
        assertNull(NcclEnvironment.refusal(Map.of("UB_SKIPMC", "1")));
        assertNull(NcclEnvironment.refusal(Map.of("NCCL_NVLS_ENABLE", "1")));
        assertNull(NcclEnvironment.refusal(Map.of("UB_SKIPMC", "0", "NCCL_NVLS_ENABLE", "2")));
    }

    @Test
    void theProcessBindingSetsNvlsOffUnderSkipMcUnlessTheUserChose() {
        boolean skip = "1".equals(System.getenv("UB_SKIPMC"));
        java.util.Optional<String> before = dev.ubuf.posix.NativeEnvironment.get(NcclEnvironment.NVLS_ENABLE);
        Nccl.library();
        java.util.Optional<String> after = dev.ubuf.posix.NativeEnvironment.get(NcclEnvironment.NVLS_ENABLE);
        assertEquals(before.isPresent() || !skip ? before : java.util.Optional.of("0"), after);
    }
}
