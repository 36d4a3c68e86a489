/**
 * Traces of one training step on GPUs: {@link dev.ubuf.trace.StepTracer} records CUDA events around the work of
 * every stream of a rank (the layers' GEMMs, kernels and NCCL collectives, and each overlapped op's plan steps on the
 * op's own streams) and reads them back as a {@link dev.ubuf.trace.RankTrace} of {@link dev.ubuf.trace.Span}s, in
 * µs from the rank's step start; a {@link dev.ubuf.trace.StepTrace} holds every rank's. The data types are plain
 * values, so trace files and timelines are written (and tested) without a GPU.
 */
package dev.ubuf.trace;
