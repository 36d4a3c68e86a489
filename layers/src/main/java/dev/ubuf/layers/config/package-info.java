/**
 * The {@code ub_*} tensor-parallel overlap configuration with Transformer Engine's names and semantics: the
 * top-level flags of TE's {@code TransformerLayer} ({@code ub_tp_comm_overlap}, {@code ub_overlap_ag}, ...) and the
 * per-GEMM table of TE's {@code initialize_ub(ub_cfgs=...)}, which Megatron-LM ({@code --tp-comm-overlap-cfg}) and
 * NeMo ({@code ub_tp_comm_overlap_cfg}) read from YAML. {@link dev.ubuf.layers.config.UbConfig} is the immutable
 * result; {@link dev.ubuf.layers.config.UbConfig.Builder} reads a typed API, a {@code Map} or a YAML/JSON file.
 */
package dev.ubuf.layers.config;
