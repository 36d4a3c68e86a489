/**
 * GEMMs through cuBLASLt, bound with java.lang.foreign ({@link dev.ubuf.gemm.CublasLt}): row-major
 * {@link dev.ubuf.gemm.GemmSpec}s issued by a {@link dev.ubuf.gemm.GemmRunner} on a caller's stream, with raw device
 * addresses and CUstream handles as {@code long}. Chunk views are pointer offsets plus the parent's leading dimension.
 */
package dev.ubuf.gemm;
