package dev.ubuf.gemm;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A {@link GemmRunner} on the fake cuBLASLt for each test of the class that registers it as a static
 * {@code @RegisterExtension} field: the class's own fake built first (the class is skipped without gcc), then before
 * each test a handle and a runner (with a fresh tuner where given), closed after the test, when every descriptor,
 * layout, preference and handle the fake made must be gone.
 */
final class FakeGemmRunner implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback {
    private final long workspace;
    private final Supplier<GemmTuner> tuners;
    private final TuningDevice device;
    private FakeCublasLt fake;
    private CublasLtHandle handle;
    private GemmTuner tuner;
    private GemmRunner runner;

    private FakeGemmRunner(long workspace, Supplier<GemmTuner> tuners, TuningDevice device) {
        this.workspace = workspace;
        this.tuners = tuners;
        this.device = device;
    }

    /** Runners without a tuner, on a workspace at {@code workspace} of the recommended size. */
    static FakeGemmRunner plain(long workspace) {
        return new FakeGemmRunner(workspace, null, null);
    }

    /** Runners tuning with a fresh tuner from {@code tuners} for {@code device}. */
    static FakeGemmRunner tuned(long workspace, Supplier<GemmTuner> tuners, TuningDevice device) {
        return new FakeGemmRunner(workspace, tuners, device);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        fake = FakeCublasLt.buildOrSkip();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        handle = CublasLtHandle.create(fake.library());
        if (tuners == null) {
            runner = new GemmRunner(handle, workspace, GemmRunner.RECOMMENDED_WORKSPACE_BYTES);
        } else {
            tuner = tuners.get();
            runner = new GemmRunner(handle, workspace, GemmRunner.RECOMMENDED_WORKSPACE_BYTES, tuner, device);
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        try {
            runner.close();
        } finally {
            handle.close();
        }
        assertEquals(0, fake.liveObjects(), "every descriptor, layout, preference and handle destroyed");
    }

    /** What the last cublasLtMatmul received (FakeCublasLt#lastCall). */
    String lastCall() {
        return fake.lastCall();
    }

    /** What the last heuristic query received (FakeCublasLt#lastHeuristic). */
    String lastHeuristic() {
        return fake.lastHeuristic();
    }

    CublasLt library() {
        return fake.library();
    }

    CublasLtHandle handle() {
        return handle;
    }

    GemmRunner runner() {
        return runner;
    }

    /** This test's tuner (tuned runners only). */
    GemmTuner tuner() {
        return tuner;
    }
}
