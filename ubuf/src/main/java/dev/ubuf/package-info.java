/**
 * ubuf's root package: {@link dev.ubuf.UbufException}, the supertype of every exception the library raises for a
 * failure (CUDA, cuBLASLt, NCCL, libc, bootstrap, peers, deadlines).
 */
package dev.ubuf;
