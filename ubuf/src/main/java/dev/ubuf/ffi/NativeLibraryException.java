package dev.ubuf.ffi;

import dev.ubuf.UbufException;
import java.util.List;

/**
 * A native library cannot be used through java.lang.foreign: it is not there ({@link NotFound}), lacks a function
 * ({@link MissingSymbol}), or the JVM denies native access ({@link AccessDenied}). Bindings usually catch these and
 * say what to install; the messages already name the library, the symbol or the flag.
 */
public abstract sealed class NativeLibraryException extends UbufException
        permits NativeLibraryException.NotFound, NativeLibraryException.MissingSymbol,
        NativeLibraryException.AccessDenied {

    NativeLibraryException(String message, Throwable cause) {
        super(message, cause);
    }

    /** None of the candidate names could be opened; the loader's errors are the cause and its suppressed ones. */
    public static final class NotFound extends NativeLibraryException {
        private final List<String> candidates;

        NotFound(List<String> candidates, List<IllegalArgumentException> loaderErrors) {
            super(candidates.size() == 1 ? candidates.getFirst() + " could not be loaded"
                    : "none of " + candidates + " could be loaded",
                    loaderErrors.isEmpty() ? null : loaderErrors.getFirst());
            this.candidates = List.copyOf(candidates);
            loaderErrors.stream().skip(1).forEach(this::addSuppressed);
        }

        /** Every name tried, in order. */
        public List<String> candidates() {
            return candidates;
        }
    }

    /** The library opened but has none of the names a function was looked up by (too old a version, usually). */
    public static final class MissingSymbol extends NativeLibraryException {
        private final String library;
        private final List<String> symbols;

        MissingSymbol(String library, List<String> symbols) {
            super(library + " has no symbol " + (symbols.size() == 1 ? symbols.getFirst() : "of " + symbols), null);
            this.library = library;
            this.symbols = List.copyOf(symbols);
        }

        /** The library's name as opened. */
        public String library() {
            return library;
        }

        /** The names looked for, in the order they were tried. */
        public List<String> symbols() {
            return symbols;
        }
    }

    /** The JVM refused a restricted java.lang.foreign call; the message names the flag that allows it. */
    public static final class AccessDenied extends NativeLibraryException {
        private final String flag;

        AccessDenied(String action, String flag, IllegalCallerException cause) {
            super("native access is not enabled, so ubuf cannot " + action + ": run java with " + flag, cause);
            this.flag = flag;
        }

        /** The command-line flag to add, e.g. {@code --enable-native-access=ALL-UNNAMED}. */
        public String flag() {
            return flag;
        }
    }
}
