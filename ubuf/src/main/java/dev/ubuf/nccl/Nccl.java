package dev.ubuf.nccl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.ubuf.ffi.NativeLibrary;
import dev.ubuf.ffi.NativeLibraryException;
import dev.ubuf.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Map;

/**
 * The NCCL binding: libnccl.so.2 through java.lang.foreign. The library is opened on first use, never at class load;
 * if it is missing every call raises an {@link NcclException} that names the soname.
 *
 * <p>Numbers and signatures come from NVIDIA/nccl src/nccl.h.in at tag v2.28.3-1 (commit f1308997, the NCCL on our
 * GPU machines). Users go through {@link NcclCommunicator} and {@link NcclUniqueId}; the raw calls here are
 * package-private and take device pointers, communicators and {@code cudaStream_t}s as {@code long} addresses.
 */
@SuppressWarnings("restricted") // reads NCCL's C strings; opening and binding are NativeLibrary's
public final class Nccl {
    static final String SONAME = "libnccl.so.2";

    /** {@code NCCL_VERSION(2,24,0)}: ncclFloat8e4m3/ncclFloat8e5m2 first appear in nccl.h in 2.24. */
    static final int FIRST_VERSION_WITH_FP8 = 22400;

    // ncclDataType_t, nccl.h.in v2.28.3-1.
    static final int NCCL_FLOAT16 = 6;
    static final int NCCL_FLOAT32 = 7;
    static final int NCCL_BFLOAT16 = 9;
    static final int NCCL_FLOAT8E4M3 = 10;
    static final int NCCL_FLOAT8E5M2 = 11;

    /** {@code typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;}, passed by value to InitRank. */
    static final StructLayout UNIQUE_ID_LAYOUT =
            MemoryLayout.structLayout(MemoryLayout.sequenceLayout(NcclUniqueId.BYTES, JAVA_BYTE).withName("internal"))
                    .withName("ncclUniqueId");

    private final String soname;
    private final Symbols symbols; // null when the library could not be opened
    private final String unavailableReason; // null when it could
    private final Throwable unavailableCause;
    private final int version; // NCCL_VERSION_CODE of the loaded library, 0 when unavailable

    /** Opens {@code soname}; never throws: a failure is reported on each later call. Tests pass a bogus name. */
    Nccl(String soname) {
        this.soname = soname;
        Symbols s = null;
        int v = 0;
        String reason = null;
        Throwable cause = null;
        try {
            Symbols bound = new Symbols(NativeLibrary.open(List.of(soname)));
            v = queryVersion(bound);
            s = bound;
        } catch (NcclException e) {
            reason = soname + " loaded but " + e.getMessage();
            cause = e;
        } catch (NativeLibraryException.NotFound e) {
            reason = "NCCL library " + soname + " could not be loaded (not found on the loader path or not loadable: "
                    + e.getCause().getMessage() + "); install NCCL 2.x or add its lib directory to LD_LIBRARY_PATH";
            cause = e;
        } catch (NativeLibraryException.MissingSymbol e) {
            reason = soname + " lacks " + String.join(", ", e.symbols())
                    + " (NCCL too old; this binding needs NCCL 2.13 or newer)";
            cause = e;
        } catch (NativeLibraryException.AccessDenied e) {
            reason = e.getMessage();
            cause = e;
        }
        this.symbols = s;
        this.unavailableReason = reason;
        this.unavailableCause = cause;
        this.version = v;
    }

    /** A binding that opens nothing: every call fails with {@code refusal}. */
    private Nccl(String soname, String refusal) {
        this.soname = soname;
        this.symbols = null;
        this.unavailableReason = refusal;
        this.unavailableCause = null;
        this.version = 0;
    }

    /** The process-wide binding of {@value #SONAME}, opened on first use (holder idiom: nothing is mutable). */
    static Nccl library() {
        return Default.INSTANCE;
    }

    private static final class Default {
        static final Nccl INSTANCE = open();

        /**
         * Sets {@link NcclEnvironment#defaults} in this process's C environment before NCCL starts (a user's value
         * wins), and opens no library under {@link NcclEnvironment#refusal}: every NCCL call then fails with it.
         */
        private static Nccl open() {
            Map<String, String> env = System.getenv();
            String refusal = NcclEnvironment.refusal(env);
            if (refusal != null) {
                return new Nccl(SONAME, refusal);
            }
            for (Map.Entry<String, String> v : NcclEnvironment.defaults(env).entrySet()) {
                try {
                    dev.ubuf.posix.NativeEnvironment.setIfAbsent(v.getKey(), v.getValue());
                } catch (RuntimeException | LinkageError e) {
                    System.getLogger(Nccl.class.getName()).log(System.Logger.Level.WARNING, "could not set "
                            + v.getKey() + "=" + v.getValue() + " (" + e + ") before NCCL starts");
                }
            }
            return new Nccl(SONAME);
        }
    }

    /** Whether libnccl.so.2 can be used in this process (for callers and GPU tests that choose a fallback). */
    public static boolean isAvailable() {
        return library().symbols != null;
    }

