// Standalone probe (not part of the build), session 33: the fused bias + activation backwards' column sums
// (ubuf_col_sums_f32_to_f32 over the parts the backward wrote) at other block sizes than LayerKernels' 512 threads a
// tile of 32 columns. With the wave-filling parts there are few of them (56 at 8192 x 3584 for GELU), and the sums
// took 3.4-6.8 us of the GELU backward (call 9) though they read under 1 MB; a programmatic dependent launch did
// not shorten them (call 11). Timed as CUDA graph replays: the partial kernel alone, then with the sums at 512, 256,
// 128, 64 and 32 threads a block (the parts split among the warps, then the warps' sums in order: other bits).
// Run in session 33's call 12: 512 threads the fastest at every GELU shape, within noise at the SwiGLU ones.
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda colsum_block_probe.cu -o colsumblk && ./colsumblk
#include <string>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int maxBlocks = sms * 8;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int halves : {1, 2})
    for (long long f : {3584LL, 7168LL, 14336LL}) {
        const long long rows = 8192, w = halves * f;
        bf *dy, *x, *bias, *dx;
        float *part, *db;
        CK(cudaMalloc(&dy, rows * f * 2));
        CK(cudaMalloc(&x, rows * w * 2));
        CK(cudaMalloc(&dx, rows * w * 2));
        CK(cudaMalloc(&bias, w * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * w * 4));
        CK(cudaMalloc(&db, w * 4));
        probe_fill<<<sms * 4, 256>>>(dy, rows * f, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, rows * w, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, w, 3u, 1.f);
        CK(cudaDeviceSynchronize());
        const int blocksPerSm = halves == 1 ? 3 : 2;
        const long long rpp = probe_bias_act_rows_per_part(rows, f, blocksPerSm, sms);
        const long long parts = (rows + rpp - 1) / rpp;
        const long long tiles = (f / 8 + 63) / 64;
        const int grid = (int)(parts * tiles < maxBlocks ? parts * tiles : maxBlocks);
        const int sumGrid = (int)((w + 31) / 32 < maxBlocks ? (w + 31) / 32 : maxBlocks);
        auto partial = [&] {
            if (halves == 1) {
                ubuf_bias_gelu_bwd_partial_bf16<<<grid, 256, 0, s>>>(rows, f, dy, f, x, w, bias, dx, w, rpp, part, w);
            } else {
                ubuf_bias_swiglu_bwd_partial_bf16<<<grid, 256, 0, s>>>(rows, f, dy, f, x, w, bias, dx, w, rpp, part,
                                                                       w);
            }
        };
        const char* kind = halves == 1 ? "GELU" : "SwiGLU";
        for (int pass = 0; pass < 2; ++pass) {
            for (int block : {0, 512, 256, 128, 64, 32}) {
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                partial();
                if (block > 0) ubuf_col_sums_f32_to_f32<<<sumGrid, block, 0, s>>>(parts, w, part, w, db, 0);
                CK(cudaStreamEndCapture(s, &g));
                CK(cudaGraphInstantiate(&ge, g, 0));
                for (int i = 0; i < 10; ++i) cudaGraphLaunch(ge, s);
                cudaEvent_t e0, e1;
                cudaEventCreate(&e0);
                cudaEventCreate(&e1);
                cudaEventRecord(e0, s);
                for (int i = 0; i < 100; ++i) cudaGraphLaunch(ge, s);
                cudaEventRecord(e1, s);
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                cudaError_t err = cudaGetLastError();
                printf("%-6s 8192x%-6lld %lld parts  %-28s %8.2f us (graph replay) %s\n", kind, f, parts,
                       block == 0 ? "partial kernel alone" : (std::string("with sums, ") + std::to_string(block)
                                                                + " threads").c_str(),
                       1000.0 * ms / 100, err == cudaSuccess ? "" : cudaGetErrorString(err));
                cudaGraphExecDestroy(ge);
                cudaGraphDestroy(g);
                cudaEventDestroy(e0);
                cudaEventDestroy(e1);
            }
        }
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(bias); cudaFree(part); cudaFree(db);
    }
    return 0;
}
