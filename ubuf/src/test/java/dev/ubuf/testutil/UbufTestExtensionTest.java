package dev.ubuf.testutil;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * GPU skips and {@code ubuf.requireGpu}, on sample test classes run by a nested JUnit engine, on a machine with or
 * without GPUs alike: the samples declare a missing GPU instead of probing for one. The samples carry no annotation:
 * the extension reaches them through auto-detection, as it reaches every real test class.
 */
class UbufTestExtensionTest {
    static final String NO_DRIVER = "no CUDA driver on this machine (libcuda.so.1 not found)";

    static class NoGpuInTestMethods {
        @Test
        void first() {
            GpuAssumptions.assumeGpu(false, NO_DRIVER);
        }

        @Test
        void second() {
            GpuAssumptions.assumeGpu(false, NO_DRIVER);
        }
    }

    static class NoGpuInBeforeAll {
        @BeforeAll
        static void needsGpus() {
            GpuAssumptions.assumeGpu(false, NO_DRIVER);
        }

        @Test
        void plain() {
        }

        @ParameterizedTest
        @ValueSource(ints = {1, 2, 3})
        void parameterized(int i) {
        }
    }

    static class NoGpuInBeforeEach {
        @BeforeEach
        void needsGpus() {
            GpuAssumptions.assumeGpu(false, NO_DRIVER);
        }

        @Test
        void only() {
        }
    }

    static class NonGpuAssumption {
        @Test
        void needsGcc() {
            Assumptions.assumeTrue(false, "gcc not available");
        }
    }

    static class WithGpu {
        @Test
        void runs() {
            GpuAssumptions.assumeGpu(true, "unused");
        }
    }

    private static Events run(Class<?> sample, String requireGpu) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(sample))
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(UbufTestExtension.REQUIRE_GPU, requireGpu)
                .execute()
                .testEvents();
    }

    private static List<String> messages(Events events) {
        return events.stream()
                .map(e -> e.getRequiredPayload(TestExecutionResult.class).getThrowable().orElseThrow().getMessage())
                .toList();
    }

    private static List<String> names(Events events) {
        return events.stream().map(Event::getTestDescriptor).map(d -> d.getDisplayName()).toList();
    }

    @Test
    void aMissingGpuSkipsTheTestWithTheReason() {
        Events events = run(NoGpuInTestMethods.class, "false");
        events.assertStatistics(s -> s.started(2).aborted(2).failed(0));
        assertEquals(List.of(NO_DRIVER, NO_DRIVER), messages(events.aborted()));
    }

    @Test
    void withRequireGpuAMissingGpuFailsTheTestWithTheReason() {
        Events events = run(NoGpuInTestMethods.class, "true");
        events.assertStatistics(s -> s.started(2).aborted(0).failed(2));
        String expected = "a GPU is required (ubuf.requireGpu=true), but this GPU test would be skipped: " + NO_DRIVER;
        assertEquals(List.of(expected, expected), messages(events.failed()));
    }

    @Test
    void aMissingGpuInBeforeAllSkipsEveryTestOfTheClassOneByOneWithTheReason() {
        Events events = run(NoGpuInBeforeAll.class, "false");
        events.assertStatistics(s -> s.started(4).aborted(4).failed(0));
        assertEquals(List.of("[1] 1", "[2] 2", "[3] 3", "plain()"), names(events.aborted()).stream().sorted().toList());
        assertEquals(List.of(NO_DRIVER, NO_DRIVER, NO_DRIVER, NO_DRIVER), messages(events.aborted()));
    }

    @Test
    void withRequireGpuAMissingGpuInBeforeAllFailsEveryTestOfTheClass() {
        Events events = run(NoGpuInBeforeAll.class, "true");
        events.assertStatistics(s -> s.started(4).aborted(0).failed(4));
        assertTrue(messages(events.failed()).stream().allMatch(m -> m.contains("ubuf.requireGpu=true")
                && m.endsWith(NO_DRIVER)), messages(events.failed()).toString());
    }

    @Test
    void aMissingGpuInBeforeEachSkipsOrWithRequireGpuFails() {
        run(NoGpuInBeforeEach.class, "false").assertStatistics(s -> s.started(1).aborted(1).failed(0));
        Events required = run(NoGpuInBeforeEach.class, "true");
        required.assertStatistics(s -> s.started(1).aborted(0).failed(1));
        assertTrue(messages(required.failed()).getFirst().endsWith(NO_DRIVER), messages(required.failed()).toString());
    }

    @Test
    void requireGpuLeavesOtherSkipsAlone() {
        Events events = run(NonGpuAssumption.class, "true");
        events.assertStatistics(s -> s.started(1).aborted(1).failed(0));
        assertEquals(List.of("Assumption failed: gcc not available"), messages(events.aborted()));
    }

    @Test
    void withRequireGpuATestWhoseGpuIsThereRunsNormally() {
        run(WithGpu.class, "true").assertStatistics(s -> s.started(1).succeeded(1));
    }

    @Test
    void theSamplesStayOutOfTheGpuBundlesRun() {
        // scripts/run-gpu.sh runs every class under dev.ubuf whose name matches .*Gpu.*Test, with ubuf.requireGpu.
        for (Class<?> sample : UbufTestExtensionTest.class.getDeclaredClasses()) {
            assertFalse(sample.getName().matches(".*Gpu.*Test"), sample.getName());
        }
    }

    @Test
    void theExtensionComesFromAutoDetection() {
        Events events = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(NoGpuInTestMethods.class))
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "false")
                .configurationParameter(UbufTestExtension.REQUIRE_GPU, "true")
                .execute()
                .testEvents();
        events.assertStatistics(s -> s.started(2).aborted(2).failed(0));
    }
}
