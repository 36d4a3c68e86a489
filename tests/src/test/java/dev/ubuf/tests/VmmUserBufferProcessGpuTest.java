package dev.ubuf.tests;

import dev.ubuf.bootstrap.BootstrapConfig;
import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;
import dev.ubuf.config.BufferSharing;
import dev.ubuf.cuda.CudaContext;
import dev.ubuf.testutil.ChildJvm;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One JVM per GPU: this JVM is rank 0 on GPU 0, a child JVM ({@link VmmRankMain}) rank 1 on GPU 1. With automatic
 * sharing the communicator must choose VMM_POSIX_FD, and each rank's copies must land in the other's instance.
 */
class VmmUserBufferProcessGpuTest {
    private static final String TOKEN = "0123456789abcdef0123456789abcdef";

    @Test
    void twoProcessesShareUserBuffersThroughVmmFileDescriptorsByDefault() throws Exception {
        VmmUserBufferGpuTest.assumeTwoGpusWithVmmFileDescriptors();
        int port = freePort();
        Map<String, String> env = new HashMap<>(new LaunchEnvironment(1, 2, 1, "127.0.0.1", port, TOKEN)
                .toEnvironment());
        env.put(BootstrapConfig.TIMEOUT_VARIABLE, "60");
        try (ChildJvm child = ChildJvm.start("rank1", classPath(), VmmRankMain.class, env)) {
            try (TcpBootstrap root = TcpBootstrap.connect(new LaunchEnvironment(0, 2, 0, "127.0.0.1", port, TOKEN),
                    new BootstrapConfig(Duration.ofSeconds(60)))) {
                CudaContext ctx = CudaContext.retainPrimary(0);
                try {
                    assertEquals(BufferSharing.VMM_POSIX_FD,
                            P2pScenario.copyToPeerAndCheck(root, ctx, VmmUserBufferGpuTest.ENV, null, 3));
                } finally {
                    ctx.close();
                }
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("rank 0 failed: " + e + "\nrank 1's output:\n" + child.output(), e);
            }
            assertEquals(0, child.waitFor(Duration.ofSeconds(90)), child.output());
            assertTrue(child.output().contains("OK rank 1 sharing VMM_POSIX_FD"), child.output());
        }
    }

    /**
     * The class path the test classes came from. Under the JUnit console launcher (the GPU bundle) they come from its
     * own class loader, not from java.class.path, which then holds only the launcher (with JUnit in it).
     */
    private static String classPath() throws URISyntaxException {
        String cp = System.getProperty("java.class.path");
        if (VmmRankMain.class.getClassLoader() instanceof URLClassLoader loader) {
            StringBuilder sb = new StringBuilder();
            for (URL url : loader.getURLs()) {
                sb.append(Path.of(url.toURI())).append(File.pathSeparator);
            }
            cp = sb + cp;
        }
        return cp;
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
