package dev.ubuf.testutil;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Keeps what a tree of loggers logs while open, instead of printing it: for tests whose code under test warns on
 * purpose (a refused peer, a lost rank). {@link System.Logger} goes to java.util.logging by default, so a logger
 * named after a package catches its classes' messages.
 */
public final class CapturedLog implements AutoCloseable {
    // Held for as long as the capture lasts: java.util.logging keeps loggers only weakly, with their handlers.
    private final Logger logger;
    private final boolean usedParentHandlers;
    private final List<String> messages = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (messages) {
                messages.add(record.getLevel() + ": " + record.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    private CapturedLog(String loggerName) {
        this.logger = Logger.getLogger(loggerName);
        this.usedParentHandlers = logger.getUseParentHandlers();
        handler.setLevel(Level.ALL);
        logger.addHandler(handler);
        logger.setUseParentHandlers(false);
    }

    /** Captures {@code loggerName} and the loggers below it until closed. */
    public static CapturedLog of(String loggerName) {
        return new CapturedLog(loggerName);
    }

    /** Each record as "LEVEL: message", in order. */
    public List<String> messages() {
        synchronized (messages) {
            return List.copyOf(messages);
        }
    }

    /** The messages that contain {@code fragment}. */
    public List<String> containing(String fragment) {
        return messages().stream().filter(m -> m.contains(fragment)).toList();
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setUseParentHandlers(usedParentHandlers);
    }
}
