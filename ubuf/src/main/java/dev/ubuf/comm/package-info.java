/**
 * How the ranks of a job find each other on the CPU side: {@link dev.ubuf.comm.Bootstrap} (allGather, broadcast,
 * barrier, subgroups, abort, all with deadlines) over TCP ({@link dev.ubuf.comm.TcpBootstrap}, one JVM per GPU) or in
 * memory ({@link dev.ubuf.comm.InMemoryBootstrap}, one JVM with a thread per GPU); the launch environment
 * ({@link dev.ubuf.comm.LaunchEnvironment}), the deadline setting ({@link dev.ubuf.comm.BootstrapConfig}) and the
 * split of the world into TP and DP groups ({@link dev.ubuf.comm.DomainLayout}).
 */
package dev.ubuf.comm;
