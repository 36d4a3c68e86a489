package dev.ubuf.info;

import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.Cuda;
import dev.ubuf.cuda.CudaDevice;
import dev.ubuf.cuda.ModuleLoading;
import dev.ubuf.gemm.CublasLt;
import dev.ubuf.nccl.Nccl;

import java.util.ArrayList;
import java.util.List;

/** What `ubuf info` reports: devices, links, library versions and what sharing/multicast this machine allows. */
public record SystemReport(int driverVersion, String moduleLoading, String hardwareQueues, String cublasLt,
                           String nccl, String kernels, List<Device> devices,
                           List<List<String>> peerMatrix, boolean multicastSupported, boolean multicastAllowed,
                           String multicastNote) {

    public record Device(int ordinal, String name, String pciBusId, int computeCapability, int sms, int copyEngines,
                         long memoryBytes, boolean vmm, boolean posixFd, boolean streamMemOps, boolean multicast) {
    }

    /** Gathers the report; throws {@link dev.ubuf.cuda.CudaUnavailableException} without a driver or GPU. */
    public static SystemReport gather(UbufEnvironment env) {
        int n = Cuda.deviceCount();
        List<CudaDevice> ds = new ArrayList<>();
        List<Device> devices = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CudaDevice d = CudaDevice.get(i);
            ds.add(d);
            devices.add(new Device(i, d.name(), d.pciBusId(), d.computeCapability(), d.smCount(), d.copyEngines(),
                    d.totalMemory(), d.supportsVmm(), d.supportsPosixFdHandles(), d.supportsStreamMemOps(),
                    d.supportsMulticast()));
        }
        List<List<String>> matrix = new ArrayList<>();
        for (CudaDevice a : ds) {
            List<String> row = new ArrayList<>();
            for (CudaDevice b : ds) {
                if (a == b) {
                    row.add("X");
                } else {
                    int rank = a.peerPerformanceRank(b);
                    String link = Nvml.linkBetween(a.pciBusId(), b.pciBusId());
                    row.add(rank < 0 ? "-" : link != null ? link : "P2P(rank " + rank + ")");
                }
            }
            matrix.add(row);
        }
        boolean mcHw = !devices.isEmpty() && devices.stream().allMatch(Device::multicast);
        String refusal = env.multicastRefusal();
        boolean allowed = mcHw && refusal == null;
        String note = !mcHw ? "hardware does not support multicast; unicast peer copies are used"
                : refusal != null ? refusal + "; unicast peer copies are used"
                : "multicast available";
        String cublasLt = version(() -> {
            long v = CublasLt.library().version();
            return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100) + " (" + CublasLt.library().libraryName() + ")";
        });
        return new SystemReport(Cuda.driverVersion(), ModuleLoading.inEffect(), dev.ubuf.cuda.HardwareQueues.inEffect(),
                cublasLt, version(() -> Nccl.versionString(Nccl.version())),
                dev.ubuf.cuda.KernelLibrary.available() ? "present" : "missing (built without nvcc)",
                devices, matrix, mcHw, allowed, note);
    }

    private static String version(java.util.function.Supplier<String> s) {
        try {
            return s.get();
        } catch (RuntimeException | LinkageError e) {
            return "unavailable: " + e.getMessage();
        }
    }

    public String toText() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("CUDA driver  %d.%d%n", driverVersion / 1000, driverVersion % 1000 / 10));
        sb.append("modules      ").append(moduleLoading).append(" (CUDA_MODULE_LOADING)\n");
        sb.append("queues       ").append(hardwareQueues)
                .append(" hardware queues per context (CUDA_DEVICE_MAX_CONNECTIONS)\n");
        sb.append("cuBLASLt     ").append(cublasLt).append('\n');
        sb.append("NCCL         ").append(nccl).append('\n');
        sb.append("kernels      ").append(kernels).append('\n');
        for (Device d : devices) {
            sb.append(String.format("GPU %d  %s  %s  sm_%d  %d SMs  %d copy engines  %.1f GiB  VMM %s  POSIX-FD %s"
                            + "  stream-memops %s  multicast-hw %s%n", d.ordinal(), d.name(), d.pciBusId(),
                    d.computeCapability(), d.sms(), d.copyEngines(), d.memoryBytes() / (double) (1L << 30),
                    yes(d.vmm()), yes(d.posixFd()), yes(d.streamMemOps()), yes(d.multicast())));
        }
        sb.append("P2P/NVLink matrix (row -> column):\n");
        for (int i = 0; i < peerMatrix.size(); i++) {
            sb.append("  GPU ").append(i).append(": ").append(String.join("  ", peerMatrix.get(i))).append('\n');
        }
        sb.append("  (* = active NVLinks whose remote ends could not be matched to a GPU id, as in a VM)\n");
        sb.append("multicast    supported=").append(yes(multicastSupported)).append(" allowed=")
                .append(yes(multicastAllowed)).append(" (").append(multicastNote).append(")\n");
        return sb.toString();
    }

    private static String yes(boolean b) {
        return b ? "yes" : "no";
    }
}
