package dev.ubuf.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaUnavailableException;
import dev.ubuf.info.SystemReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** Prints devices, links, versions and sharing support; exits 2 on a machine without a usable GPU. */
@Command(name = "info", description = "Devices, SMs, copy engines, P2P/NVLink matrix, driver/cuBLASLt/NCCL versions,"
        + " VMM and POSIX-FD support, multicast support and whether UB_SKIPMC allows it.")
final class InfoCommand implements Callable<Integer> {
    @Option(names = "--json", description = "print the report as JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        SystemReport r;
        try {
            r = SystemReport.gather(UbufEnvironment.fromSystem());
        } catch (CudaUnavailableException e) {
            System.err.println("ubuf info: no usable GPU on this machine: " + e.getMessage());
            return 2;
        }
        if (json) {
            System.out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(r));
        } else {
            System.out.print(r.toText());
        }
        return 0;
    }
}
