package dev.ubuf.cuda;

import java.util.HashMap;
import java.util.Map;

/**
 * The CUDA driver's {@code CUresult} codes, as cuda.h (CUDA 13.0) numbers them. A code this enum does not list (a newer
 * driver's) maps to {@link #UNKNOWN}; {@link CudaException#code()} keeps the raw value.
 *
 * <p>{@link #isSticky()} marks the errors after which the context is dead: cuda.h documents them as leaving "the
 * process in an inconsistent state", where "any further CUDA work will return the same error" and "the process must
 * be terminated and relaunched" to use CUDA again. The uncorrectable ECC and NVLink errors are counted with them: the
 * data the context computed with can no longer be trusted.
 */
public enum CudaError {
    SUCCESS(0, false),
    INVALID_VALUE(1, false),
    OUT_OF_MEMORY(2, false),
    NOT_INITIALIZED(3, false),
    DEINITIALIZED(4, false),
    PROFILER_DISABLED(5, false),
    STUB_LIBRARY(34, false),
    DEVICE_UNAVAILABLE(46, false),
    NO_DEVICE(100, false),
    INVALID_DEVICE(101, false),
    DEVICE_NOT_LICENSED(102, false),
    INVALID_IMAGE(200, false),
    INVALID_CONTEXT(201, false),
    MAP_FAILED(205, false),
    UNMAP_FAILED(206, false),
    ALREADY_MAPPED(208, false),
    NO_BINARY_FOR_GPU(209, false),
    NOT_MAPPED(211, false),
    ECC_UNCORRECTABLE(214, true),
    UNSUPPORTED_LIMIT(215, false),
    CONTEXT_ALREADY_IN_USE(216, false),
    PEER_ACCESS_UNSUPPORTED(217, false),
    INVALID_PTX(218, false),
    NVLINK_UNCORRECTABLE(220, true),
    UNSUPPORTED_PTX_VERSION(222, false),
    /** An error the GPU's error containment caught (e.g. a bad peer access over NVLink); CUDA 12.8+. */
    CONTAINED(226, true),
    INVALID_SOURCE(300, false),
    FILE_NOT_FOUND(301, false),
    OPERATING_SYSTEM(304, false),
    INVALID_HANDLE(400, false),
    ILLEGAL_STATE(401, false),
    NOT_FOUND(500, false),
    /** Not an error: asynchronous work is still running (cuStreamQuery, cuEventQuery). */
    NOT_READY(600, false),
    ILLEGAL_ADDRESS(700, true),
    LAUNCH_OUT_OF_RESOURCES(701, false),
    LAUNCH_TIMEOUT(702, true),
    PEER_ACCESS_ALREADY_ENABLED(704, false),
    PEER_ACCESS_NOT_ENABLED(705, false),
    PRIMARY_CONTEXT_ACTIVE(708, false),
    CONTEXT_IS_DESTROYED(709, false),
    /** A device-side assert fired. */
    ASSERT(710, true),
    TOO_MANY_PEERS(711, false),
    HARDWARE_STACK_ERROR(714, true),
    ILLEGAL_INSTRUCTION(715, true),
    MISALIGNED_ADDRESS(716, true),
    INVALID_ADDRESS_SPACE(717, true),
    INVALID_PC(718, true),
    LAUNCH_FAILED(719, true),
    COOPERATIVE_LAUNCH_TOO_LARGE(720, false),
    TENSOR_MEMORY_LEAK(721, true),
    NOT_PERMITTED(800, false),
    NOT_SUPPORTED(801, false),
    SYSTEM_NOT_READY(802, false),
    SYSTEM_DRIVER_MISMATCH(803, false),
    COMPAT_NOT_SUPPORTED_ON_DEVICE(804, false),
    MPS_CONNECTION_FAILED(805, false),
    MPS_RPC_FAILURE(806, false),
    MPS_SERVER_NOT_READY(807, false),
    MPS_MAX_CLIENTS_REACHED(808, false),
    MPS_MAX_CONNECTIONS_REACHED(809, false),
    MPS_CLIENT_TERMINATED(810, true),
    STREAM_CAPTURE_UNSUPPORTED(900, false),
    STREAM_CAPTURE_INVALIDATED(901, false),
    STREAM_CAPTURE_MERGE(902, false),
    STREAM_CAPTURE_UNMATCHED(903, false),
    STREAM_CAPTURE_UNJOINED(904, false),
    STREAM_CAPTURE_ISOLATION(905, false),
    STREAM_CAPTURE_IMPLICIT(906, false),
    CAPTURED_EVENT(907, false),
    STREAM_CAPTURE_WRONG_THREAD(908, false),
    TIMEOUT(909, false),
    GRAPH_EXEC_UPDATE_FAILURE(910, false),
    EXTERNAL_DEVICE(911, true),
    INVALID_CLUSTER_SIZE(912, false),
    /** CUDA_ERROR_UNKNOWN, and every code this enum does not list. */
    UNKNOWN(999, false);

    private static final Map<Integer, CudaError> BY_CODE = byCode();

    private final int code;
    private final boolean sticky;

    CudaError(int code, boolean sticky) {
        this.code = code;
        this.sticky = sticky;
    }

    /** The error for a {@code CUresult}; {@link #UNKNOWN} for a code not listed here. */
    public static CudaError of(int code) {
        return BY_CODE.getOrDefault(code, UNKNOWN);
    }

    /** The {@code CUresult} value. */
    public int code() {
        return code;
    }

    /** The enumerator's name in cuda.h, e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}. */
    public String cName() {
        return this == SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_" + name();
    }

    private static Map<Integer, CudaError> byCode() {
        Map<Integer, CudaError> map = new HashMap<>();
        for (CudaError e : values()) {
            map.put(e.code, e);
        }
        return Map.copyOf(map);
    }

    /** Whether the context that raised it is dead: every later call fails the same way until the process restarts. */
    public boolean isSticky() {
        return sticky;
    }
}
