package dev.ubuf.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.ubuf.ffi.NativeLibrary;
import dev.ubuf.ffi.NativeLibraryException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Objects;

/**
 * The CUDA virtual memory management (VMM) driver calls, bound with java.lang.foreign on libcuda.so.1 (JCuda's own
 * cuMemCreate fails on the CUDA 13 driver). No multicast calls live here.
 *
 * <p>Every call works in the CUDA context current on the calling thread, which JCuda's {@code cuCtxSetCurrent} sets:
 * both bindings use the one libcuda.so.1 of the process. Make the context of the device you allocate on or map for
 * current first. Device pointers, allocation handles ({@code CUmemGenericAllocationHandle}) and sizes are
 * {@code long}s; device numbers are ordinals.
 *
 * <p>The library is opened, and {@code cuInit(0)} called, on first use; if either fails every call raises a
 * {@link CudaException} saying why. Every call is checked: a failure raises {@code CudaException.of(call, code,
 * cuGetErrorName)}, so a sticky error is a {@link CudaFatalException}. Enum values and struct layouts are those of
 * /usr/local/cuda/include/cuda.h, CUDA 13.0 ({@code CUDA_VERSION 13000}); sizes and offsets verified against it with
 * gcc.
 */
@SuppressWarnings("restricted") // reads the driver's C strings; opening and binding are NativeLibrary's
public final class CudaVmm implements VmmDriver {
    static final String SONAME = "libcuda.so.1";

    // cuda.h (CUDA 13.0) enumerators.
    static final int CU_MEM_ALLOCATION_TYPE_PINNED = 0x1;
    static final int CU_MEM_LOCATION_TYPE_DEVICE = 0x1;
    static final int CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1;
    static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3;
    static final int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0;
    static final int CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1;
    static final int CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
    static final int CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;

