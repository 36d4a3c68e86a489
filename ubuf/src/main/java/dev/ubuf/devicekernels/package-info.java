/**
 * Typed launches of the CUDA kernels of the {@code dev.ubuf.kernels} fatbin (reductions, casts, fills, SM copy, FP8
 * quantization): each call checks its tensors, then launches. The op model ({@code dev.ubuf.op}) is elsewhere.
 */
package dev.ubuf.devicekernels;
