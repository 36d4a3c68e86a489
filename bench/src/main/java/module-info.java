/**
 * The {@code ubuf} command line (dev.ubuf.cli.UbufCli), the benchmarks and their reports, and the demo's harness
 * over the layers' training. Exports nothing: it is an application. The command classes are opened to picocli
 * (annotated fields and methods) and the system report to Jackson (records serialized as JSON).
 */
@SuppressWarnings("requires-automatic") // commons-math3 has no module descriptor
module dev.ubuf.bench {
    requires dev.ubuf.core;
    requires dev.ubuf.ag;
    requires dev.ubuf.rs;
    requires dev.ubuf.layers;
    requires dev.ubuf.atomic;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires commons.math3;
    requires java.desktop; // the PNG charts: Java2D and ImageIO
    requires me.tongfei.progressbar;

    opens dev.ubuf.cli to info.picocli;
    opens dev.ubuf.info to com.fasterxml.jackson.databind;
}
