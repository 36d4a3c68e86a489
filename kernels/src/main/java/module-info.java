/**
 * The CUDA kernels as jar resources: the fatbins under {@code dev/ubuf/kernels/} (ubuf_kernels.fatbin, the sm_90a
 * ubuf_sm90a.fatbin) with what their build recorded, and the kernel names the Java side launches.
 *
 * <p>The package is open as well as exported: its fatbins and properties are read with
 * {@code ClassLoader.getResource}, here ({@link dev.ubuf.kernels.KernelImage}) and from the atomic GEMM module
 * ({@code dev.ubuf.atomic.Sm90aImage}), and a class loader finds a resource in a named module's package only when
 * that package is open to everyone.
 */
module dev.ubuf.kernels {
    exports dev.ubuf.kernels;
    opens dev.ubuf.kernels;
}
