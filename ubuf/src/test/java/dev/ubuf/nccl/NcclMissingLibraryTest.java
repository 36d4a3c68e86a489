package dev.ubuf.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NcclMissingLibraryTest {
    static final String MISSING = "libnccl-ubuf-test-missing.so.2";

    @Test
    void constructingTheBindingDoesNotThrow() {
        Nccl nccl = new Nccl(MISSING);
        assertEquals(MISSING, nccl.soname());
    }

    @Test
    void everyCallNamesTheMissingSoname() {
        Nccl nccl = new Nccl(MISSING);
        var version = assertThrows(NcclException.class, nccl::loadedVersion);
        assertTrue(version.getMessage().contains(MISSING), version.getMessage());
        assertTrue(version.getMessage().contains("LD_LIBRARY_PATH"), version.getMessage());
        assertEquals(NcclException.NO_RESULT, version.code());
        assertEquals("load " + MISSING, version.call());

        var id = assertThrows(NcclException.class, nccl::getUniqueId);
        assertTrue(id.getMessage().contains(MISSING), id.getMessage());
        var init = assertThrows(NcclException.class,
                () -> NcclCommunicator.initRank(nccl, new NcclUniqueId(new byte[128]), 2, 0));
        assertTrue(init.getMessage().contains(MISSING), init.getMessage());
        var all = assertThrows(NcclException.class, () -> NcclCommunicator.initAll(nccl, new int[] {0, 1}));
        assertTrue(all.getMessage().contains(MISSING), all.getMessage());
    }

    @Test
    void theProcessBindingMakesNcclConnectAtInitUnlessTheUserChose() {
        java.util.Optional<String> before = dev.ubuf.posix.NativeEnvironment.get(NcclEnvironment.RUNTIME_CONNECT);
        Nccl.library(); // loads or not: either way the setting is made first
        java.util.Optional<String> after = dev.ubuf.posix.NativeEnvironment.get(NcclEnvironment.RUNTIME_CONNECT);
        assertEquals(before.isPresent() ? before : java.util.Optional.of("0"), after);
    }

    @Test
    void theDefaultSonameIsLibnccl2() {
        assertEquals("libnccl.so.2", Nccl.SONAME);
    }
}
