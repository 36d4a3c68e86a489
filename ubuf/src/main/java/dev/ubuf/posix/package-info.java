/**
 * Linux libc through java.lang.foreign for what the JDK does not offer: passing file descriptors (e.g. exported CUDA
 * memory handles) between processes over Unix sockets with SCM_RIGHTS, and checking the peer's credentials.
 */
package dev.ubuf.posix;
