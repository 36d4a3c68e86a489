/**
 * How the ranks of a job find each other on the CPU side, before and beside any GPU work: {@link
 * dev.ubuf.bootstrap.Bootstrap} (allGather, broadcast, barrier, subgroups, abort, all with deadlines) over TCP
 * ({@link dev.ubuf.bootstrap.TcpBootstrap}, one JVM per GPU, authenticated by a job token) or in memory
 * ({@link dev.ubuf.bootstrap.InMemoryBootstrap}, one JVM with a thread per GPU); the launch environment
 * ({@link dev.ubuf.bootstrap.LaunchEnvironment}), the settings ({@link dev.ubuf.bootstrap.BootstrapConfig}) and the
 * split of the world into TP and DP groups ({@link dev.ubuf.bootstrap.DomainLayout}).
 *
 * <p>Pure Java and CPU only: this package uses no CUDA and nothing of {@code dev.ubuf.comm}, which builds the
 * communicator and user buffers on top of it.
 */
package dev.ubuf.bootstrap;
