package dev.ubuf.tests;

import dev.ubuf.testutil.UbufTestExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.Extension;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.ServiceLoader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every test class here gets {@link UbufTestExtension} (GPU skips, {@code -Dubuf.requireGpu=true}, leak checks)
 * from the class path alone, which is all the GPU bundle's JUnit console launcher has: the tests jar's
 * junit-platform.properties switches on extension auto-detection, and ubuf's test-jar registers the extension.
 */
class TestExtensionRegistrationTest {
    @Test
    void exactlyOneJunitPlatformPropertiesSwitchesOnExtensionAutoDetection() throws IOException {
        ClassLoader loader = TestExtensionRegistrationTest.class.getClassLoader();
        List<URL> files = Collections.list(loader.getResources("junit-platform.properties"));
        assertEquals(1, files.size(), "JUnit reads only the first such file and warns about the others: " + files);
        Properties properties = new Properties();
        try (InputStream in = files.getFirst().openStream()) {
            properties.load(in);
        }
        assertEquals("true", properties.getProperty("junit.jupiter.extensions.autodetection.enabled"));
    }

    @Test
    void theUbufTestExtensionIsAnAutoDetectableExtension() {
        ClassLoader loader = TestExtensionRegistrationTest.class.getClassLoader();
        assertTrue(ServiceLoader.load(Extension.class, loader).stream()
                .anyMatch(provider -> provider.type() == UbufTestExtension.class));
    }
}
