package dev.ubuf.testutil;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import java.util.logging.StreamHandler;

/**
 * For tests that provoke failures on purpose (refused peers, lost ranks): what a test writes to System.out,
 * System.err and java.util.logging while it runs is kept, and printed only if the test fails. A passing build then
 * reads as passing, and a failing test still shows everything that led up to it. Use with
 * {@code @ExtendWith(OutputShownOnFailure.class)}; tests of one JVM run one at a time, which this relies on.
 */
public final class OutputShownOnFailure implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(OutputShownOnFailure.class);

    /** What was replaced, to put back, and what was kept. */
    private record Capture(PrintStream out, PrintStream err, Handler[] rootHandlers, Handler logCapture,
                           ByteArrayOutputStream kept) {
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        PrintStream sink = new PrintStream(kept, true, StandardCharsets.UTF_8);
        // The root logger's console handler holds the System.err of its creation, so replacing System.err alone
        // would not catch log records: they get a handler of their own.
        Logger root = Logger.getLogger("");
        Handler[] handlers = root.getHandlers();
        for (Handler h : handlers) {
            root.removeHandler(h);
        }
        Handler logCapture = new StreamHandler(sink, new SimpleFormatter()) {
            @Override
            public synchronized void publish(LogRecord record) {
                super.publish(record);
                flush(); // keep log lines in order with the printed ones
            }
        };
        root.addHandler(logCapture);
        context.getStore(NAMESPACE).put(Capture.class,
                new Capture(System.out, System.err, handlers, logCapture, kept));
        System.setOut(sink);
        System.setErr(sink);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        Capture capture = context.getStore(NAMESPACE).remove(Capture.class, Capture.class);
        System.setOut(capture.out());
        System.setErr(capture.err());
        Logger root = Logger.getLogger("");
        root.removeHandler(capture.logCapture());
        capture.logCapture().flush();
        for (Handler h : capture.rootHandlers()) {
            root.addHandler(h);
        }
        if (context.getExecutionException().isPresent() && capture.kept().size() > 0) {
            capture.err().println("--- output of failed test " + context.getDisplayName() + ":");
            capture.err().print(capture.kept().toString(StandardCharsets.UTF_8));
            capture.err().println("--- end of output of " + context.getDisplayName());
        }
    }
}
