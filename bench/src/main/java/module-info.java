/**
 * The {@code ubuf} command line (dev.ubuf.cli.UbufCli), the benchmarks and their reports, and {@code ubuf-launch}.
 * Exported: {@code dev.ubuf.launch}, the launcher that starts one JVM per rank. The command classes are opened to
 * picocli (annotated fields and methods) and the system report to Jackson (records serialized as JSON).
 */
@SuppressWarnings("requires-automatic") // commons-math3 and XChart have no module descriptor
module dev.ubuf.bench {
    requires dev.ubuf.core;
    requires dev.ubuf.ag;
    requires dev.ubuf.rs;
    requires dev.ubuf.layers;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires commons.math3;
    requires org.knowm.xchart;
    requires java.desktop; // XChart draws with AWT; as an automatic module it cannot say so itself
    requires me.tongfei.progressbar;

    exports dev.ubuf.launch;

    opens dev.ubuf.cli to info.picocli;
    opens dev.ubuf.launch to info.picocli;
    opens dev.ubuf.info to com.fasterxml.jackson.databind;
}
