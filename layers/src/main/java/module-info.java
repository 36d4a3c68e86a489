/**
 * TP transformer building blocks: the ub_* overlap configuration (Transformer Engine names), the TP layers, the layer
 * kernels' launchers and their float64 host reference, and the training step over a stack of layers (on GPUs, or
 * simulated on the host). Every package is API.
 */
module dev.ubuf.layers {
    requires transitive dev.ubuf.core;
    requires transitive dev.ubuf.ag;
    requires transitive dev.ubuf.rs;
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.dataformat.yaml;

    exports dev.ubuf.layers.config;
    exports dev.ubuf.layers.kernels;
    exports dev.ubuf.layers.reference;
    exports dev.ubuf.layers.tp;
    exports dev.ubuf.layers.train;
}
