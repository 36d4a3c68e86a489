/**
 * FP8 support: the E4M3 and E5M2 formats with host conversions ({@link dev.ubuf.fp8.Fp8Format}), and the scaling
 * recipes and their bookkeeping ({@link dev.ubuf.fp8.Fp8Recipe}, {@link dev.ubuf.fp8.ScalingState},
 * {@link dev.ubuf.fp8.Fp8Role}). Device-side quantization is {@link dev.ubuf.devicekernels.Fp8Kernels}; FP8 GEMMs are
 * {@link dev.ubuf.gemm.Gemm} with {@link dev.ubuf.gemm.Gemm.Fp8Scales}.
 */
package dev.ubuf.fp8;
