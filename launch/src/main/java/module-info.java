/**
 * {@code ubuf-launch} ({@link dev.ubuf.launch.Launcher}): starts and supervises one JVM per rank on a node,
 * torchrun-style. The package is opened to picocli, which fills the launcher's annotated options.
 */
module dev.ubuf.launch {
    requires dev.ubuf.core;
    requires info.picocli;

    exports dev.ubuf.launch;

    opens dev.ubuf.launch to info.picocli;
}
