package dev.ubuf.gemm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ubuf.cuda.CudaContext;
import dev.ubuf.cuda.CudaStream;
import dev.ubuf.cuda.DeviceBuffer;
import dev.ubuf.cuda.StreamPriority;
import dev.ubuf.testutil.GpuAssumptions;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The online tuner's timing on a GPU, with device memsets of known sizes for candidates (a candidate that sets 16 times
 * fewer bytes is faster alone and back to back): a challenger is timed back to back as a captured graph of the runs
 * {@link StreamCandidateBench#burstRuns} gives, the first choice beside it, and stays a candidate; the caller's
 * stream is never used.
 */
@SuppressWarnings("restricted") // the test sets memory through the driver's cuMemsetD8Async on a raw stream
class StreamCandidateBenchGpuTest {
    static CudaContext ctx;
    static CudaStream caller;
    static MethodHandle memsetAsync;
    static MethodHandle isCapturing;

    @BeforeAll
    static void open() {
        GpuAssumptions.assumeGpus(1);
        ctx = CudaContext.retainPrimary(0);
        caller = ctx.createStream(StreamPriority.NORMAL);
        SymbolLookup cuda = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        Linker linker = Linker.nativeLinker();
        memsetAsync = linker.downcallHandle(cuda.find("cuMemsetD8Async").orElseThrow(), FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_BYTE, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG));
        isCapturing = linker.downcallHandle(cuda.find("cuStreamIsCapturing").orElseThrow(), FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            caller.close();
            assertEquals(List.of(), ctx.ledger().openResources(), "everything the test opened is closed");
            ctx.close();
        }
    }

    private static boolean capturing(long stream) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment status = a.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, (int) isCapturing.invokeExact(stream, status), "cuStreamIsCapturing");
            return status.get(ValueLayout.JAVA_INT, 0) == 1; // CU_STREAM_CAPTURE_STATUS_ACTIVE
        }
    }

    @Test
    void aCandidateFasterBothWaysIsTimedBackToBackAsAGraphAndKept() {
        long bytes = 64L << 20;
        long[] sizes = {bytes, bytes / 16, bytes}; // 0: the first; 1: faster; 2: as slow as the first
        int[] captured = new int[sizes.length];
        int[] eager = new int[sizes.length];
        long[] streams = new long[1];
        try (DeviceBuffer probe = ctx.allocate(256)) {
            StreamCandidateBench bench = new StreamCandidateBench(ctx, caller);
            double[] millis = bench.time(sizes.length, bytes, probe.address(), 0, (i, c, ws, wsBytes, stream) -> {
                try {
                    streams[0] = stream;
                    if (capturing(stream)) {
                        captured[i]++;
                    } else {
                        eager[i]++;
                    }
                    assertEquals(0, (int) memsetAsync.invokeExact(c, (byte) i, sizes[i], stream), "cuMemsetD8Async");
                } catch (Throwable t) {
                    throw new AssertionError(t);
                }
            });
            assertEquals(sizes.length, millis.length);
            assertTrue(Double.isFinite(millis[0]) && millis[0] > 0, Arrays.toString(millis));
            assertTrue(Double.isFinite(millis[1]) && millis[1] < millis[0],
                    "the candidate setting 16x fewer bytes stays, faster: " + Arrays.toString(millis));
            assertFalse(Double.isNaN(millis[2]), Arrays.toString(millis));
            int runs = StreamCandidateBench.burstRuns(millis[0]);
            assertEquals(runs, captured[0], "the first, captured once as a graph of its runs back to back");
            assertEquals(runs, captured[1], "the challenger likewise");
            assertTrue(captured[2] == 0 || captured[2] == runs, "the third only when it was a challenger: "
                    + Arrays.toString(captured));
            for (int i = 0; i < sizes.length; i++) {
                assertTrue(eager[i] >= 1 + StreamCandidateBench.WARMUPS + 2 * StreamCandidateBench.ROUNDS,
                        "each candidate ran alone first: " + Arrays.toString(eager));
            }
            assertTrue(streams[0] != caller.nativeHandle(), "timed on a private stream, not the caller's");
        }
    }
}
