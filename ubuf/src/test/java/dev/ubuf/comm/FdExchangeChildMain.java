package dev.ubuf.comm;

import dev.ubuf.bootstrap.BootstrapConfig;
import dev.ubuf.bootstrap.LaunchEnvironment;
import dev.ubuf.bootstrap.TcpBootstrap;

import java.nio.file.Path;
import java.util.Map;

/**
 * A rank in a child process for {@link FdExchangeTest}: joins the TCP bootstrap from RANK etc. and UB_TIMEOUT in its
 * environment, shares DIR/rank&lt;r&gt;.bin through {@link FdExchange} and checks every peer's through the descriptor
 * received, with sockets in DIR/s. Argument: DIR.
 */
public final class FdExchangeChildMain {
    private FdExchangeChildMain() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        try (TcpBootstrap bootstrap = TcpBootstrap.connect(LaunchEnvironment.fromEnvironment(env),
                BootstrapConfig.fromEnvironment(env))) {
            FdExchangeTest.exchangeAndCheckFiles(bootstrap, Path.of(args[0]));
            System.out.println("OK fd-exchange rank " + bootstrap.rank() + " pid " + ProcessHandle.current().pid());
        }
    }
}
