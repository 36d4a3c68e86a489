package dev.ubuf;

/**
 * The root of every exception ubuf raises for a failure of the library, the GPU, the native libraries or the peers:
 * catch this to handle all of them at once. Unchecked, like the failures it stands for (a dead peer or a failed
 * driver call cannot be recovered from where it is noticed).
 *
 * <p>Bad arguments and calls in the wrong state are not failures of this kind: they keep Java's standard
 * {@link IllegalArgumentException} and {@link IllegalStateException}.
 */
public class UbufException extends RuntimeException {
    public UbufException(String message) {
        super(message);
    }

    public UbufException(String message, Throwable cause) {
        super(message, cause);
    }
}
