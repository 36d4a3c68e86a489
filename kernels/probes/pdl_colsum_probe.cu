// Standalone probe (not part of the build), session 33: the fused bias + activation backwards' column sums
// (ubuf_col_sums_f32_to_f32 after ubuf_bias_{gelu,swiglu}_bwd_partial_bf16) launched as a programmatic dependent
// launch (Hopper: cudaLaunchKernelEx with programmaticStreamSerialization; the sums wait with griddepcontrol.wait
// before reading the parts), so their launch overlaps the partial kernel's last wave. The separate sums cost
// 3.4-6.8 us of the GELU backward (call 9); summing inside the partial kernel was slower (d0de407, call 10). Timed as
// CUDA graph replays (as bench kernels times them): plain stream order; PDL with the primary triggering at exit;
// PDL with the primary triggering its dependents as it starts. dx and the bias gradient compared bit for bit with
// plain order's. No NVLink, no multicast: one GPU. Run in session 33's call 11: PDL within 0.5% of plain order at
// every shape (GELU 8192x3584 66.5-66.8 against 66.8 us); nothing taken. The triggering kernels take the product's
// rows ahead and blocks an SM (SwiGLU's four rows at two blocks then; one row at four since session 34).
// Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda pdl_colsum_probe.cu -o pdl && ./pdl
#include <cstring>
#include <vector>

#include "../src/main/cuda/ubuf_activation.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// The product's column sums, waiting for the primary grid's memory first.
__global__ void __launch_bounds__(512) sums_after(long long parts, long long cols, const float* part, long long ld,
                                                  float* dst) {
    pdl_wait();
    ubuf::col_sums_f32<float>(parts, cols, part, ld, dst, 0);
}

// Blocks an SM of the product's fused backward of an op.
template <class Op>
constexpr int product_blocks = Op::H == 1 ? ubuf::ACT_GELU_BWD_BLOCKS_PER_SM : ubuf::ACT_SWIGLU_BWD_BLOCKS_PER_SM;

