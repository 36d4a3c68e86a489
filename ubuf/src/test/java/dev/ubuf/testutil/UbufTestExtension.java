package dev.ubuf.testutil;

import dev.ubuf.cuda.LeakTracker;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestWatcher;

import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The discipline of ubuf's tests, registered for every test class by JUnit's extension auto-detection (this class is
 * a service in the test-jar; the ubuf module's surefire and the tests module's junit-platform.properties switch
 * auto-detection on).
 *
 * <ul>
 *   <li>GPU skips: a {@link GpuUnavailableException} (from {@link GpuAssumptions}) skips the test with its reason.
 *   Thrown in {@code @BeforeAll}, it skips every test of the class one by one with the reason, instead of the class
 *   vanishing from the counts.</li>
 *   <li>{@code -Dubuf.requireGpu=true} ({@link #REQUIRE_GPU}, also a JUnit configuration parameter): every one of
 *   those skips is a failure with the same reason, so a GPU run cannot pass by skipping.</li>
 *   <li>Leaks: a test that leaves open any resource it opened in a CUDA context's ledger (buffers, streams, events,
 *   user buffers, kernel libraries, graphs, whole contexts) fails, naming each with its kind, name and size, and its
 *   allocation stack with {@code -Dubuf.debug.leaks=true}. Checked after each test (and its {@code @AfterEach}), and
 *   after the class (and its {@code @AfterAll}) for what {@code @BeforeAll} opened.</li>
 * </ul>
 */
public final class UbufTestExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
        AfterEachCallback, TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler, TestWatcher {
    /** Configuration parameter or system property: {@code true} turns every GPU skip into a failure. */
    public static final String REQUIRE_GPU = "ubuf.requireGpu";

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(UbufTestExtension.class);
    private static final String CLASS_SNAPSHOT = "class snapshot";
    private static final String TEST_SNAPSHOT = "test snapshot";
    private static final String REPORTED = "leaks reported by tests";
    private static final String SKIPS = "GPU skips";
    private static final String NO_GPU_FOR_CLASS = "@BeforeAll found no GPU";

    /** How many tests of a class were skipped for want of a GPU, and why. */
    private record Skips(AtomicInteger count, Set<String> reasons) {
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        ExtensionContext.Store store = context.getStore(NS);
        store.put(CLASS_SNAPSHOT, OpenResources.now());
        store.put(REPORTED, new HashSet<OpenResources.Leak>());
        store.put(SKIPS, new Skips(new AtomicInteger(), new LinkedHashSet<>()));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NS).put(TEST_SNAPSHOT, OpenResources.now());
        GpuUnavailableException noGpu = context.getStore(NS).get(NO_GPU_FOR_CLASS, GpuUnavailableException.class);
        if (noGpu != null) {
            GpuUnavailableException forThisTest = new GpuUnavailableException(noGpu.getMessage());
            if (requireGpu(context)) {
                throw required(forThisTest);
            }
            throw forThisTest;
        }
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        throw convert(context, throwable);
    }

    /** A GPU skip in {@code @BeforeAll}: remembered, so that each test reports it (see {@link #beforeEach}). */
    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable throwable)
            throws Throwable {
        if (throwable instanceof GpuUnavailableException noGpu) {
            context.getStore(NS).put(NO_GPU_FOR_CLASS, noGpu);
            return;
        }
        throw throwable;
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable throwable)
            throws Throwable {
        throw convert(context, throwable);
    }

    @Override
    public void testAborted(ExtensionContext context, Throwable cause) {
        Skips skips = context.getStore(NS).get(SKIPS, Skips.class);
        if (cause instanceof GpuUnavailableException && skips != null) {
            skips.count().incrementAndGet();
            synchronized (skips.reasons()) {
                skips.reasons().add(cause.getMessage());
            }
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        OpenResources before = context.getStore(NS).get(TEST_SNAPSHOT, OpenResources.class);
        List<OpenResources.Leak> leaks = OpenResources.now().openedSince(before);
        if (!leaks.isEmpty()) {
            @SuppressWarnings("unchecked")
            Set<OpenResources.Leak> reported = context.getStore(NS).get(REPORTED, Set.class);
            if (reported != null) {
                reported.addAll(leaks); // the class-level check must not report them a second time
            }
            throw new AssertionError(describe(leaks, "opened by this test and still open after it and its @AfterEach"));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        Skips skips = context.getStore(NS).get(SKIPS, Skips.class);
        if (skips != null && skips.count().get() > 0) {
            String where = context.getTestClass().map(Class::getName).orElse(context.getDisplayName());
            System.out.println("SKIPPED (GPU test) " + where + ": " + skips.count().get()
                    + (skips.count().get() == 1 ? " test: " : " tests: ") + String.join("; ", skips.reasons()));
        }
        OpenResources before = context.getStore(NS).get(CLASS_SNAPSHOT, OpenResources.class);
        @SuppressWarnings("unchecked")
        Set<OpenResources.Leak> reported = context.getStore(NS).get(REPORTED, Set.class);
        List<OpenResources.Leak> leaks = OpenResources.now().openedSince(before).stream()
                .filter(leak -> !reported.contains(leak))
                .toList();
        if (!leaks.isEmpty()) {
            throw new AssertionError(describe(leaks,
                    "opened by this class (@BeforeAll or a test) and still open after its @AfterAll"));
        }
    }

    private static boolean requireGpu(ExtensionContext context) {
        return context.getConfigurationParameter(REQUIRE_GPU).map(Boolean::parseBoolean).orElse(false);
    }

    private static Throwable convert(ExtensionContext context, Throwable throwable) {
        return throwable instanceof GpuUnavailableException noGpu && requireGpu(context) ? required(noGpu) : throwable;
    }

    private static AssertionError required(GpuUnavailableException noGpu) {
        return new AssertionError("a GPU is required (" + REQUIRE_GPU + "=true), but this GPU test would be skipped: "
                + noGpu.getMessage(), noGpu);
    }

    private static String describe(List<OpenResources.Leak> leaks, String when) {
        StringBuilder sb = new StringBuilder("leaked " + leaks.size() + (leaks.size() == 1 ? " resource " : " resources ")
                + when + ":");
        boolean stacks = false;
        for (OpenResources.Leak leak : leaks) {
            sb.append("\n  ").append(leak.description());
            if (leak.allocationStack() != null) {
                stacks = true;
                sb.append(", allocated at:\n").append(leak.allocationStack().indent(4).stripTrailing());
            }
        }
        if (!stacks) {
            sb.append("\n(-D").append(LeakTracker.DEBUG_PROPERTY).append("=true records where each was allocated)");
        }
        return sb.toString();
    }
}
