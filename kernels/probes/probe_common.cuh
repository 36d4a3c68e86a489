// What the standalone probes share (kernels/probes/*.cu, not part of the build): a checked CUDA call for main(),
// deterministic bf16 inputs, and the timing of one variant with its output compared bit for bit with a reference.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define CK(x)                                                              \
    do {                                                                   \
        cudaError_t e = (x);                                               \
        if (e != cudaSuccess) {                                            \
            printf("%s: %s\n", #x, cudaGetErrorString(e));                 \
            return 1;                                                      \
        }                                                                  \
    } while (0)

// x[i] uniform in [-scale / 2, scale / 2), a hash of i and seed.
__global__ void probe_fill(__nv_bfloat16* x, long long n, unsigned seed, float scale) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        x[i] = __float2bfloat16(((h & 0xffffff) / 16777216.f - 0.5f) * scale);
    }
}

__global__ void probe_count_diff(const uint16_t* a, const uint16_t* b, long long n, unsigned long long* c) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        if (a[i] != b[i]) atomicAdd(c, 1ull);
}

// Times variants of one shape: each runs 10 times, then `reps` times between two events; prints its time, the
// rate of `bytes` moved a run, and how many of the n 2-byte elements at `out` differ from `ref`.
struct ProbeTimer {
    long long rows, cols, n, bytes;
    int reps, sms, width;
    const void* ref;
    unsigned long long* diff;  // one counter on the device

    template <class Launch>
    void time(const char* name, const void* out, Launch launch) const {
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        for (int i = 0; i < 10; ++i) launch();
        cudaEventRecord(e0);
        for (int i = 0; i < reps; ++i) launch();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        cudaError_t err = cudaGetLastError();
        cudaMemset(diff, 0, 8);
        probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)out, (const uint16_t*)ref, n, diff);
        unsigned long long d = 0;
        cudaMemcpy(&d, diff, 8, cudaMemcpyDeviceToHost);
        printf("%lldx%lld %-*s %8.2f us  %7.1f GB/s  differ from the product's %llu %s\n", rows, cols, width, name,
               1000.0 * ms / reps, bytes / (ms / reps * 1e-3) / 1e9, d,
               err == cudaSuccess ? "" : cudaGetErrorString(err));
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
};

// LayerKernels.biasActivationRowsPerPart for bf16 (since 9612a01): the longest parts, up to 512 rows, whose (part,
// tile of 64 16-byte groups) items fill whole waves of blocksPerSm x sms resident blocks, the least number of waves;
// never shorter than LayerKernels.rowsPerPart (32 rows, or rows / 256 rounded up).
inline long long probe_bias_act_rows_per_part(long long rows, long long cols, int blocksPerSm, int sms) {
    const long long tiles = (cols / 8 + 63) / 64;
    const long long resident = (long long)blocksPerSm * sms;
    const long long wanted = (rows + 511) / 512;
    long long waves = (wanted * tiles + resident - 1) / resident;
    if ((tiles + resident - 1) / resident > waves) waves = (tiles + resident - 1) / resident;
    const long long parts = waves * resident / tiles;
    const long long rpp = (rows + parts - 1) / parts;
    const long long least = (rows + 255) / 256 > 32 ? (rows + 255) / 256 : 32;
    return rpp > least ? rpp : least;
}