// The product's fused backwards, letting their dependents launch as they start.
template <class Op, int AHEAD>
__global__ void __launch_bounds__(256, product_blocks<Op>)
    bwd_trigger(long long rows, long long cols, const bf* dy, const bf* x, const bf* bias, bf* dx,
                long long rowsPerPart, float* part, long long ldX) {
    pdl_trigger();
    ubuf::bias_act_bwd_partial_any<bf, Op, AHEAD>(rows, cols, dy, cols, x, ldX, bias, dx, ldX, rowsPerPart, part,
                                                  ldX, Op());
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int maxBlocks = sms * 8;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int halves : {1, 2})
    for (long long f : {3584LL, 7168LL, 14336LL}) {
        const long long rows = 8192, w = halves * f;
        bf *dy, *x, *bias, *dx, *refDx;
        float *part, *db, *refDb;
        unsigned long long* diff;
        CK(cudaMalloc(&dy, rows * f * 2));
        CK(cudaMalloc(&x, rows * w * 2));
        CK(cudaMalloc(&dx, rows * w * 2));
        CK(cudaMalloc(&refDx, rows * w * 2));
        CK(cudaMalloc(&bias, w * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * w * 4));
        CK(cudaMalloc(&db, w * 4));
        CK(cudaMalloc(&refDb, w * 4));
        CK(cudaMalloc(&diff, 8));
        probe_fill<<<sms * 4, 256>>>(dy, rows * f, 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, rows * w, 1u, 4.f);
        probe_fill<<<sms, 256>>>(bias, w, 3u, 1.f);
        // The fills run on the legacy stream, which s (non-blocking) does not wait for: call 11 computed its
        // reference before they had finished at 7168 and 14336 columns (its dx and db counts there are the
        // reference's; the three variants agreed with each other).
        CK(cudaDeviceSynchronize());
        const int blocksPerSm = halves == 1 ? product_blocks<ubuf::GeluGradOp> : product_blocks<ubuf::SwigluGradOp>;
        const long long rpp = probe_bias_act_rows_per_part(rows, f, blocksPerSm, sms);
        const long long parts = (rows + rpp - 1) / rpp;
        const long long tiles = (f / 8 + 63) / 64;
        const int grid = (int)(parts * tiles < maxBlocks ? parts * tiles : maxBlocks);
        const int sumGrid = (int)((w + 31) / 32 < maxBlocks ? (w + 31) / 32 : maxBlocks);
        auto primary = [&](bf* out, bool trigger) {
            if (halves == 1) {
                if (trigger) {
                    bwd_trigger<ubuf::GeluGradOp, ubuf::ACT_GELU_BWD_AHEAD><<<grid, 256, 0, s>>>(
                        rows, f, dy, x, bias, out, rpp, part, w);
                } else {
                    ubuf_bias_gelu_bwd_partial_bf16<<<grid, 256, 0, s>>>(rows, f, dy, f, x, w, bias, out, w, rpp,
                                                                         part, w);
                }
            } else {
                if (trigger) {
                    bwd_trigger<ubuf::SwigluGradOp, ubuf::ACT_SWIGLU_BWD_AHEAD><<<grid, 256, 0, s>>>(
                        rows, f, dy, x, bias, out, rpp, part, w);
                } else {
                    ubuf_bias_swiglu_bwd_partial_bf16<<<grid, 256, 0, s>>>(rows, f, dy, f, x, w, bias, out, w, rpp,
                                                                           part, w);
                }
            }
        };
        auto dependent = [&](float* dst) {
            cudaLaunchConfig_t cfg{};
            cfg.gridDim = dim3(sumGrid);
            cfg.blockDim = dim3(512);
            cfg.stream = s;
            cudaLaunchAttribute attr{};
            attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr.val.programmaticStreamSerializationAllowed = 1;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            return cudaLaunchKernelEx(&cfg, sums_after, parts, w, (const float*)part, w, dst);
        };
        auto plain = [&](bf* out, float* dst) {
            primary(out, false);
            ubuf_col_sums_f32_to_f32<<<sumGrid, 512, 0, s>>>(parts, w, part, w, dst, 0);
        };
        auto pdlExit = [&](bf* out, float* dst) {
            primary(out, false);
            dependent(dst);
        };
        auto pdlStart = [&](bf* out, float* dst) {
            primary(out, true);
            dependent(dst);
        };
        plain(refDx, refDb);
        CK(cudaStreamSynchronize(s));
        const char* kind = halves == 1 ? "GELU" : "SwiGLU";
        struct V { const char* name; int which; };
        for (int pass = 0; pass < 2; ++pass) {
            for (V v : {V{"plain stream order", 0}, V{"PDL, primary triggers at exit", 1},
                        V{"PDL, primary triggers as it starts", 2}}) {
                CK(cudaMemset(dx, 0xff, rows * w * 2));
                CK(cudaMemset(db, 0xff, w * 4));
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                if (v.which == 0) plain(dx, db);
                else if (v.which == 1) pdlExit(dx, db);
                else pdlStart(dx, db);
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
                CK(cudaMemset(diff, 0, 8));
                probe_count_diff<<<sms * 4, 256>>>((const uint16_t*)dx, (const uint16_t*)refDx, rows * w, diff);
                unsigned long long d = 0;
                cudaMemcpy(&d, diff, 8, cudaMemcpyDeviceToHost);
                std::vector<float> a(w), b(w);
                cudaMemcpy(a.data(), db, w * 4, cudaMemcpyDeviceToHost);
                cudaMemcpy(b.data(), refDb, w * 4, cudaMemcpyDeviceToHost);
                long long dbDiffer = 0;
                for (long long c = 0; c < w; ++c) dbDiffer += memcmp(&a[c], &b[c], 4) != 0;
                printf("%-6s 8192x%-6lld %-36s %8.2f us (graph replay)  dx differ %llu  db differ %lld %s\n", kind, f,
                       v.name, 1000.0 * ms / 100, d, dbDiffer, err == cudaSuccess ? "" : cudaGetErrorString(err));
                cudaGraphExecDestroy(ge);
                cudaGraphDestroy(g);
                cudaEventDestroy(e0);
                cudaEventDestroy(e1);
            }
        }
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(refDx); cudaFree(bias); cudaFree(part); cudaFree(db);
        cudaFree(refDb); cudaFree(diff);
    }
    return 0;
}