    /** The loaded library's {@code NCCL_VERSION_CODE}, e.g. 22803 for 2.28.3. */
    public static int version() {
        return library().loadedVersion();
    }

    /** "2.28.3" for 22803 (and the pre-2.9 encoding, e.g. 2708 → "2.7.8"). */
    public static String versionString(int code) {
        if (code >= 10000) {
            return code / 10000 + "." + code % 10000 / 100 + "." + code % 100;
        }
        return code / 1000 + "." + code % 1000 / 100 + "." + code % 100;
    }

    int loadedVersion() {
        symbols();
        return version;
    }

    String soname() {
        return soname;
    }

    // ---- data type and operator mapping -------------------------------------------------------------------------

    /** ncclDataType_t for a ubuf dtype, as nccl.h (v2.28.3-1) defines it. */
    static int dataType(DType dtype) {
        return switch (dtype) {
            case FP32 -> NCCL_FLOAT32;
            case FP16 -> NCCL_FLOAT16;
            case BF16 -> NCCL_BFLOAT16;
            case FP8_E4M3 -> NCCL_FLOAT8E4M3;
            case FP8_E5M2 -> NCCL_FLOAT8E5M2;
        };
    }

    /** {@link #dataType}, rejecting fp8 when the loaded library predates the fp8 types. */
    int dataTypeForLoaded(DType dtype) {
        if (dtype.isReserved() && loadedVersion() < FIRST_VERSION_WITH_FP8) {
            throw new IllegalArgumentException(dtype + " needs NCCL " + versionString(FIRST_VERSION_WITH_FP8)
                    + " or newer (ncclFloat8e4m3/e5m2); loaded " + soname + " is " + versionString(version));
        }
        return dataType(dtype);
    }

    // ---- raw calls ----------------------------------------------------------------------------------------------