    /** {@code CUmemLocation}: {CUmemLocationType type; int id;}, 8 bytes. */
    static final StructLayout CU_MEM_LOCATION = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            JAVA_INT.withName("id")).withName("CUmemLocation");

    /**
     * {@code CUmemAllocationProp}: type, requestedHandleTypes, location, void* win32HandleMetaData, and allocFlags
     * {unsigned char compressionType; unsigned char gpuDirectRDMACapable; unsigned short usage;
     * unsigned char reserved[4];}. 32 bytes, 8-aligned, no padding.
     */
    static final StructLayout CU_MEM_ALLOCATION_PROP = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            JAVA_INT.withName("requestedHandleTypes"),
            CU_MEM_LOCATION.withName("location"),
            ADDRESS.withName("win32HandleMetaData"),
            MemoryLayout.structLayout(
                    JAVA_BYTE.withName("compressionType"),
                    JAVA_BYTE.withName("gpuDirectRDMACapable"),
                    JAVA_SHORT.withName("usage"),
                    MemoryLayout.sequenceLayout(4, JAVA_BYTE).withName("reserved")).withName("allocFlags"))
            .withName("CUmemAllocationProp");

    /** {@code CUmemAccessDesc}: {CUmemLocation location; CUmemAccess_flags flags;}, 12 bytes. */
    static final StructLayout CU_MEM_ACCESS_DESC = MemoryLayout.structLayout(
            CU_MEM_LOCATION.withName("location"),
            JAVA_INT.withName("flags")).withName("CUmemAccessDesc");

    private static final VarHandle PROP_TYPE = field(CU_MEM_ALLOCATION_PROP, "type");
    private static final VarHandle PROP_HANDLE_TYPES = field(CU_MEM_ALLOCATION_PROP, "requestedHandleTypes");
    private static final VarHandle PROP_LOCATION_TYPE = field(CU_MEM_ALLOCATION_PROP, "location", "type");
    private static final VarHandle PROP_LOCATION_ID = field(CU_MEM_ALLOCATION_PROP, "location", "id");
    private static final VarHandle DESC_LOCATION_TYPE = field(CU_MEM_ACCESS_DESC, "location", "type");
    private static final VarHandle DESC_LOCATION_ID = field(CU_MEM_ACCESS_DESC, "location", "id");
    private static final VarHandle DESC_FLAGS = field(CU_MEM_ACCESS_DESC, "flags");

    /** Which granularity cuMemGetAllocationGranularity reports. */
    public enum Granularity {
        /** CU_MEM_ALLOC_GRANULARITY_MINIMUM: sizes and mapping offsets must be multiples of it. */
        MINIMUM(CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        /** CU_MEM_ALLOC_GRANULARITY_RECOMMENDED: best performance; a multiple of the minimum. */
        RECOMMENDED(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);

        private final int code;

        Granularity(int code) {
            this.code = code;
        }

        int code() {
            return code;
        }
    }

    private final String soname;
    private final Symbols symbols; // null when unusable
    private final String failedCall; // why unusable: the call and what it said
    private final int failedCode;
    private final String failedReason;
    private final Throwable failedCause;

    /** Opens {@code soname} and calls cuInit(0); never throws: failures are reported by each later call. */
    CudaVmm(String soname) {
        this.soname = soname;
        Symbols s = null;
        String call = null;
        int code = -1;
        String reason = null;
        Throwable cause = null;
        try {
            Symbols bound = new Symbols(NativeLibrary.open(List.of(soname)));
            ModuleLoading.eagerUnlessChosen();
            HardwareQueues.mostUnlessChosen();
            int rc = (int) bound.cuInit.invokeExact(0);
            if (rc == 0) {
                s = bound;
            } else {
                call = "cuInit";
                code = rc;
                reason = errorNameOr(bound, rc);
            }
        } catch (NativeLibraryException.NotFound e) {
            call = "dlopen " + soname;
            reason = "CUDA driver library " + soname + " could not be loaded (no NVIDIA driver on this machine, or"
                    + " not on the loader path): " + e.getCause().getMessage();
            cause = e.getCause(); // the loader's own error
        } catch (NativeLibraryException.AccessDenied e) {
            call = "dlopen " + soname;
            reason = e.getMessage();
            cause = e;
        } catch (NativeLibraryException.MissingSymbol e) {
            String symbol = String.join(", ", e.symbols());
            call = "dlsym " + symbol;
            reason = soname + " has no " + symbol + " (the CUDA driver is too old for VMM; need 10.2+)";
            cause = e;
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
        this.symbols = s;
        this.failedCall = call;
        this.failedCode = code;
        this.failedReason = reason;
        this.failedCause = cause;
    }

    /** The binding of {@value #SONAME} shared by this process, opened on first use. */
    public static CudaVmm driver() {
        return Default.INSTANCE;
    }

    private static final class Default {
        static final CudaVmm INSTANCE = new CudaVmm(SONAME);
    }

    /** Whether libcuda.so.1 loaded and cuInit succeeded (for callers and GPU tests that choose a fallback). */
    public boolean isAvailable() {
        return symbols != null;
    }

    // ---- pure helpers -------------------------------------------------------------------------------------------

    /** The smallest multiple of {@code granularity} that is at least {@code size}; both must be positive. */
    public static long roundUpToGranularity(long size, long granularity) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive, got " + size);
        }
        if (granularity <= 0) {
            throw new IllegalArgumentException("granularity must be positive, got " + granularity);
        }
        long blocks = size / granularity + (size % granularity == 0 ? 0 : 1);
        try {
            return Math.multiplyExact(blocks, granularity);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(size + " rounded up to a multiple of " + granularity
                    + " overflows a 64-bit size");
        }
    }

    // ---- device queries -----------------------------------------------------------------------------------------

    /** cuDeviceGet: the CUdevice handle of a device ordinal. */
    public int device(int ordinal) {
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check((int) s.cuDeviceGet.invokeExact(out, ordinal), "cuDeviceGet");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuDeviceGetAttribute(attribute) of device ordinal {@code device}; attribute numbers as in cuda.h. */
    public int deviceAttribute(int attribute, int device) {
        int dev = device(device);
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check((int) s.cuDeviceGetAttribute.invokeExact(out, attribute, dev), "cuDeviceGetAttribute");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (102): cuMemCreate/cuMemMap work on this device. */
    public boolean supportsVmm(int device) {
        return deviceAttribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) != 0;
    }

    /** CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED (103): allocations export as file descriptors. */
    public boolean supportsPosixFdHandles(int device) {
        return deviceAttribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device) != 0;
    }

    /** cuGetErrorName, e.g. "CUDA_ERROR_INVALID_VALUE" for 1. */
    public String errorName(int code) {
        return errorText(symbols().cuGetErrorName, code, "cuGetErrorName");
    }

    /** cuGetErrorString: the driver's description of a CUresult. */
    public String errorString(int code) {
        return errorText(symbols().cuGetErrorString, code, "cuGetErrorString");
    }

    // ---- VMM calls ----------------------------------------------------------------------------------------------

    /**
     * cuMemGetAllocationGranularity for pinned device memory on {@code device}, exportable as a POSIX file
     * descriptor (the properties {@link #memCreate} uses).
     */
    @Override
    public long granularity(int device, Granularity kind) {
        Objects.requireNonNull(kind, "kind");
        requireDevice(device);
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check((int) s.cuMemGetAllocationGranularity.invokeExact(out, deviceProp(arena, device), kind.code()),
                    "cuMemGetAllocationGranularity");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * cuMemCreate: {@code size} bytes (a multiple of the minimum granularity) of pinned memory on device ordinal
     * {@code device}, exportable as a POSIX file descriptor. Returns the allocation handle; release it with
     * {@link #memRelease}.
     */
    @Override
    public long memCreate(long size, int device) {
        requirePositive(size, "size");
        requireDevice(device);
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(JAVA_LONG);
            check((int) s.cuMemCreate.invokeExact(handle, size, deviceProp(arena, device), 0L), "cuMemCreate");
            return handle.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemRelease: drops the handle; the memory is freed once every mapping of it is unmapped too. */
    @Override
    public void memRelease(long handle) {
        Symbols s = symbols();
        try {
            check((int) s.cuMemRelease.invokeExact(handle), "cuMemRelease");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemExportToShareableHandle as CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: a new fd the caller must close. */
    @Override
    public int exportToFd(long handle) {
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fd = arena.allocate(JAVA_INT); // the shareable handle of this type is an int
            check((int) s.cuMemExportToShareableHandle.invokeExact(fd, handle,
                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0L), "cuMemExportToShareableHandle");
            return fd.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * cuMemImportFromShareableHandle of a POSIX file descriptor (e.g. received over a Unix socket). The fd stays the
     * caller's to close. Returns a new allocation handle; release it with {@link #memRelease}.
     */
    @Override
    public long importFromFd(int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("file descriptor must be non-negative, got " + fd);
        }
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(JAVA_LONG);
            // For the POSIX fd type the fd travels in the pointer argument itself: (void*)(uintptr_t)fd.
            check((int) s.cuMemImportFromShareableHandle.invokeExact(handle, MemorySegment.ofAddress(fd),
                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "cuMemImportFromShareableHandle");
            return handle.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemAddressReserve of {@code size} bytes aligned to {@code alignment} (0 = default), anywhere. */
    @Override
    public long addressReserve(long size, long alignment) {
        requirePositive(size, "size");
        if (alignment < 0) {
            throw new IllegalArgumentException("alignment must be non-negative, got " + alignment);
        }
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ptr = arena.allocate(JAVA_LONG);
            check((int) s.cuMemAddressReserve.invokeExact(ptr, size, alignment, 0L, 0L), "cuMemAddressReserve");
            return ptr.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemAddressFree of a range from {@link #addressReserve} (unmap it first). */
    @Override
    public void addressFree(long address, long size) {
        Symbols s = symbols();
        try {
            check((int) s.cuMemAddressFree.invokeExact(address, size), "cuMemAddressFree");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemMap: maps {@code size} bytes of {@code handle}, from its byte {@code offset}, at {@code address}. */
    @Override
    public void map(long address, long size, long offset, long handle) {
        Symbols s = symbols();
        try {
            check((int) s.cuMemMap.invokeExact(address, size, offset, handle, 0L), "cuMemMap");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemUnmap of a mapped range. */
    @Override
    public void unmap(long address, long size) {
        Symbols s = symbols();
        try {
            check((int) s.cuMemUnmap.invokeExact(address, size), "cuMemUnmap");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** cuMemSetAccess: READWRITE for each device ordinal in {@code devices} on a fully mapped range. */
    @Override
    public void setAccess(long address, long size, int[] devices) {
        Objects.requireNonNull(devices, "devices");
        if (devices.length == 0) {
            throw new IllegalArgumentException("setAccess needs at least one device");
        }
        for (int d : devices) {
            requireDevice(d);
        }
        Symbols s = symbols();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment descs = arena.allocate(CU_MEM_ACCESS_DESC, devices.length);
            for (int i = 0; i < devices.length; i++) {
                MemorySegment desc = descs.asSlice(i * CU_MEM_ACCESS_DESC.byteSize(), CU_MEM_ACCESS_DESC);
                DESC_LOCATION_TYPE.set(desc, 0L, CU_MEM_LOCATION_TYPE_DEVICE);
                DESC_LOCATION_ID.set(desc, 0L, devices[i]);
                DESC_FLAGS.set(desc, 0L, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
            }
            check((int) s.cuMemSetAccess.invokeExact(address, size, descs, (long) devices.length), "cuMemSetAccess");
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    /** Fills a zeroed CUmemAllocationProp: pinned, on device ordinal {@code device}, exportable as a POSIX fd. */
    static MemorySegment deviceProp(Arena arena, int device) {
        MemorySegment prop = arena.allocate(CU_MEM_ALLOCATION_PROP); // zeroed: win32 metadata and allocFlags stay 0
        PROP_TYPE.set(prop, 0L, CU_MEM_ALLOCATION_TYPE_PINNED);
        PROP_HANDLE_TYPES.set(prop, 0L, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        PROP_LOCATION_TYPE.set(prop, 0L, CU_MEM_LOCATION_TYPE_DEVICE);
        PROP_LOCATION_ID.set(prop, 0L, device);
        return prop;
    }

    private Symbols symbols() {
        if (symbols == null) {
            CudaException e = CudaException.of(failedCall, failedCode, failedReason);
            if (failedCause != null) {
                e.initCause(failedCause);
            }
            throw e;
        }
        return symbols;
    }

    private void check(int rc, String call) {
        if (rc != 0) {
            throw CudaException.of(call, rc, errorNameOr(symbols, rc));
        }
    }

    /** cuGetErrorName, or "CUresult n" when the driver does not know the code either. */
    private static String errorNameOr(Symbols s, int rc) {
        try {
            String name = errorTextOrNull(s.cuGetErrorName, rc);
            return name != null ? name : "CUresult " + rc;
        } catch (Throwable t) {
            return "CUresult " + rc;
        }
    }

    private String errorText(MethodHandle h, int code, String call) {
        try {
            String text = errorTextOrNull(h, code);
            if (text == null) {
                throw new CudaException(call, 1, "CUDA_ERROR_INVALID_VALUE (unknown CUresult " + code + ")");
            }
            return text;
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    private static String errorTextOrNull(MethodHandle h, int code) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) h.invokeExact(code, out);
            MemorySegment p = out.get(ADDRESS, 0);
            if (rc != 0 || p.equals(MemorySegment.NULL)) {
                return null;
            }
            return p.reinterpret(Long.MAX_VALUE).getString(0);
        }
    }

    private static void requirePositive(long v, String name) {
        if (v <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + v);
        }
    }

    private static void requireDevice(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device ordinal must be non-negative, got " + device);
        }
    }

    private static VarHandle field(StructLayout layout, String... path) {
        MemoryLayout.PathElement[] elements = new MemoryLayout.PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            elements[i] = MemoryLayout.PathElement.groupElement(path[i]);
        }
        return layout.varHandle(elements);
    }

    @Override
    public String toString() {
        return "CudaVmm[" + soname + (symbols == null ? ", unavailable: " + failedReason : "") + "]";
    }

    /** Method handles, bound once when the library opens. CUdeviceptr, handles and size_t are 64-bit. */
    private static final class Symbols {
        final MethodHandle cuInit;
        final MethodHandle cuGetErrorName;
        final MethodHandle cuGetErrorString;
        final MethodHandle cuDeviceGet;
        final MethodHandle cuDeviceGetAttribute;
        final MethodHandle cuMemGetAllocationGranularity;
        final MethodHandle cuMemCreate;
        final MethodHandle cuMemRelease;
        final MethodHandle cuMemExportToShareableHandle;
        final MethodHandle cuMemImportFromShareableHandle;
        final MethodHandle cuMemAddressReserve;
        final MethodHandle cuMemAddressFree;
        final MethodHandle cuMemMap;
        final MethodHandle cuMemUnmap;
        final MethodHandle cuMemSetAccess;

        Symbols(NativeLibrary library) {
            var u64 = JAVA_LONG; // CUdeviceptr, CUmemGenericAllocationHandle, unsigned long long flags
            var sizeT = JAVA_LONG;
            cuInit = library.bind("cuInit", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
            cuGetErrorName = library.bind("cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
            cuGetErrorString = library.bind("cuGetErrorString", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
            cuDeviceGet = library.bind("cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
            cuDeviceGetAttribute = library.bind("cuDeviceGetAttribute",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
            // (size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option)
            cuMemGetAllocationGranularity = library.bind("cuMemGetAllocationGranularity",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
            // (CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop, u64 flags)
            cuMemCreate = library.bind("cuMemCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, sizeT, ADDRESS, u64));
            cuMemRelease = library.bind("cuMemRelease", FunctionDescriptor.of(JAVA_INT, u64));
            // (void* shareableHandle, handle, CUmemAllocationHandleType, u64 flags)
            cuMemExportToShareableHandle = library.bind("cuMemExportToShareableHandle",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, u64, JAVA_INT, u64));
            // (CUmemGenericAllocationHandle* handle, void* osHandle, CUmemAllocationHandleType)
            cuMemImportFromShareableHandle = library.bind("cuMemImportFromShareableHandle",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
            // (CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr, u64 flags)
            cuMemAddressReserve = library.bind("cuMemAddressReserve",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, sizeT, sizeT, u64, u64));
            cuMemAddressFree = library.bind("cuMemAddressFree", FunctionDescriptor.of(JAVA_INT, u64, sizeT));
            // (CUdeviceptr ptr, size_t size, size_t offset, handle, u64 flags)
            cuMemMap = library.bind("cuMemMap", FunctionDescriptor.of(JAVA_INT, u64, sizeT, sizeT, u64, u64));
            cuMemUnmap = library.bind("cuMemUnmap", FunctionDescriptor.of(JAVA_INT, u64, sizeT));
            // (CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count)
            cuMemSetAccess = library.bind("cuMemSetAccess",
                    FunctionDescriptor.of(JAVA_INT, u64, sizeT, ADDRESS, sizeT));
        }
    }
}
