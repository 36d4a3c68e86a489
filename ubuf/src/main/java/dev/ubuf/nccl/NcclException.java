package dev.ubuf.nccl;

import dev.ubuf.UbufException;
import java.util.Optional;

/**
 * An NCCL call failed, or libnccl could not be used at all (then {@link #code()} is {@link #NO_RESULT}).
 * The message carries NCCL's error string and, where there is one, its last-error text.
 */
public final class NcclException extends UbufException {
    /** {@link #code()} of a failure that did not come from an NCCL call's return value. */
    public static final int NO_RESULT = -1;

    private final String call;
    private final int code;

    NcclException(String call, int code, String message) {
        super(message);
        this.call = call;
        this.code = code;
    }

    NcclException(String call, String message, Throwable cause) {
        super(message, cause);
        this.call = call;
        this.code = NO_RESULT;
    }

    /** The NCCL function that failed (e.g. {@code ncclAllReduce}), or what was being done (loading the library). */
    public String call() {
        return call;
    }

    /** The {@code ncclResult_t} returned, or {@link #NO_RESULT}. */
    public int code() {
        return code;
    }

    /** The result as an enum, empty for {@link #NO_RESULT} or a code newer than this binding. */
    public Optional<NcclResult> result() {
        return NcclResult.fromCode(code);
    }
}
