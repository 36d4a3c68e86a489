package dev.ubuf.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The environment variables, read once at the edge. */
class UbufEnvironmentTest {

    @Test
    void anEmptyEnvironmentGivesTheDefaults() {
        UbufEnvironment env = UbufEnvironment.from(Map.of());
        assertFalse(env.skipMulticast());
        assertFalse(env.debug());
        assertEquals(UbufEnvironment.DEFAULT_TIMEOUT, env.timeout());
        assertTrue(env.gemmTuning(), "GEMMs are tuned unless UB_GEMM_TUNING=0");
        assertNull(env.gemmTuningFile());
        assertEquals(Path.of(System.getProperty("user.home"), ".cache", "ubuf"), env.cacheDirectory());
    }

    @Test
    void gemmTuningIsSwitchedOffWithZero() {
        assertFalse(UbufEnvironment.from(Map.of("UB_GEMM_TUNING", "0")).gemmTuning());
        assertTrue(UbufEnvironment.from(Map.of("UB_GEMM_TUNING", "1")).gemmTuning());
        var e = assertThrows(IllegalArgumentException.class,
                () -> UbufEnvironment.from(Map.of("UB_GEMM_TUNING", "off")));
        assertEquals("UB_GEMM_TUNING must be 0 or 1, got 'off'", e.getMessage());
    }

    @Test
    void theTuningFileAndTheCacheDirectoryCanBeMoved() {
        UbufEnvironment env = UbufEnvironment.from(Map.of("UB_GEMM_TUNING_FILE", "/data/tuning.tsv",
                "XDG_CACHE_HOME", "/scratch/cache"));
        assertEquals(Path.of("/data/tuning.tsv"), env.gemmTuningFile());
        assertEquals(Path.of("/scratch/cache/ubuf"), env.cacheDirectory());
    }

    @Test
    void aProgrammaticEnvironmentTunesInMemoryOnly() {
        UbufEnvironment env = new UbufEnvironment(true, Duration.ofSeconds(5), false);
        assertTrue(env.gemmTuning());
        assertNull(env.gemmTuningFile());
        assertNull(env.cacheDirectory());
    }

    @Test
    void bufferSharingIsAutomaticUnlessNamed() {
        assertEquals(null, UbufEnvironment.from(Map.of()).bufferSharing());
        assertEquals(null, UbufEnvironment.from(Map.of("UB_BUFFER_SHARING", " ")).bufferSharing());
        assertEquals(dev.ubuf.config.BufferSharing.VMM_POSIX_FD,
                UbufEnvironment.from(Map.of("UB_BUFFER_SHARING", "VMM")).bufferSharing());
        assertEquals(dev.ubuf.config.BufferSharing.IN_PROCESS,
                UbufEnvironment.from(Map.of("UB_BUFFER_SHARING", "in_process")).bufferSharing());
        assertEquals(dev.ubuf.config.BufferSharing.LEGACY_IPC,
                UbufEnvironment.from(Map.of("UB_BUFFER_SHARING", "ipc")).bufferSharing());
        var e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> UbufEnvironment.from(Map.of("UB_BUFFER_SHARING", "nvlink")));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("in_process, vmm or ipc, got 'nvlink'"),
                e.getMessage());
    }

    @Test
    void skipMcBesideNvlsOnIsRefusedWhereTheEnvironmentIsRead() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> UbufEnvironment.from(Map.of("UB_SKIPMC", "1", "NCCL_NVLS_ENABLE", "1")));
        assertTrue(e.getMessage().contains("UB_SKIPMC=1") && e.getMessage().contains("NCCL_NVLS_ENABLE=1"),
                e.getMessage());
        assertTrue(UbufEnvironment.from(Map.of("UB_SKIPMC", "1", "NCCL_NVLS_ENABLE", "0")).skipMulticast());
        assertFalse(UbufEnvironment.from(Map.of("NCCL_NVLS_ENABLE", "1")).skipMulticast());
    }
}
