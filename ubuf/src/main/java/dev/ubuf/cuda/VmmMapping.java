package dev.ubuf.cuda;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One reserved virtual address range with VMM allocations mapped at chosen offsets, read-write for a list of devices:
 * e.g. the tp peers' ubufs, each imported and mapped at {@code peer * size}, so one base address reaches them all.
 *
 * <p>{@link #map} reserves the range (aligned to the largest granularity), maps each segment, then sets access on
 * each segment; if any step fails it undoes what it did and rethrows. {@link #close()} unmaps the segments in reverse
 * order and frees the range, once. The mapping does not own the allocations: their owner closes them (before or after
 * this; mapped memory lives until unmapped). Calls use the CUDA context current on the calling thread.
 */
public final class VmmMapping implements AutoCloseable {
    /** One allocation placed at byte {@code offset} of the range. */
    public record Segment(VmmAllocation allocation, long offset) {
        public Segment {
            Objects.requireNonNull(allocation, "allocation");
            if (offset < 0) {
                throw new IllegalArgumentException("segment offset must be non-negative, got " + offset);
            }
        }
    }

    private final VmmDriver driver;
    private final long address;
    private final long size;
    private final List<Segment> segments;
    private final AtomicBoolean closed = new AtomicBoolean();

    private VmmMapping(VmmDriver driver, long address, long size, List<Segment> segments) {
        this.driver = driver;
        this.address = address;
        this.size = size;
        this.segments = segments;
    }

    /**
     * Reserves {@code totalSize} bytes of address space, maps every segment's whole allocation at its offset and
     * makes the segments readable and writable from each device ordinal in {@code accessDevices}.
     *
     * @throws IllegalArgumentException before any CUDA call if the layout is invalid: no segments, a closed
     *     allocation, an offset not a multiple of its allocation's granularity, a segment past {@code totalSize},
     *     overlapping segments, {@code totalSize} not a multiple of the largest granularity, or no / negative /
     *     repeated access devices
     */
    public static VmmMapping map(long totalSize, List<Segment> segments, int[] accessDevices) {
        return map(CudaVmm.driver(), totalSize, segments, accessDevices);
    }

    static VmmMapping map(VmmDriver driver, long totalSize, List<Segment> segments, int[] accessDevices) {
        List<Segment> placed = List.copyOf(Objects.requireNonNull(segments, "segments"));
        int[] devices = Objects.requireNonNull(accessDevices, "accessDevices").clone();
        long alignment = validate(totalSize, placed, devices);

        long base = driver.addressReserve(totalSize, alignment);
        List<Segment> mapped = new ArrayList<>(placed.size());
        try {
            for (Segment s : placed) {
                driver.map(base + s.offset(), s.allocation().size(), 0L, s.allocation().handle());
                mapped.add(s);
            }
            // Per segment: cuMemSetAccess needs a fully mapped range, and segments may leave gaps.
            for (Segment s : placed) {
                driver.setAccess(base + s.offset(), s.allocation().size(), devices);
            }
        } catch (RuntimeException e) {
            release(driver, base, totalSize, mapped, e);
            throw e;
        }
        return new VmmMapping(driver, base, totalSize, placed);
    }

    /** Checks the layout without CUDA; returns the reservation alignment (the largest segment granularity). */
    private static long validate(long totalSize, List<Segment> segments, int[] devices) {
        if (totalSize <= 0) {
            throw new IllegalArgumentException("totalSize must be positive, got " + totalSize);
        }
        if (segments.isEmpty()) {
            throw new IllegalArgumentException("a mapping needs at least one segment");
        }
        long alignment = 1;
        for (Segment s : segments) {
            VmmAllocation a = s.allocation();
            if (!a.isOpen()) {
                throw new IllegalArgumentException("segment at offset " + s.offset() + ": " + a + " is closed");
            }
            if (s.offset() % a.granularity() != 0) {
                throw new IllegalArgumentException("segment offset " + s.offset() + " is not a multiple of its"
                        + " allocation's granularity " + a.granularity());
            }
            if (s.offset() > totalSize - a.size()) {
                throw new IllegalArgumentException("segment [" + s.offset() + ", +" + a.size() + ") ends past"
                        + " totalSize " + totalSize);
            }
            alignment = Math.max(alignment, a.granularity());
        }
        List<Segment> byOffset = new ArrayList<>(segments);
        byOffset.sort(Comparator.comparingLong(Segment::offset));
        for (int i = 1; i < byOffset.size(); i++) {
            Segment prev = byOffset.get(i - 1);
            Segment next = byOffset.get(i);
            if (next.offset() < prev.offset() + prev.allocation().size()) {
                throw new IllegalArgumentException("segments at offsets " + prev.offset() + " and " + next.offset()
                        + " overlap (the first is " + prev.allocation().size() + " bytes)");
            }
        }
        if (totalSize % alignment != 0) {
            throw new IllegalArgumentException("totalSize " + totalSize + " is not a multiple of the granularity "
                    + alignment);
        }
        if (devices.length == 0) {
            throw new IllegalArgumentException("accessDevices is empty: no device could use the mapping");
        }
        Set<Integer> seen = new HashSet<>();
        for (int d : devices) {
            if (d < 0) {
                throw new IllegalArgumentException("access device ordinal " + d + " is negative");
            }
            if (!seen.add(d)) {
                throw new IllegalArgumentException("access device " + d + " is listed twice");
            }
        }
        return alignment;
    }

    /** Base device address of the range. */
    public long address() {
        requireOpen();
        return address;
    }

    /** Device address of segment {@code index} (in the order given to {@link #map}). */
    public long address(int index) {
        requireOpen();
        return address + segments.get(index).offset();
    }

    /** Bytes reserved. */
    public long size() {
        return size;
    }

    /** The segments, in the order given to {@link #map}. */
    public List<Segment> segments() {
        return segments;
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Unmaps every segment in reverse order, then frees the range; once (later calls do nothing). Every step is
     * tried even if an earlier one fails; the first failure is thrown with the others suppressed.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            RuntimeException failure = release(driver, address, size, segments, null);
            if (failure != null) {
                throw failure;
            }
        }
    }

    @Override
    public String toString() {
        return "VmmMapping[" + size + " bytes at 0x" + Long.toHexString(address) + ", " + segments.size()
                + " segments" + (isOpen() ? "" : ", closed") + "]";
    }

    /** Unmaps {@code mapped} last-first, frees the range; failures join {@code into} (or the first becomes it). */
    private static RuntimeException release(VmmDriver driver, long base, long size, List<Segment> mapped,
            RuntimeException into) {
        RuntimeException failure = into;
        for (int i = mapped.size() - 1; i >= 0; i--) {
            Segment s = mapped.get(i);
            try {
                driver.unmap(base + s.offset(), s.allocation().size());
            } catch (RuntimeException e) {
                failure = join(failure, e);
            }
        }
        try {
            driver.addressFree(base, size);
        } catch (RuntimeException e) {
            failure = join(failure, e);
        }
        return failure == into ? null : failure;
    }

    private static RuntimeException join(RuntimeException first, RuntimeException next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }
}
