/** {@code ubuf-launch}: starts and supervises one JVM per rank, torchrun-style. */
package dev.ubuf.launch;
