/**
 * The {@code ub_*} tensor-parallel overlap configuration with Transformer Engine's names and semantics: the
 * top-level flags of TE's {@code TransformerLayer} ({@code ub_tp_comm_overlap}, {@code ub_overlap_ag}, ...) and the
 * per-GEMM table of TE's {@code initialize_ub(ub_cfgs=...)}, which Megatron-LM ({@code --tp-comm-overlap-cfg}) and
 * NeMo ({@code ub_tp_comm_overlap_cfg}) read from YAML. {@link dev.ubuf.layers.config.UbConfig} is the immutable
 * result; {@link dev.ubuf.layers.config.UbConfig.Builder} reads a typed API, a {@code Map} or a YAML/JSON file.
 *
 * <p>FP8 is part of the same configuration, with Megatron-LM's and NeMo's key names
 * ({@link dev.ubuf.layers.config.Fp8Key}): {@code fp8: true} (or a format, {@code hybrid} / {@code e4m3}),
 * {@code fp8_recipe: delayed|current}, {@code fp8_format: hybrid|e4m3} (hybrid: E4M3 forward, E5M2 gradients),
 * and for delayed scaling {@code fp8_margin}, {@code fp8_amax_history_len} and
 * {@code fp8_amax_compute_algo: max|most_recent} (TE's defaults: delayed, hybrid, 0, 1024, max). With FP8 on, each
 * all-gather GEMM's {@code fp8_buf} defaults to true (TE's table): its user buffer and ring hold the FP8 shard.
 * Recipe keys without {@code fp8: true}, delayed-only keys under current scaling, {@code fp8_buf: true} without FP8
 * or on a GEMM that reduce-scatters, and {@code fp8_buf: false} on an all-gather GEMM under FP8 are rejected, naming
 * the key and where it was written.
 */
package dev.ubuf.layers.config;
