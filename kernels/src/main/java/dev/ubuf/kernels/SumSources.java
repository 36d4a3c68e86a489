package dev.ubuf.kernels;

import java.util.Arrays;

/**
 * The C struct {@code SumSources { const void* p[8]; }} that the {@code ubuf_sum_*} kernels take BY VALUE as
 * their first parameter: 64 bytes, little-endian, {@code p[j]} at byte offset 8·j, unused entries 0. With JCuda,
 * {@code Pointer.to(SumSources.pack(a, b))} is that parameter's entry in cuLaunchKernel's kernelParams.
 */
public final class SumSources {
    /** Most sources one launch can sum. */
    public static final int MAX_SOURCES = 8;
    /** Size of the struct in bytes. */
    public static final int BYTES = 8 * MAX_SOURCES;

    private SumSources() {
    }

    /**
     * The struct's 8 slots for 1..8 device addresses (as seen from the launching context: local, peer or VMM
     * mapped), in summation order.
     */
    public static long[] pack(long... deviceAddresses) {
        if (deviceAddresses == null || deviceAddresses.length < 1 || deviceAddresses.length > MAX_SOURCES) {
            throw new IllegalArgumentException("a sum takes 1 to " + MAX_SOURCES + " sources, got "
                    + (deviceAddresses == null ? "null" : deviceAddresses.length));
        }
        for (int j = 0; j < deviceAddresses.length; j++) {
            if (deviceAddresses[j] == 0) {
                throw new IllegalArgumentException("source " + j + " is a null device address");
            }
        }
        return Arrays.copyOf(deviceAddresses, MAX_SOURCES);
    }
}
