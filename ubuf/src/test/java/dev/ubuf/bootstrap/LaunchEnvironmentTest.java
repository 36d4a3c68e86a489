package dev.ubuf.bootstrap;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchEnvironmentTest {
    private static Map<String, String> torchrunStyle() {
        Map<String, String> env = new HashMap<>();
        env.put("RANK", "3");
        env.put("WORLD_SIZE", "4");
        env.put("LOCAL_RANK", "3");
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", "29500");
        return env;
    }

    @Test
    void readsTorchrunVariablesAndTheOptionalToken() {
        LaunchEnvironment plain = LaunchEnvironment.fromEnvironment(torchrunStyle());
        assertEquals(new LaunchEnvironment(3, 4, 3, "127.0.0.1", 29500, ""), plain);
        assertFalse(plain.hasJobToken());

        Map<String, String> env = torchrunStyle();
        env.put("UBUF_JOB_TOKEN", "00112233445566778899aabbccddeeff");
        LaunchEnvironment withToken = LaunchEnvironment.fromEnvironment(env);
        assertTrue(withToken.hasJobToken());
        assertEquals(withToken, LaunchEnvironment.fromEnvironment(withToken.toEnvironment()), "round trip");
        assertFalse(withToken.toString().contains("0011223344"), "toString must not print the token");
    }

    @Test
    void listsEveryMissingOrInvalidVariable() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LaunchEnvironment.fromEnvironment(Map.of("RANK", "x", "MASTER_PORT", "29500")));
        for (String expected : new String[]{"RANK is not an integer: 'x'", "WORLD_SIZE is not set",
                "LOCAL_RANK is not set", "MASTER_ADDR is not set"}) {
            assertTrue(e.getMessage().contains(expected), e.getMessage());
        }
        Map<String, String> outOfRange = torchrunStyle();
        outOfRange.put("RANK", "4");
        outOfRange.put("MASTER_PORT", "0");
        IllegalArgumentException range = assertThrows(IllegalArgumentException.class,
                () -> LaunchEnvironment.fromEnvironment(outOfRange));
        assertTrue(range.getMessage().contains("rank 4 is outside 0..3"), range.getMessage());
        assertTrue(range.getMessage().contains("master port must be in 1..65535"), range.getMessage());
        Map<String, String> badToken = torchrunStyle();
        badToken.put("UBUF_JOB_TOKEN", "has space");
        assertThrows(IllegalArgumentException.class, () -> LaunchEnvironment.fromEnvironment(badToken));
    }

    @Test
    void bootstrapTimeoutComesFromUbTimeoutInSeconds() {
        assertEquals(Duration.ofSeconds(110), BootstrapConfig.fromEnvironment(Map.of()).timeout());
        assertEquals(Duration.ofSeconds(3), BootstrapConfig.fromEnvironment(Map.of("UB_TIMEOUT", "3")).timeout());
        assertEquals(Duration.ofMillis(1500),
                BootstrapConfig.fromEnvironment(Map.of("UB_TIMEOUT", " 1.5 ")).timeout());
        for (String bad : new String[]{"0", "-2", "soon", "NaN", "Infinity"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BootstrapConfig.fromEnvironment(Map.of("UB_TIMEOUT", bad)), bad);
            assertTrue(e.getMessage().contains("UB_TIMEOUT"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new BootstrapConfig(Duration.ZERO));
    }

    @Test
    void aJobTokenIsRequiredUnlessUbufAllowNoTokenIsOne() {
        assertFalse(BootstrapConfig.fromEnvironment(Map.of()).allowNoToken());
        assertFalse(BootstrapConfig.fromEnvironment(Map.of("UBUF_ALLOW_NO_TOKEN", "0")).allowNoToken());
        assertTrue(BootstrapConfig.fromEnvironment(Map.of("UBUF_ALLOW_NO_TOKEN", "1")).allowNoToken());
        for (String bad : new String[]{"yes", "2", "true"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BootstrapConfig.fromEnvironment(Map.of("UBUF_ALLOW_NO_TOKEN", bad)), bad);
            assertTrue(e.getMessage().contains("UBUF_ALLOW_NO_TOKEN must be 0 or 1"), e.getMessage());
        }
    }

    @Test
    void handshakeDeadlineComesFromUbufHandshakeTimeoutInSeconds() {
        assertEquals(Duration.ofSeconds(5), BootstrapConfig.fromEnvironment(Map.of()).handshakeTimeout());
        assertEquals(Duration.ofMillis(2500),
                BootstrapConfig.fromEnvironment(Map.of("UBUF_HANDSHAKE_TIMEOUT", "2.5")).handshakeTimeout());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BootstrapConfig.fromEnvironment(Map.of("UBUF_HANDSHAKE_TIMEOUT", "-1")));
        assertTrue(e.getMessage().contains("UBUF_HANDSHAKE_TIMEOUT"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> BootstrapConfig.defaults().withHandshakeTimeout(Duration.ZERO));
    }
}
