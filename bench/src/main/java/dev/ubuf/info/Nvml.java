package dev.ubuf.info;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.ubuf.ffi.NativeLibrary;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;

/**
 * Just enough NVML (libnvidia-ml.so.1, java.lang.foreign) to tell NVLink from PCIe between two GPUs for `ubuf info`:
 * counts active NVLinks whose remote end is the other GPU. Absent NVML gives null (the report falls back to P2P).
 */
final class Nvml {
    private static final int NVML_NVLINK_MAX_LINKS = 18;

    private Nvml() {
    }

    /** "NV<k>" for k active links from a to b, "PCIe/P2P" for none, null when NVML is not usable. */
    static String linkBetween(String busA, String busB) {
        try (Arena arena = Arena.ofConfined()) {
            // Confined: NVML is unloaded again once the answer is known.
            NativeLibrary lib = NativeLibrary.open(List.of("libnvidia-ml.so.1"), arena);
            // nvmlInit is the same call before NVML's _v2 names (it only insists that every GPU initializes).
            MethodHandle init = lib.bindFirst(List.of("nvmlInit_v2", "nvmlInit"), FunctionDescriptor.of(JAVA_INT));
            MethodHandle byBus = lib.bind("nvmlDeviceGetHandleByPciBusId_v2",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
            MethodHandle state = lib.bind("nvmlDeviceGetNvLinkState",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            // nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId, pciSubSystemId, busId[32]
            MethodHandle remote = lib.bind("nvmlDeviceGetNvLinkRemotePciInfo_v2",
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
            MethodHandle shutdown = lib.bind("nvmlShutdown", FunctionDescriptor.of(JAVA_INT));
            if ((int) init.invokeExact() != 0) {
                return null;
            }
            try {
                MemorySegment dev = arena.allocate(ValueLayout.ADDRESS);
                if ((int) byBus.invokeExact(arena.allocateFrom(busA), dev) != 0) {
                    return null;
                }
                MemorySegment handle = dev.get(ValueLayout.ADDRESS, 0);
                MemorySegment active = arena.allocate(ValueLayout.JAVA_INT);
                MemorySegment pci = arena.allocate(68);
                int links = 0;
                int activeLinks = 0;
                for (int link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
                    if ((int) state.invokeExact(handle, link, active) != 0 || active.get(ValueLayout.JAVA_INT, 0) == 0) {
                        continue;
                    }
                    activeLinks++;
                    if ((int) remote.invokeExact(handle, link, pci) != 0) {
                        continue;
                    }
                    String rb = pci.getString(36);
                    if (normalize(rb).equals(normalize(busB))) {
                        links++;
                    }
                }
                // In a VM the remote ends can carry host bus ids that match no local GPU: report the active links.
                return links > 0 ? "NV" + links : activeLinks > 0 ? "NV" + activeLinks + "*" : "PCIe/P2P";
            } finally {
                int ignored = (int) shutdown.invokeExact();
            }
        } catch (Throwable t) {
            return null;
        }
    }

    private static String normalize(String bus) {
        String b = bus.toLowerCase().trim();
        // NVML uses an 8-digit domain ("00000000:18:00.0"), CUDA a 4-digit one ("0000:18:00.0")
        int colon = b.indexOf(':');
        return colon < 0 ? b : b.substring(colon);
    }
}
