package dev.ubuf.cuda;

import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;

/**
 * JCuda keeps native handles' raw values protected; these subclasses expose them so the same handles can be passed
 * to cuBLASLt and NCCL through java.lang.foreign. Package-private: no JCuda type leaves this package.
 */
final class Handles {
    private Handles() {
    }

    static final class Stream extends CUstream {
        long raw() {
            return getNativePointer();
        }
    }

    static final class Event extends CUevent {
        long raw() {
            return getNativePointer();
        }
    }

    static final class Context extends CUcontext {
        long raw() {
            return getNativePointer();
        }
    }

    static final class DevPtr extends CUdeviceptr {
        long raw() {
            return getNativePointer();
        }
    }

    static final class HostPtr extends Pointer {
        long raw() {
            return getNativePointer();
        }
    }

    /** A CUdeviceptr for a raw device address (no ownership). */
    static CUdeviceptr ptr(long address) {
        return new CUdeviceptr().withByteOffset(address);
    }
}
