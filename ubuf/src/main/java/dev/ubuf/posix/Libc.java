package dev.ubuf.posix;

import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The libc calls ubuf needs for Unix-socket FD passing, bound with java.lang.foreign.
 *
 * <p>Constants and struct layouts are those of Linux LP64 (x86-64 and aarch64 share them), taken from the glibc 2.36
 * headers: bits/socket.h (msghdr, cmsghdr, CMSG_*, ucred, AF_UNIX, MSG_*), bits/socket_type.h (SOCK_STREAM,
 * SOCK_CLOEXEC), asm-generic/socket.h (SOL_SOCKET, SO_PEERCRED), sys/un.h (sockaddr_un), bits/poll.h, sys/poll.h,
 * bits/fcntl-linux.h, asm-generic/errno*.h. Every call that can fail captures errno through
 * {@code Linker.Option.captureCallState("errno")}, so no other JVM call can clobber it in between.
 *
 * <p>The instance is created on first use ({@link #get()}), so merely loading a class that mentions it does no native
 * work.
 */
@SuppressWarnings("restricted") // reads libc's C strings; binding is NativeLibrary's
final class Libc {
    // bits/socket.h, bits/socket_type.h, asm-generic/socket.h (glibc 2.36, Linux UAPI)
    static final int AF_UNIX = 1;
    static final int SOCK_STREAM = 1;
    static final int SOCK_CLOEXEC = 0x80000; // 02000000 octal
    static final int SOCK_NONBLOCK = 0x800; // 00004000 octal
    static final int SOL_SOCKET = 1;
    static final int SCM_RIGHTS = 1;
    static final int SO_PEERCRED = 17;
    static final int MSG_CTRUNC = 0x08;
    static final int MSG_NOSIGNAL = 0x4000;
    static final int MSG_CMSG_CLOEXEC = 0x40000000;
    // bits/poll.h
    static final short POLLIN = 0x001;
    static final short POLLERR = 0x008;
    static final short POLLHUP = 0x010;
    static final short POLLNVAL = 0x020;
    // bits/fcntl-linux.h
    static final int O_RDONLY = 0;
    static final int O_CLOEXEC = 0x80000; // 02000000 octal
    static final int F_DUPFD_CLOEXEC = 1030;
    // asm-generic/errno-base.h, asm-generic/errno.h
    static final int ENOENT = 2;
    static final int EINTR = 4;
    static final int EAGAIN = 11;
    static final int EADDRINUSE = 98;
    static final int ECONNREFUSED = 111;

    /** sizeof(sun_path) in struct sockaddr_un; a path needs one byte more than its length for the NUL. */
    static final int SUN_PATH_BYTES = 108;

    static final AddressLayout POINTER = ADDRESS;
    /** size_t on LP64. */
    static final ValueLayout.OfLong SIZE_T = JAVA_LONG;

    /** struct sockaddr_un { sa_family_t sun_family; char sun_path[108]; } — 110 bytes. */
    static final StructLayout SOCKADDR_UN = MemoryLayout.structLayout(
            JAVA_SHORT.withName("sun_family"),
            MemoryLayout.sequenceLayout(SUN_PATH_BYTES, ValueLayout.JAVA_BYTE).withName("sun_path"));

    /** struct iovec { void *iov_base; size_t iov_len; } — 16 bytes. */
    static final StructLayout IOVEC = MemoryLayout.structLayout(
            POINTER.withName("iov_base"),
            SIZE_T.withName("iov_len"));

    /** struct msghdr — 56 bytes on LP64 (padding after msg_namelen and msg_flags). */
    static final StructLayout MSGHDR = MemoryLayout.structLayout(
            POINTER.withName("msg_name"),
            JAVA_INT.withName("msg_namelen"),
            MemoryLayout.paddingLayout(4),
            POINTER.withName("msg_iov"),
            SIZE_T.withName("msg_iovlen"),
            POINTER.withName("msg_control"),
            SIZE_T.withName("msg_controllen"),
            JAVA_INT.withName("msg_flags"),
            MemoryLayout.paddingLayout(4));

    /** struct cmsghdr { size_t cmsg_len; int cmsg_level; int cmsg_type; unsigned char data[]; } — 16-byte header. */
    static final StructLayout CMSGHDR = MemoryLayout.structLayout(
            SIZE_T.withName("cmsg_len"),
            JAVA_INT.withName("cmsg_level"),
            JAVA_INT.withName("cmsg_type"));

    /** struct ucred { pid_t pid; uid_t uid; gid_t gid; } — 12 bytes. */
    static final StructLayout UCRED = MemoryLayout.structLayout(
            JAVA_INT.withName("pid"),
            JAVA_INT.withName("uid"),
            JAVA_INT.withName("gid"));

    /** struct pollfd { int fd; short events; short revents; } — 8 bytes. */
    static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"),
            JAVA_SHORT.withName("events"),
            JAVA_SHORT.withName("revents"));

    static final long MSG_NAME = MSGHDR.byteOffset(groupElement("msg_name"));
    static final long MSG_NAMELEN = MSGHDR.byteOffset(groupElement("msg_namelen"));
    static final long MSG_IOV = MSGHDR.byteOffset(groupElement("msg_iov"));
    static final long MSG_IOVLEN = MSGHDR.byteOffset(groupElement("msg_iovlen"));
    static final long MSG_CONTROL = MSGHDR.byteOffset(groupElement("msg_control"));
    static final long MSG_CONTROLLEN = MSGHDR.byteOffset(groupElement("msg_controllen"));
    static final long MSG_FLAGS = MSGHDR.byteOffset(groupElement("msg_flags"));
    static final long IOV_BASE = IOVEC.byteOffset(groupElement("iov_base"));
    static final long IOV_LEN = IOVEC.byteOffset(groupElement("iov_len"));
    static final long UCRED_PID = UCRED.byteOffset(groupElement("pid"));
    static final long UCRED_UID = UCRED.byteOffset(groupElement("uid"));
    static final long UCRED_GID = UCRED.byteOffset(groupElement("gid"));
    static final long CMSG_LEN_OFFSET = CMSGHDR.byteOffset(groupElement("cmsg_len"));
    static final long CMSG_LEVEL = CMSGHDR.byteOffset(groupElement("cmsg_level"));
    static final long CMSG_TYPE = CMSGHDR.byteOffset(groupElement("cmsg_type"));

    /** CMSG_ALIGN(len): round up to sizeof(size_t). */
    static long cmsgAlign(long len) {
        return (len + SIZE_T.byteSize() - 1) & ~(SIZE_T.byteSize() - 1);
    }

    /** CMSG_LEN(len) = CMSG_ALIGN(sizeof(struct cmsghdr)) + len. */
    static long cmsgLen(long len) {
        return cmsgAlign(CMSGHDR.byteSize()) + len;
    }

    /** CMSG_SPACE(len) = CMSG_ALIGN(len) + CMSG_ALIGN(sizeof(struct cmsghdr)). */
    static long cmsgSpace(long len) {
        return cmsgAlign(len) + cmsgAlign(CMSGHDR.byteSize());
    }

    /** CMSG_DATA(cmsg): the data follows the header without further padding. */
    static long cmsgDataOffset() {
        return CMSGHDR.byteSize();
    }

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(groupElement("errno"));

    private final MethodHandle socket;
    private final MethodHandle bind;
    private final MethodHandle listen;
    private final MethodHandle accept4;
    private final MethodHandle connect;
    private final MethodHandle sendmsg;
    private final MethodHandle recvmsg;
    private final MethodHandle getsockopt;
    private final MethodHandle close;
    private final MethodHandle poll;
    private final MethodHandle unlink;
    private final MethodHandle open;
    private final MethodHandle read;
    private final MethodHandle fcntlInt;
    private final MethodHandle getuid;
    private final MethodHandle getpid;
    private final MethodHandle getgid;
    private final MethodHandle strerror;

    private Libc() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64"))) {
            throw new UnsupportedOperationException("ubuf's Unix-socket FD passing binds Linux libc with the LP64 "
                    + "struct layouts of x86-64/aarch64; this JVM runs on " + os + "/" + arch);
        }
        NativeLibrary libc = NativeLibrary.standardLibraries();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        socket = libc.bind("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), errno);
        bind = libc.bind("bind", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), errno);
        listen = libc.bind("listen", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), errno);
        accept4 = libc.bind("accept4", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), errno);
        connect = libc.bind("connect", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), errno);
        sendmsg = libc.bind("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT), errno);
        recvmsg = libc.bind("recvmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT), errno);
        getsockopt = libc.bind("getsockopt",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), errno);
        close = libc.bind("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), errno);
        poll = libc.bind("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), errno);
        unlink = libc.bind("unlink", FunctionDescriptor.of(JAVA_INT, ADDRESS), errno);
        // open(const char *path, int flags, ...) and fcntl(int fd, int cmd, ...) are variadic: say so.
        open = libc.bind("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                errno, Linker.Option.firstVariadicArg(2));
        read = libc.bind("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), errno);
        fcntlInt = libc.bind("fcntl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
                errno, Linker.Option.firstVariadicArg(2));
        getuid = libc.bind("getuid", FunctionDescriptor.of(JAVA_INT));
        getpid = libc.bind("getpid", FunctionDescriptor.of(JAVA_INT));
        getgid = libc.bind("getgid", FunctionDescriptor.of(JAVA_INT));
        // glibc >= 2.32 strerror is thread-safe (per-thread buffer for unknown codes); we copy the text at once.
        strerror = libc.bind("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    private static final class Holder {
        static final Libc INSTANCE = new Libc();
    }

    static Libc get() {
        return Holder.INSTANCE;
    }

    /** A capture segment for errno, allocated in the caller's per-call arena. */
    static MemorySegment errnoSegment(Arena arena) {
        return arena.allocate(CAPTURE_LAYOUT);
    }

    static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    String strerror(int errno) {
        try {
            MemorySegment text = (MemorySegment) strerror.invokeExact(errno);
            if (text.equals(MemorySegment.NULL)) {
                return "errno " + errno;
            }
            return text.reinterpret(4096).getString(0, StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /** A {@link PosixException} for a failed call, with libc's own text for errno. */
    PosixException failure(String call, int errno) {
        return new PosixException(call, errno, strerror(errno));
    }

    int socket(MemorySegment capture, int domain, int type, int protocol) {
        try {
            return (int) socket.invokeExact(capture, domain, type, protocol);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int bind(MemorySegment capture, int fd, MemorySegment address, int length) {
        try {
            return (int) bind.invokeExact(capture, fd, address, length);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int listen(MemorySegment capture, int fd, int backlog) {
        try {
            return (int) listen.invokeExact(capture, fd, backlog);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int accept4(MemorySegment capture, int fd, int flags) {
        try {
            return (int) accept4.invokeExact(capture, fd, MemorySegment.NULL, MemorySegment.NULL, flags);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int connect(MemorySegment capture, int fd, MemorySegment address, int length) {
        try {
            return (int) connect.invokeExact(capture, fd, address, length);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    long sendmsg(MemorySegment capture, int fd, MemorySegment msghdr, int flags) {
        try {
            return (long) sendmsg.invokeExact(capture, fd, msghdr, flags);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    long recvmsg(MemorySegment capture, int fd, MemorySegment msghdr, int flags) {
        try {
            return (long) recvmsg.invokeExact(capture, fd, msghdr, flags);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int getsockopt(MemorySegment capture, int fd, int level, int name, MemorySegment value, MemorySegment length) {
        try {
            return (int) getsockopt.invokeExact(capture, fd, level, name, value, length);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int close(MemorySegment capture, int fd) {
        try {
            return (int) close.invokeExact(capture, fd);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int poll(MemorySegment capture, MemorySegment fds, long count, int timeoutMillis) {
        try {
            return (int) poll.invokeExact(capture, fds, count, timeoutMillis);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int unlink(MemorySegment capture, MemorySegment path) {
        try {
            return (int) unlink.invokeExact(capture, path);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int open(MemorySegment capture, MemorySegment path, int flags, int mode) {
        try {
            return (int) open.invokeExact(capture, path, flags, mode);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    long read(MemorySegment capture, int fd, MemorySegment buffer, long count) {
        try {
            return (long) read.invokeExact(capture, fd, buffer, count);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int fcntl(MemorySegment capture, int fd, int command, int argument) {
        try {
            return (int) fcntlInt.invokeExact(capture, fd, command, argument);
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int getuid() {
        try {
            return (int) getuid.invokeExact();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int getpid() {
        try {
            return (int) getpid.invokeExact();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    int getgid() {
        try {
            return (int) getgid.invokeExact();
        } catch (Throwable t) {
            throw NativeLibrary.unchecked(t);
        }
    }

    /**
     * The bytes of a socket path as sun_path holds them, checked before any native work: no NUL inside, and short
     * enough to leave room for the terminating NUL in the 108-byte sun_path.
     */
    static byte[] socketPathBytes(java.nio.file.Path path) {
        byte[] bytes = path.toString().getBytes(StandardCharsets.UTF_8);
        if (bytes.length == 0) {
            throw new IllegalArgumentException("Unix socket path is empty");
        }
        for (byte b : bytes) {
            if (b == 0) {
                throw new IllegalArgumentException("Unix socket path contains a NUL byte: " + path);
            }
        }
        if (bytes.length >= SUN_PATH_BYTES) {
            throw new IllegalArgumentException("Unix socket path is " + bytes.length + " bytes; sun_path holds at most "
                    + (SUN_PATH_BYTES - 1) + " plus the NUL (use a shorter directory, e.g. under /tmp): " + path);
        }
        return bytes;
    }

    /** A zeroed struct sockaddr_un for an AF_UNIX filesystem path (bytes from {@link #socketPathBytes}). */
    static MemorySegment sockaddrUn(Arena arena, byte[] pathBytes) {
        MemorySegment address = arena.allocate(SOCKADDR_UN); // Arena.allocate zero-fills: the NUL comes for free
        address.set(JAVA_SHORT, SOCKADDR_UN.byteOffset(groupElement("sun_family")), (short) AF_UNIX);
        MemorySegment.copy(pathBytes, 0, address, ValueLayout.JAVA_BYTE,
                SOCKADDR_UN.byteOffset(groupElement("sun_path")), pathBytes.length);
        return address;
    }

    /**
     * Waits until fd is readable (or has an error/hang-up that the next call will report), at most timeoutNanos.
     * Returns false when the time ran out. Retries on EINTR with the remaining time.
     */
    boolean awaitReadable(int fd, long timeoutNanos, String what) {
        long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = errnoSegment(arena);
            MemorySegment pollfd = arena.allocate(POLLFD);
            while (true) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    return false;
                }
                pollfd.set(JAVA_INT, POLLFD.byteOffset(groupElement("fd")), fd);
                pollfd.set(JAVA_SHORT, POLLFD.byteOffset(groupElement("events")), POLLIN);
                pollfd.set(JAVA_SHORT, POLLFD.byteOffset(groupElement("revents")), (short) 0);
                // Round up so a sub-millisecond remainder still waits instead of spinning.
                int millis = (int) Math.min(Integer.MAX_VALUE, (remaining + 999_999) / 1_000_000);
                int ready = poll(capture, pollfd, 1, millis);
                if (ready < 0) {
                    int errno = errno(capture);
                    if (errno == EINTR) {
                        continue;
                    }
                    throw failure("poll(" + what + ")", errno);
                }
                if (ready > 0) {
                    short revents = pollfd.get(JAVA_SHORT, POLLFD.byteOffset(groupElement("revents")));
                    if ((revents & POLLNVAL) != 0) {
                        throw new IllegalStateException(what + ": fd " + fd + " is not open (POLLNVAL)");
                    }
                    return true; // POLLIN, POLLERR or POLLHUP: the next call returns data, the error or EOF
                }
            }
        }
    }

    /** Closes fd, reporting (not retrying) a failure: after close(2) fails the descriptor is gone on Linux anyway. */
    void closeOrThrow(int fd, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment capture = errnoSegment(arena);
            if (close(capture, fd) != 0) {
                int errno = errno(capture);
                if (errno != EINTR) { // Linux releases the fd even on EINTR; retrying could close a reused number
                    throw failure("close(" + what + " fd " + fd + ")", errno);
                }
            }
        }
    }
}
