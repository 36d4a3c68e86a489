package dev.ubuf.exec;

import dev.ubuf.cuda.CudaStream;
import dev.ubuf.devicekernels.DeviceKernels;
import dev.ubuf.tensor.TensorView;

/** How a plan's copies move data, chosen once when the executor is built. */
interface DataMover {
    /** Copies {@code src} into {@code dst} (same shape and dtype; either may be a peer's memory) on {@code s}. */
    void copy(TensorView src, TensorView dst, CudaStream s);

    /** The copy engines (cuMemcpy2DAsync): no SMs taken from the GEMMs. */
    static DataMover copyEngine() {
        return (src, dst, s) -> {
            int e = src.dtype().bytes();
            s.copy2d(dst.address(), dst.ld() * e, src.address(), src.ld() * e, src.cols() * e, src.rows());
        };
    }

    /**
     * An SM copy kernel of {@code ctas} blocks (TE's use_ce=false) for contiguous regions; strided regions still go
     * to the copy engines, which handle pitches natively.
     */
    static DataMover smCopy(DeviceKernels kernels, int ctas) {
        DataMover ce = copyEngine();
        return (src, dst, s) -> {
            if (src.isContiguous() && dst.isContiguous()) {
                kernels.copyBytes(dst.address(), src.address(), src.cols() * src.rows() * src.dtype().bytes(), ctas, s);
            } else {
                ce.copy(src, dst, s);
            }
        };
    }
}
