package dev.ubuf.cuda;

import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_P2PAttribute;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.JCudaDriver;

/** One GPU, by ordinal, with the properties ubuf cares about. Immutable. */
public final class CudaDevice {
    static {
        JCudaNativeLibrary.ensureWritten(); // before JCudaDriver's class loads its library
    }

    private final int ordinal;
    private final CUdevice handle;

    private CudaDevice(int ordinal, CUdevice handle) {
        this.ordinal = ordinal;
        this.handle = handle;
    }

    public static CudaDevice get(int ordinal) {
        int count = Cuda.deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw new IllegalArgumentException("device " + ordinal + " does not exist (" + count + " present)");
        }
        CUdevice d = new CUdevice();
        Cuda.check(JCudaDriver.cuDeviceGet(d, ordinal), "cuDeviceGet");
        return new CudaDevice(ordinal, d);
    }

    CUdevice handle() {
        return handle;
    }

    public int ordinal() {
        return ordinal;
    }

    public String name() {
        byte[] b = new byte[256];
        Cuda.check(JCudaDriver.cuDeviceGetName(b, b.length, handle), "cuDeviceGetName");
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n);
    }

    public int attribute(int attribute) {
        int[] v = new int[1];
        Cuda.check(JCudaDriver.cuDeviceGetAttribute(v, attribute, handle), "cuDeviceGetAttribute(" + attribute + ")");
        return v[0];
    }

    public int smCount() {
        return attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    }

    public int copyEngines() {
        return attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
    }

    public int computeCapability() {
        return attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10
                + attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    }

    public long totalMemory() {
        long[] v = new long[1];
        Cuda.check(JCudaDriver.cuDeviceTotalMem(v, handle), "cuDeviceTotalMem");
        return v[0];
    }

    public boolean supportsVmm() {
        return attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0;
    }

    public boolean supportsPosixFdHandles() {
        return attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) != 0;
    }

    /** 32-bit stream wait/write value operations: always there from CUDA 12 on (the old _V1 attribute reads 0). */
    public boolean supportsStreamMemOps() {
        return Cuda.driverVersion() >= 12000
                || attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) != 0;
    }

    /**
     * Whether stream waits may ask for a flush of outstanding remote writes (CU_STREAM_WAIT_VALUE_FLUSH); a device
     * that cannot flush reads 0 (it is about writes from third-party devices such as RDMA NICs).
     */
    public boolean canFlushRemoteWrites() {
        return attribute(98 /* CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES */) != 0;
    }

    /** Whether the hardware offers NVLink multicast (an attribute query only: no multicast object is touched). */
    public boolean supportsMulticast() {
        return attribute(132 /* CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, cuda.h 12.1+ */) != 0;
    }

    public String pciBusId() {
        String[] s = new String[1];
        Cuda.check(JCudaDriver.cuDeviceGetPCIBusId(s, 64, handle), "cuDeviceGetPCIBusId");
        return s[0];
    }

    /** The device's UUID (16 bytes, unique across hosts): tells whether two ranks' devices are one GPU. */
    public byte[] uuid() {
        jcuda.driver.CUuuid u = new jcuda.driver.CUuuid();
        Cuda.check(JCudaDriver.cuDeviceGetUuid(u, handle), "cuDeviceGetUuid");
        return u.bytes.clone();
    }

    public boolean canAccessPeer(CudaDevice peer) {
        int[] v = new int[1];
        Cuda.check(JCudaDriver.cuDeviceCanAccessPeer(v, handle, peer.handle), "cuDeviceCanAccessPeer");
        return v[0] != 0;
    }

    /** Relative P2P performance rank between the two devices (lower is better), or -1 without P2P. */
    public int peerPerformanceRank(CudaDevice peer) {
        if (!canAccessPeer(peer)) {
            return -1;
        }
        int[] v = new int[1];
        Cuda.check(JCudaDriver.cuDeviceGetP2PAttribute(v, CUdevice_P2PAttribute.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK,
                handle, peer.handle), "cuDeviceGetP2PAttribute");
        return v[0];
    }

    @Override
    public String toString() {
        return "cuda:" + ordinal;
    }
}
