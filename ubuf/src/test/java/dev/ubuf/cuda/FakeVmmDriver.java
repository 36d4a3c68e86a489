package dev.ubuf.cuda;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Records VMM calls as strings, hands out fake handles and addresses, and fails the calls it is told to. */
final class FakeVmmDriver implements VmmDriver {
    static final long GRANULARITY = 2L << 20;
    static final long BASE = 0x7f00_0000_0000L;

    final List<String> calls = new ArrayList<>();
    private long nextHandle = 100;
    String failOn; // a call-name prefix to fail, e.g. "map 0x7f0000200000"

    private void record(String call) {
        calls.add(call);
        if (failOn != null && call.startsWith(failOn)) {
            throw new CudaException(call.split(" ")[0], 2, "CUDA_ERROR_OUT_OF_MEMORY");
        }
    }

    List<String> callsStartingWith(String prefix) {
        return calls.stream().filter(c -> c.startsWith(prefix)).toList();
    }

    @Override
    public long granularity(int device, CudaVmm.Granularity kind) {
        record("granularity " + device + " " + kind);
        return GRANULARITY;
    }

    @Override
    public long memCreate(long size, int device) {
        record("create " + size + " " + device);
        return nextHandle++;
    }

    @Override
    public void memRelease(long handle) {
        record("release " + handle);
    }

    @Override
    public int exportToFd(long handle) {
        record("export " + handle);
        return 40 + (int) handle;
    }

    @Override
    public long importFromFd(int fd) {
        record("import " + fd);
        return nextHandle++;
    }

    @Override
    public long addressReserve(long size, long alignment) {
        record("reserve " + size + " " + alignment);
        return BASE;
    }

    @Override
    public void addressFree(long address, long size) {
        record("free 0x" + Long.toHexString(address) + " " + size);
    }

    @Override
    public void map(long address, long size, long offset, long handle) {
        record("map 0x" + Long.toHexString(address) + " " + size + " " + offset + " " + handle);
    }

    @Override
    public void unmap(long address, long size) {
        record("unmap 0x" + Long.toHexString(address) + " " + size);
    }

    @Override
    public void setAccess(long address, long size, int[] devices) {
        record("access 0x" + Long.toHexString(address) + " " + size + " " + Arrays.toString(devices));
    }
}
