package dev.ubuf.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ubuf.config.UbufEnvironment;
import dev.ubuf.cuda.CudaUnavailableException;
import dev.ubuf.info.SystemReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.concurrent.Callable;
import java.util.function.Function;

/** Prints devices, links, versions and sharing support; exits 2 on a machine without a usable GPU. */
@Command(name = "info", mixinStandardHelpOptions = true, version = UbufCli.VERSION, description = "Devices, SMs, copy engines, P2P/NVLink matrix, driver/cuBLASLt/NCCL versions,"
        + " VMM and POSIX-FD support, multicast support and whether UB_SKIPMC allows it.")
final class InfoCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--json", description = "Print the report as JSON.")
    boolean json;

    /** Where the report comes from: this machine, or (tests) a made-up one. */
    private final Function<UbufEnvironment, SystemReport> reports;

    InfoCommand() {
        this(SystemReport::gather);
    }

    InfoCommand(Function<UbufEnvironment, SystemReport> reports) {
        this.reports = reports;
    }

    @Override
    public Integer call() throws Exception {
        SystemReport r;
        try {
            r = reports.apply(UbufEnvironment.fromSystem());
        } catch (CudaUnavailableException e) {
            spec.commandLine().getErr().println("ubuf info: no usable GPU on this machine: " + e.getMessage());
            return 2;
        }
        if (json) {
            spec.commandLine().getOut().println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(r));
        } else {
            spec.commandLine().getOut().print(r.toText());
        }
        return 0;
    }
}
