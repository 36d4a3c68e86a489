package dev.ubuf.cuda;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * ubuf sets CUDA_DEVICE_MAX_CONNECTIONS=32 in the C environment unless the user set it (the JVM's copy of the
 * environment says what the user set), and {@link HardwareQueues#effective} reports what the driver will read.
 */
class HardwareQueuesTest {
    @Test
    void theUsersValueWinsElseThirtyTwoIsWhatTheDriverReads() {
        String user = System.getenv(HardwareQueues.VARIABLE);
        HardwareQueues.mostUnlessChosen();
        HardwareQueues.mostUnlessChosen(); // once per process
        Map<String, String> seen = HardwareQueues.effective(Map.of("OTHER", "x"));
        assertEquals(user != null ? user : HardwareQueues.DEFAULT, seen.get(HardwareQueues.VARIABLE), seen.toString());
        assertEquals("x", seen.get("OTHER"), "the rest of the map is kept");
    }
}
