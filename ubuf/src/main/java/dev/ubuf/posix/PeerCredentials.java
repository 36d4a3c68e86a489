package dev.ubuf.posix;

/**
 * The process at the other end of a Unix socket, as the kernel recorded it when the connection was made
 * (getsockopt SO_PEERCRED, struct ucred).
 */
public record PeerCredentials(int pid, int uid, int gid) {

    /** The credentials of this process (getpid, getuid, getgid). */
    public static PeerCredentials currentProcess() {
        Libc libc = Libc.get();
        return new PeerCredentials(libc.getpid(), libc.getuid(), libc.getgid());
    }

    /**
     * Rejects a peer that runs as another user than {@code expectedUid}: a file descriptor of GPU memory must only
     * ever reach processes of the same user.
     */
    public PeerCredentials requireUid(int expectedUid) {
        if (uid != expectedUid) {
            throw new UnixSocketException("refusing Unix-socket peer pid " + pid + ": it runs as uid " + uid
                    + ", this process as uid " + expectedUid);
        }
        return this;
    }
}
