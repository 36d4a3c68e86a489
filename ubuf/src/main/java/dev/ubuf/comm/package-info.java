/**
 * A rank's membership in a tensor-parallel domain and the memory its ranks share: {@link
 * dev.ubuf.comm.TpCommunicator} (reference-counted, closed last), the {@link dev.ubuf.comm.UserBuffer}s registered
 * on every rank so each knows its peers' device addresses, the {@link dev.ubuf.comm.FlagRegion}s that order copies
 * between ranks, and how buffers are shared ({@link dev.ubuf.config.BufferSharing}: in one process, VMM allocations
 * passed as file descriptors over Unix sockets, or legacy CUDA IPC handles).
 *
 * <p>Setup data travels over a {@link dev.ubuf.bootstrap.Bootstrap}; a dead or aborted peer seen there surfaces here
 * as {@link dev.ubuf.comm.PeerFailedException}, a host wait past its deadline as
 * {@link dev.ubuf.comm.UbufTimeoutException}.
 */
package dev.ubuf.comm;
