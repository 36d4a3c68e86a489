package dev.ubuf.cuda;

import dev.ubuf.testutil.UbufTestExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineExecutionResults;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.lang.ref.Cleaner;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * {@link UbufTestExtension}'s leak check on the CPU: sample test classes open ledger entries the way CUDA resources
 * do, in a published ledger standing in for an open context, and the nested run must fail exactly the tests (or the
 * class) that left something open, naming it.
 */
class LeakCheckTest {
    /** A device ordinal no real context uses; the samples' ledgers are unpublished by it after each test. */
    static final int DEVICE = 72;

    /** A published ledger, as an open CudaContext has; leak reports of the samples go nowhere. */
    static ResourceLedger openContext(boolean stacks) {
        ResourceLedger ledger = new ResourceLedger(DEVICE, new LeakTracker(Cleaner.create(), message -> {
        }, stacks));
        ledger.publish(null);
        return ledger;
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    static class ClassContext {
        ResourceLedger context;
        final Object activations = new Object();
        final Object stream = new Object();

        @BeforeAll
        void open() {
            context = openContext(false);
        }

        @AfterAll
        void close() {
            context.unpublish();
        }

        @Test
        void leavesABufferAndAStreamOpen() {
            context.trackDeviceMemory(activations, "activations", 4096);
            context.track(stream, "high-priority stream", "", 0);
        }

        @Test
        void closesWhatItOpens() {
            context.trackDeviceMemory(new Object(), "scratch", 64).close();
        }

        @Test
        void usesTheClassContextOnly() {
        }
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    static class BeforeAllForgetsToClose {
        ResourceLedger context;
        final Object weights = new Object();

        @BeforeAll
        void open() {
            context = openContext(false);
            context.trackDeviceMemory(weights, "weights", 1 << 20);
        }

        @Test
        void usesTheWeights() {
        }

        @AfterAll
        void forgetsEverything() {
        }
    }

    static class TestForgetsItsContext {
        @Test
        void retainsAContextAndNeverClosesIt() {
            openContext(false);
        }
    }

    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    static class LeakWithStacks {
        ResourceLedger context;
        final Object buffer = new Object();

        @BeforeAll
        void open() {
            context = openContext(true);
        }

        @AfterAll
        void close() {
            context.unpublish();
        }

        @Test
        void allocatesAndForgets() {
            context.trackDeviceMemory(buffer, "", 256);
        }
    }

    private static EngineExecutionResults run(Class<?> sample) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(sample))
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .execute();
    }

    private static List<String> messages(Events events) {
        return events.stream()
                .map(e -> e.getRequiredPayload(TestExecutionResult.class).getThrowable().orElseThrow().getMessage())
                .toList();
    }

    /** The samples' own cleanup is what they get wrong on purpose; their contexts must not leak into this test. */
    @AfterEach
    void unpublishTheSamplesContexts() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        for (ObjectName name : server.queryNames(new ObjectName("dev.ubuf:type=ResourceLedger,device=" + DEVICE
                + ",*"), null)) {
            server.unregisterMBean(name);
        }
    }

    @Test
    void aTestThatLeavesResourcesOpenFailsNamingEachByKindNameAndSize() {
        EngineExecutionResults results = run(ClassContext.class);
        results.testEvents().assertStatistics(s -> s.started(3).succeeded(2).failed(1));
        assertEquals(List.of("""
                        leaked 2 resources opened by this test and still open after it and its @AfterEach:
                          device buffer 'activations' (4096 bytes) on cuda:72
                          high-priority stream on cuda:72
                        (-Dubuf.debug.leaks=true records where each was allocated)"""),
                messages(results.testEvents().failed()));
        results.containerEvents().assertStatistics(s -> s.failed(0)); // reported once, by the test that leaked
    }

    @Test
    void whatBeforeAllOpensMayLiveThroughTheTestsButMustBeClosedByAfterAll() {
        EngineExecutionResults results = run(BeforeAllForgetsToClose.class);
        results.testEvents().assertStatistics(s -> s.started(1).succeeded(1));
        assertEquals(List.of("""
                        leaked 2 resources opened by this class (@BeforeAll or a test) and still open after its \
                        @AfterAll:
                          CUDA context of cuda:72
                          device buffer 'weights' (1048576 bytes) on cuda:72
                        (-Dubuf.debug.leaks=true records where each was allocated)"""),
                messages(results.containerEvents().failed()));
    }

    @Test
    void aContextLeftOpenIsALeak() {
        EngineExecutionResults results = run(TestForgetsItsContext.class);
        results.testEvents().assertStatistics(s -> s.started(1).failed(1));
        assertTrue(messages(results.testEvents().failed()).getFirst().contains("\n  CUDA context of cuda:72\n"),
                messages(results.testEvents().failed()).toString());
    }

    @Test
    void withStacksTheFailureSaysWhereTheLeakWasAllocated() {
        EngineExecutionResults results = run(LeakWithStacks.class);
        results.testEvents().assertStatistics(s -> s.started(1).failed(1));
        String message = messages(results.testEvents().failed()).getFirst();
        assertTrue(message.startsWith("""
                leaked 1 resource opened by this test and still open after it and its @AfterEach:
                  device buffer (256 bytes) on cuda:72, allocated at:
                    \tat dev.ubuf.cuda.LeakCheckTest$LeakWithStacks.allocatesAndForgets("""), message);
    }
}
