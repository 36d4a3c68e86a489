package dev.ubuf.cuda;

import jcuda.driver.CUipcMemHandle;
import jcuda.driver.JCudaDriver;

import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A peer process's allocation opened through a legacy CUDA IPC handle (the fallback where VMM/POSIX-FD sharing is
 * unavailable). Handles are 64 opaque bytes that travel over the bootstrap.
 */
public final class IpcMemory implements DeviceMemory, AutoCloseable {
    public static final int HANDLE_BYTES = 64;
    private static final Field RESERVED = reservedField();

    private final CudaContext context;
    private final Handles.DevPtr ptr = new Handles.DevPtr();
    private final long bytes;
    private final long address;
    private final ResourceLedger.Entry entry;
    private final AtomicBoolean closed = new AtomicBoolean();

    private IpcMemory(CudaContext context, byte[] handle, long bytes) {
        this.context = context;
        this.bytes = bytes;
        CUipcMemHandle h = new CUipcMemHandle();
        try {
            RESERVED.set(h, handle.clone());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        context.makeCurrent();
        Cuda.check(JCudaDriver.cuIpcOpenMemHandle(ptr, h, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */),
                "cuIpcOpenMemHandle");
        this.address = ptr.raw();
        this.entry = context.ledger().track(this, "peer memory opened by IPC handle", "", bytes);
    }

    /** The IPC handle of a local allocation, to send to peers. */
    public static byte[] export(DeviceBuffer buffer) {
        CUipcMemHandle h = new CUipcMemHandle();
        buffer.context().makeCurrent();
        Cuda.check(JCudaDriver.cuIpcGetMemHandle(h, Handles.ptr(buffer.address())), "cuIpcGetMemHandle");
        try {
            return ((byte[]) RESERVED.get(h)).clone();
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Opens a peer's allocation of {@code bytes} from its exported handle. */
    public static IpcMemory open(CudaContext context, byte[] handle, long bytes) {
        if (handle.length != HANDLE_BYTES) {
            throw new IllegalArgumentException("an IPC handle has " + HANDLE_BYTES + " bytes, got " + handle.length);
        }
        return new IpcMemory(context, handle, bytes);
    }

    private static Field reservedField() {
        try {
            Field f = CUipcMemHandle.class.getDeclaredField("reserved");
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public long address() {
        assertOpen();
        return address;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    @Override
    public int device() {
        return context.device().ordinal();
    }

    @Override
    public boolean isOpen() {
        return !closed.get();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                context.makeCurrent();
                Cuda.check(JCudaDriver.cuIpcCloseMemHandle(ptr), "cuIpcCloseMemHandle");
            } finally {
                entry.close();
            }
        }
    }
}
