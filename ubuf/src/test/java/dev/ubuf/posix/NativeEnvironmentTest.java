package dev.ubuf.posix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class NativeEnvironmentTest {
    @Test
    void setsOnlyWhatIsNotSetAndNativeCodeSeesIt() {
        String name = "UBUF_TEST_" + UUID.randomUUID().toString().replace('-', '_');
        assertEquals(Optional.empty(), NativeEnvironment.get(name));
        assertTrue(NativeEnvironment.setIfAbsent(name, "first"));
        assertEquals(Optional.of("first"), NativeEnvironment.get(name));
        assertFalse(NativeEnvironment.setIfAbsent(name, "second"), "a value already set wins");
        assertEquals(Optional.of("first"), NativeEnvironment.get(name));
    }

    @Test
    void seesTheVariablesTheProcessStartedWith() {
        String path = System.getenv("PATH");
        assertEquals(Optional.ofNullable(path), NativeEnvironment.get("PATH"));
    }

    @Test
    void refusesWhatIsNotAName() {
        assertThrows(IllegalArgumentException.class, () -> NativeEnvironment.get("A=B"));
        assertThrows(IllegalArgumentException.class, () -> NativeEnvironment.setIfAbsent("", "x"));
        assertThrows(IllegalArgumentException.class, () -> NativeEnvironment.setIfAbsent("UBUF_X", "a\0b"));
    }
}