    byte[] getUniqueId() {
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(UNIQUE_ID_LAYOUT);
            check((int) s.getUniqueId.invokeExact(id), "ncclGetUniqueId", 0L);
            return id.toArray(JAVA_BYTE);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** ncclCommInitRank; blocks until all {@code nranks} ranks have joined. Returns the ncclComm_t address. */
    long commInitRank(int nranks, byte[] uniqueId, int rank) {
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment comm = arena.allocate(ADDRESS);
            MemorySegment id = arena.allocate(UNIQUE_ID_LAYOUT);
            MemorySegment.copy(uniqueId, 0, id, JAVA_BYTE, 0, NcclUniqueId.BYTES);
            check((int) s.commInitRank.invokeExact(comm, nranks, id, rank), "ncclCommInitRank", 0L);
            return comm.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** ncclCommInitAll over {@code devices} (rank i on device devices[i]). Returns the ncclComm_t addresses. */
    long[] commInitAll(int[] devices) {
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment comms = arena.allocate(ADDRESS, devices.length);
            MemorySegment devlist = arena.allocateFrom(JAVA_INT, devices);
            check((int) s.commInitAll.invokeExact(comms, devices.length, devlist), "ncclCommInitAll", 0L);
            long[] out = new long[devices.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = comms.getAtIndex(ADDRESS, i).address();
            }
            return out;
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void commDestroy(long comm) {
        Symbols s = symbols();
        try {
            // No last-error lookup: the communicator is gone once destroy returns.
            check((int) s.commDestroy.invokeExact(ptr(comm)), "ncclCommDestroy", 0L);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void commAbort(long comm) {
        Symbols s = symbols();
        try {
            check((int) s.commAbort.invokeExact(ptr(comm)), "ncclCommAbort", 0L);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int commGetAsyncError(long comm) {
        return intOut(symbols().commGetAsyncError, "ncclCommGetAsyncError", comm);
    }

    int commCount(long comm) {
        return intOut(symbols().commCount, "ncclCommCount", comm);
    }

    int commUserRank(long comm) {
        return intOut(symbols().commUserRank, "ncclCommUserRank", comm);
    }

    void allGather(long send, long recv, long sendCount, int dtype, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.allGather.invokeExact(ptr(send), ptr(recv), sendCount, dtype, ptr(comm), ptr(stream)),
                    "ncclAllGather", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void reduceScatter(long send, long recv, long recvCount, int dtype, int op, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.reduceScatter.invokeExact(ptr(send), ptr(recv), recvCount, dtype, op, ptr(comm),
                    ptr(stream)), "ncclReduceScatter", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void allReduce(long send, long recv, long count, int dtype, int op, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.allReduce.invokeExact(ptr(send), ptr(recv), count, dtype, op, ptr(comm), ptr(stream)),
                    "ncclAllReduce", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void broadcast(long send, long recv, long count, int dtype, int root, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.broadcast.invokeExact(ptr(send), ptr(recv), count, dtype, root, ptr(comm), ptr(stream)),
                    "ncclBroadcast", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void send(long buf, long count, int dtype, int peer, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.send.invokeExact(ptr(buf), count, dtype, peer, ptr(comm), ptr(stream)), "ncclSend", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void recv(long buf, long count, int dtype, int peer, long comm, long stream) {
        Symbols s = symbols();
        try {
            check((int) s.recv.invokeExact(ptr(buf), count, dtype, peer, ptr(comm), ptr(stream)), "ncclRecv", comm);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void groupStart() {
        Symbols s = symbols();
        try {
            check((int) s.groupStart.invokeExact(), "ncclGroupStart", 0L);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    void groupEnd() {
        Symbols s = symbols();
        try {
            check((int) s.groupEnd.invokeExact(), "ncclGroupEnd", 0L);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** ncclGetErrorString: NCCL's short text for a result code. */
    String errorString(int result) {
        Symbols s = symbols();
        try {
            return cString((MemorySegment) s.getErrorString.invokeExact(result));
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** ncclGetLastError: the library's last detailed message (comm may be 0); empty when none. */
    String lastError(long comm) {
        Symbols s = symbols();
        try {
            return cString((MemorySegment) s.getLastError.invokeExact(ptr(comm)));
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    private Symbols symbols() {
        if (symbols == null) {
            throw new NcclException("load " + soname, unavailableReason, unavailableCause);
        }
        return symbols;
    }

    /** Raises an NcclException for a non-zero result, with NCCL's own error text and last error. */
    private void check(int rc, String call, long comm) {
        if (rc == 0) {
            return;
        }
        throw new NcclException(call, rc, describe(rc, call, comm));
    }

    private String describe(int rc, String call, long comm) {
        String name = NcclResult.fromCode(rc).map(NcclResult::cName).orElse("ncclResult_t " + rc);
        StringBuilder msg = new StringBuilder(call).append(" failed: ").append(name).append(" (").append(rc)
                .append(")");
        try {
            msg.append(": ").append(errorString(rc));
            String last = lastError(comm);
            if (!last.isBlank()) {
                msg.append("; last error: ").append(last.strip());
            }
        } catch (RuntimeException ignored) {
            // The error text is a courtesy; never hide the original failure behind a second one.
        }
        return msg.toString();
    }

    private int intOut(MethodHandle h, String call, long comm) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check((int) h.invokeExact(ptr(comm), out), call, comm);
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    private static int queryVersion(Symbols s) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int rc = (int) s.getVersion.invokeExact(out);
            if (rc != 0) {
                throw new NcclException("ncclGetVersion", rc, "ncclGetVersion failed with ncclResult_t " + rc);
            }
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    private static MemorySegment ptr(long address) {
        return MemorySegment.ofAddress(address);
    }

    private static String cString(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /** The method handles, looked up once when the library opens. */
    private static final class Symbols {
        final MethodHandle getVersion;
        final MethodHandle getUniqueId;
        final MethodHandle commInitRank;
        final MethodHandle commInitAll;
        final MethodHandle commDestroy;
        final MethodHandle commAbort;
        final MethodHandle commGetAsyncError;
        final MethodHandle commCount;
        final MethodHandle commUserRank;
        final MethodHandle allGather;
        final MethodHandle reduceScatter;
        final MethodHandle allReduce;
        final MethodHandle broadcast;
        final MethodHandle send;
        final MethodHandle recv;
        final MethodHandle groupStart;
        final MethodHandle groupEnd;
        final MethodHandle getErrorString;
        final MethodHandle getLastError;

        Symbols(NativeLibrary library) {
            // size_t is 64-bit on the platforms NCCL supports (Linux x86-64 and aarch64).
            var sizeT = JAVA_LONG;
            getVersion = library.bind("ncclGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            getUniqueId = library.bind("ncclGetUniqueId", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            commInitRank = library.bind("ncclCommInitRank",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID_LAYOUT, JAVA_INT));
            commInitAll = library.bind("ncclCommInitAll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            commDestroy = library.bind("ncclCommDestroy", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            commAbort = library.bind("ncclCommAbort", FunctionDescriptor.of(JAVA_INT, ADDRESS));
            commGetAsyncError = library.bind("ncclCommGetAsyncError", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            commCount = library.bind("ncclCommCount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            commUserRank = library.bind("ncclCommUserRank", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            // (sendbuff, recvbuff, sendcount, datatype, comm, stream)
            allGather = library.bind("ncclAllGather",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, sizeT, JAVA_INT, ADDRESS, ADDRESS));
            // (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)
            reduceScatter = library.bind("ncclReduceScatter",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, sizeT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            allReduce = library.bind("ncclAllReduce",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, sizeT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            // (sendbuff, recvbuff, count, datatype, root, comm, stream)
            broadcast = library.bind("ncclBroadcast",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, sizeT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            // (buff, count, datatype, peer, comm, stream)
            send = library.bind("ncclSend",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, sizeT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            recv = library.bind("ncclRecv",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, sizeT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
            groupStart = library.bind("ncclGroupStart", FunctionDescriptor.of(JAVA_INT));
            groupEnd = library.bind("ncclGroupEnd", FunctionDescriptor.of(JAVA_INT));
            getErrorString = library.bind("ncclGetErrorString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
            getLastError = library.bind("ncclGetLastError", FunctionDescriptor.of(ADDRESS, ADDRESS));
        }
    }
}
