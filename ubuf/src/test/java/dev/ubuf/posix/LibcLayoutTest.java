package dev.ubuf.posix;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The struct layouts and CMSG arithmetic must match glibc 2.36 on LP64 Linux byte for byte (expected values printed by
 * a C program with sizeof/offsetof/CMSG_* against /usr/include on x86-64).
 */
class LibcLayoutTest {

    @Test
    void structSizesMatchGlibc() {
        assertEquals(56, Libc.MSGHDR.byteSize(), "sizeof(struct msghdr)");
        assertEquals(16, Libc.IOVEC.byteSize(), "sizeof(struct iovec)");
        assertEquals(16, Libc.CMSGHDR.byteSize(), "sizeof(struct cmsghdr)");
        assertEquals(110, Libc.SOCKADDR_UN.byteSize(), "sizeof(struct sockaddr_un)");
        assertEquals(12, Libc.UCRED.byteSize(), "sizeof(struct ucred)");
        assertEquals(8, Libc.POLLFD.byteSize(), "sizeof(struct pollfd)");
    }

    @Test
    void msghdrFieldOffsetsMatchGlibc() {
        assertEquals(0, Libc.MSG_NAME);
        assertEquals(8, Libc.MSG_NAMELEN);
        assertEquals(16, Libc.MSG_IOV);
        assertEquals(24, Libc.MSG_IOVLEN);
        assertEquals(32, Libc.MSG_CONTROL);
        assertEquals(40, Libc.MSG_CONTROLLEN);
        assertEquals(48, Libc.MSG_FLAGS);
        assertEquals(8, Libc.CMSG_LEVEL);
        assertEquals(12, Libc.CMSG_TYPE);
        assertEquals(4, Libc.UCRED_UID);
        assertEquals(8, Libc.UCRED_GID);
    }

    @Test
    void cmsgArithmeticForOneDescriptor() {
        assertEquals(20, Libc.cmsgLen(4), "CMSG_LEN(sizeof(int))");
        assertEquals(24, Libc.cmsgSpace(4), "CMSG_SPACE(sizeof(int))");
        assertEquals(16, Libc.cmsgDataOffset(), "CMSG_DATA offset");
        assertEquals(24, Libc.cmsgSpace(8), "CMSG_SPACE(2 * sizeof(int))");
        assertEquals(32, Libc.cmsgSpace(12), "CMSG_SPACE(3 * sizeof(int))");
        assertEquals(24, Libc.cmsgLen(8), "CMSG_LEN(2 * sizeof(int))");
    }
}
