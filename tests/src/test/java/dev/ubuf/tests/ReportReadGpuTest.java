package dev.ubuf.tests;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host's bounded read of a flag ({@link CudaContext#readInt32(long, Duration)}), which timeout reports use,
 * answers with the flag's value while another stream of the same context is stuck waiting on a flag, and leaves
 * nothing open once the context's resources are closed.
 */
class ReportReadGpuTest {
    @Test
    void aReportReadsAFlagWhileAStreamOfTheSameContextWaitsForAnother() {
        Gpu.assumeGpus(1);
        try (CudaContext ctx = CudaContext.retainPrimary(0);
             CudaStream stuck = ctx.createStream(StreamPriority.HIGH);
             CudaStream writer = ctx.createStream(StreamPriority.NORMAL);
             DeviceBuffer flags = ctx.allocate(256, "flags")) {
            writer.fill8(flags.address(), (byte) 0, 256);
            writer.writeValue32(flags.address() + 4, 0x5eed_0042);
            writer.synchronize();
            stuck.waitValue32(flags.address(), 7); // nobody has written 7 yet
            assertFalse(stuck.synchronize(Duration.ofMillis(200)), "the waiting stream is stuck");
            assertEquals(0x5eed_0042, ctx.readInt32(flags.address() + 4, Duration.ofSeconds(2)));
            assertEquals(0, ctx.readInt32(flags.address(), Duration.ofSeconds(2)), "what the stuck wait sees");
            writer.writeValue32(flags.address(), 7); // release it, so the context closes idle
            assertTrue(stuck.synchronize(Duration.ofSeconds(10)), "the released stream finished");
            assertEquals(7, ctx.readInt32(flags.address(), Duration.ofSeconds(2)));
        }
    }
}
