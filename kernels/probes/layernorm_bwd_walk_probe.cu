// Standalone probe (not part of the build): where the bf16 LayerNorm backward's time goes at the layer's per-rank
// shapes (8B and 70B dims, tp 2 and 4), the op as LayerKernels launches it (the staged kernel, then one column-sum
// kernel for dgamma and one for dbeta) against:
//  - the staged walk rewritten without a division a row (the product finds a row's part with 64-bit divisions),
//    the row's mean and rstd loaded before the wait for its data, and other register caps (launch bounds): the
//    product's kernel takes 128 registers, so an SM holds 512 of its threads;
//  - one column group a thread (half the registers, twice the threads);
//  - the two-kernel path (partial sums, then dx: a re-read of dy and x, few registers);
//  - dgamma's and dbeta's column sums in one launch.
// Every walk computes dx and the partial sums; with two groups a thread in the product's order (dx bit for bit),
// with one the row sums add in another order (dx may differ in the last bit). Since the product took the walk
// (86e74fe, 10e396a; "product staged kernel" below is it on the old parts, "walk K2 S3" on its parts), the later
// variants try the walk's row sums behind one barrier and the column sums with more loads in flight (twenty-third
// session, call 6), and, one at a time and together, the instruction cuts the FLAGS name (twenty-fourth session,
// call 1: each 0-3%, x-hat and dx as FMAs without the "+ 0" and with one barrier a row 4-6%; the rest no gain).
// Outputs: bench/results/2026-11-28-session23/call3-*, call6-*, bench/results/2026-11-28-session24/call1-*. Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda layernorm_bwd_walk_probe.cu -o walk && ./walk
#include "../src/main/cuda/ubuf_layernorm.cu"
#include "../src/main/cuda/ubuf_colsum.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;
using ubuf::i64;

// block_sum2 with one barrier: the warps' sums go to one of two scratch buffers by row parity, so the next row's
// writes cannot race this row's reads (a warp writes the same buffer again only after the next row's barrier, which
// every warp reaches after its reads here). Same sums, same order, so the same bits.
__device__ __forceinline__ void block_sum2_one_barrier(float& a, float& b, float (*scratch)[2][ubuf::MAX_WARPS],
                                                       int parity) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        scratch[parity][0][threadIdx.x >> 5] = a;
        scratch[parity][1][threadIdx.x >> 5] = b;
    }
    __syncthreads();
    const int warps = (int)(blockDim.x >> 5);
    float ta = 0.f, tb = 0.f;
    for (int w = 0; w < warps; ++w) {
        ta += scratch[parity][0][w];
        tb += scratch[parity][1][w];
    }
    a = ta;
    b = tb;
}

// FLAGS of the walk, each one change measured alone (the twenty-third session's 104e824 made two at once, gamma as
// floats and the row re-read from its slot, and ran 1.37-1.48x slower): GAMMA_FLOATS keeps gamma (+ 1) as floats
// for the whole kernel instead of unpacking its words twice a row; REREAD reads a row's words from its slot again
// for dx instead of holding them across the barrier; FMA_XHAT computes x-hat as fmaf(x, rstd, -mean * rstd), one
// instruction instead of two (other bits: dx may differ in the last place).
// DX_FMA writes dx = rstd * dxhat + (-rstd * m2) * xhat + (-rstd * m1) as two FMAs (other bits); NO_ONE drops
// the zero-centred gamma's "+ one" (a run-time 0 the compiler must add); SUM_FAST reads the warps' sums in the
// block sums as float4 words (same order, same bits) instead of a run-time loop of scalar loads.
constexpr int GAMMA_FLOATS = 1, REREAD = 2, FMA_XHAT = 4, DX_FMA = 8, NO_ONE = 16, SUM_FAST = 32;

// block_sum2 with the warps' sums read four at a time (blockDim a multiple of 128), in the same order.
__device__ __forceinline__ void block_sum2_fast(float& a, float& b, float* scratchA, float* scratchB) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        scratchA[threadIdx.x >> 5] = a;
        scratchB[threadIdx.x >> 5] = b;
    }
    __syncthreads();
    const int quads = (int)(blockDim.x >> 7);
    float ta = 0.f, tb = 0.f;
    for (int q = 0; q < quads; ++q) {
        const float4 u = reinterpret_cast<const float4*>(scratchA)[q];
        const float4 v = reinterpret_cast<const float4*>(scratchB)[q];
        ta += u.x;
        ta += u.y;
        ta += u.z;
        ta += u.w;
        tb += v.x;
        tb += v.y;
        tb += v.z;
        tb += v.w;
    }
    __syncthreads();
    a = ta;
    b = tb;
}

template <int S, int K, int MAXT, int MINB, bool ONE_BARRIER = false, int FLAGS = 0>
__global__ void __launch_bounds__(MAXT, MINB) walk(i64 rows, i64 cols, const bf* dy, const bf* x, const float* mean,
                                                   const float* rstd, const bf* gamma, bf* dx, i64 rpp,
                                                   float* dgammaPart, float* dbetaPart, i64 ldPart) {
    using G = ubuf::ColGroups<bf>;
    constexpr int N = G::N;
    const int groups = (int)(cols / N);
    extern __shared__ uint4 stage[];
    __shared__ __align__(16) float scratchA[ubuf::MAX_WARPS];
    __shared__ __align__(16) float scratchB[ubuf::MAX_WARPS];
    __shared__ float scratch2[2][2][ubuf::MAX_WARPS];
    int parity = 0;
    const float n = (float)cols;
    const float one = rows < 0 ? 1.f : 0.f;  // as the product's zero-centred flag: 0 here, unknown to the compiler
    ubuf::PartRows ic, cc;  // the product's walk: the row being copied, the row being computed
    ic.start(rows, rpp);
    cc.start(rows, rpp);
    if (!cc.ok) return;
    int issueSlot = 0, slot = 0;
    auto issue = [&]() {
        if (ic.ok) {
            uint4* s = stage + issueSlot * 2 * groups;
            const uint4* dyr = reinterpret_cast<const uint4*>(dy + ic.row * cols);
            const uint4* xr = reinterpret_cast<const uint4*>(x + ic.row * cols);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = threadIdx.x + k * blockDim.x;
                if (g < groups) {
                    ubuf::cp_async16(ubuf::shared_addr(s + g), dyr + g);
                    ubuf::cp_async16(ubuf::shared_addr(s + groups + g), xr + g);
                }
            }
            ic.next(rows, rpp);
        }
        ubuf::cp_async_commit();
        issueSlot = issueSlot + 1 == S ? 0 : issueSlot + 1;
    };
    uint4 gammaRaw[K];
    float gp1[(FLAGS & GAMMA_FLOATS) ? K : 1][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = threadIdx.x + k * blockDim.x;
        gammaRaw[k] = g < groups ? reinterpret_cast<const uint4*>(gamma)[g] : make_uint4(0, 0, 0, 0);
        if (FLAGS & GAMMA_FLOATS) ubuf::RawGroup<bf>::unpack(gammaRaw[k], gp1[(FLAGS & GAMMA_FLOATS) ? k : 0]);
    }
#pragma unroll
    for (int i = 0; i < S - 1; ++i) issue();
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    while (cc.ok) {
        issue();
        const float mu = mean[cc.row];
        const float rs = rstd[cc.row];
        const float nmr = -mu * rs;
        ubuf::cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
        // One group's terms, as LnBwdGroup computes them (g = gamma: the probe's gamma is not zero-centred).
        auto terms = [&](const uint4& dyW, const uint4& xW, int k, float (&d)[N], float (&xhat)[N],
                         float (&dxhat)[N]) {
            float v[N], gm[N];
            ubuf::RawGroup<bf>::unpack(dyW, d);
            ubuf::RawGroup<bf>::unpack(xW, v);
            if (FLAGS & GAMMA_FLOATS) {
#pragma unroll
                for (int i = 0; i < N; ++i) gm[i] = gp1[(FLAGS & GAMMA_FLOATS) ? k : 0][i];
            } else {
                ubuf::RawGroup<bf>::unpack(gammaRaw[k], gm);
            }
#pragma unroll
            for (int i = 0; i < N; ++i) {
                xhat[i] = (FLAGS & FMA_XHAT) ? fmaf(v[i], rs, nmr) : (v[i] - mu) * rs;
                dxhat[i] = (FLAGS & NO_ONE) ? d[i] * gm[i] : d[i] * (gm[i] + one);
            }
        };
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = threadIdx.x + k * blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                float d[N], xhat[N], dxhat[N];
                terms(dyRaw[k], xRaw[k], k, d, xhat, dxhat);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    s1 += dxhat[i];
                    s2 += dxhat[i] * xhat[i];
                    dg[k][i] += d[i] * xhat[i];
                    db[k][i] += d[i];
                }
            }
        }
        if (ONE_BARRIER) {
            block_sum2_one_barrier(s1, s2, scratch2, parity);
            parity ^= 1;
        } else if (FLAGS & SUM_FAST) {
            block_sum2_fast(s1, s2, scratchA, scratchB);
        } else {
            ubuf::block_sum2(s1, s2, scratchA, scratchB);
        }
        const float m1 = s1 / n;
        const float m2 = s2 / n;
        const float c1 = -rs * m1, c2 = -rs * m2;
        bf* dxr = dx + cc.row * cols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = threadIdx.x + k * blockDim.x;
            if (g < groups) {
                float d[N], xhat[N], dxhat[N];
                if (FLAGS & REREAD) terms(s[g], s[groups + g], k, d, xhat, dxhat);
                else terms(dyRaw[k], xRaw[k], k, d, xhat, dxhat);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    d[i] = (FLAGS & DX_FMA) ? fmaf(rs, dxhat[i], fmaf(c2, xhat[i], c1))
                                            : rs * (dxhat[i] - m1 - xhat[i] * m2);
                }
                ubuf::store_vec<bf, N>(dxr + g * N, d);
            }
        }
        if (cc.row + 1 == cc.end) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = threadIdx.x + k * blockDim.x;
                if (g < groups) {
                    float4* gp = reinterpret_cast<float4*>(dgammaPart + cc.part * ldPart + g * N);
                    float4* bp = reinterpret_cast<float4*>(dbetaPart + cc.part * ldPart + g * N);
#pragma unroll
                    for (int q = 0; q < N / 4; ++q) {
                        gp[q] = make_float4(dg[k][4 * q], dg[k][4 * q + 1], dg[k][4 * q + 2], dg[k][4 * q + 3]);
                        bp[q] = make_float4(db[k][4 * q], db[k][4 * q + 1], db[k][4 * q + 2], db[k][4 * q + 3]);
                    }
                }
#pragma unroll
                for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            }
        }
        cc.next(rows, rpp);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    ubuf::cp_async_wait<0>();
}

// As the product's ubuf_col_sums2_f32_to_bf16 with sixteen parts' loads in flight per warp instead of eight (the same order of adds).
__device__ __forceinline__ void col_tile16(i64 tile, i64 parts, i64 cols, const float* part, i64 ldPart, bf* dst,
                                           float (*warpSums)[32]) {
    const int lane = (int)(threadIdx.x & 31);
    const int warp = (int)(threadIdx.x >> 5);
    const int warps = (int)(blockDim.x >> 5);
    const i64 c = tile * 32 + lane;
    float acc = 0.f;
    if (c < cols) {
#pragma unroll 16
        for (i64 p = warp; p < parts; p += warps) acc += part[p * ldPart + c];
    }
    warpSums[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && c < cols) {
        float total = warpSums[0][lane];
        for (int w = 1; w < warps; ++w) total += warpSums[w][lane];
        dst[c] = __float2bfloat16(total);
    }
    __syncthreads();
}

__global__ void __launch_bounds__(UBUF_MAX_THREADS) col_sums_both16(i64 parts, i64 cols, const float* partA,
                                                                    const float* partB, i64 ldPart, bf* dgamma,
                                                                    bf* dbeta) {
    __shared__ float warpSums[ubuf::MAX_WARPS][32];
    const i64 tiles = (cols + 31) / 32;
    for (i64 tile = blockIdx.x; tile < 2 * tiles; tile += gridDim.x) {
        if (tile < tiles) col_tile16(tile, parts, cols, partA, ldPart, dgamma, warpSums);
        else col_tile16(tile - tiles, parts, cols, partB, ldPart, dbeta, warpSums);
    }
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{2048, 4096}, {4096, 4096}, {2048, 8192}, {4096, 8192}};
    for (auto& sh : shapes) {
        const long long rows = sh[0], cols = sh[1], n = rows * cols, bytes = n * 2;
        const long long groups = cols / 8;
        // LayerKernels: rows per part, parts, the block holding 2 groups a thread, the resident grid.
        const long long rowsPerPart = rows / 256 > 8 ? rows / 256 : 8;
        const long long parts = (rows + rowsPerPart - 1) / rowsPerPart;
        const int block = (int)(((groups + 1) / 2 + 31) / 32 * 32);
        bf *x, *dy, *dx, *ref, *gamma, *beta, *y, *dgamma, *dbeta;
        float *mean, *rstd, *part;
        char *cpySrc, *cpyDst;
        unsigned long long* diff;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&dy, bytes));
        CK(cudaMalloc(&dx, bytes));
        CK(cudaMalloc(&ref, bytes));
        CK(cudaMalloc(&y, bytes));
        CK(cudaMalloc(&gamma, cols * 2));
        CK(cudaMalloc(&beta, cols * 2));
        CK(cudaMalloc(&dgamma, cols * 2));
        CK(cudaMalloc(&dbeta, cols * 2));
        CK(cudaMalloc(&mean, rows * 4));
        CK(cudaMalloc(&rstd, rows * 4));
        CK(cudaMalloc(&part, 2 * parts * cols * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, bytes * 3 / 2));
        CK(cudaMalloc(&cpyDst, bytes * 3 / 2));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 4.f);
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 0.02f);
        probe_fill<<<sms, 256>>>(gamma, cols, 3u, 4.f);
        probe_fill<<<sms, 256>>>(beta, cols, 5u, 4.f);
        const int fwdBlock = (int)(((groups + 3) / 4 + 31) / 32 * 32);
        ubuf_layernorm_fwd_bf16<<<(int)rows, fwdBlock>>>(rows, cols, x, cols, gamma, beta, 1e-5f, 0, y, cols, mean,
                                                        rstd);
        const int smem = (int)(3 * 2 * groups * 16);
        CK(cudaFuncSetAttribute(ubuf_layernorm_bwd_staged_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        const long long resident = (long long)sms * (512 / block);
        const int grid = (int)(parts < resident ? parts : resident);
        float* dgp = part;
        float* dbp = part + parts * cols;
        const int colGrid = (int)(cols / 32 < sms * 8 ? cols / 32 : sms * 8);
        const int colGrid2 = (int)(2 * cols / 32 < sms * 8 ? 2 * cols / 32 : sms * 8);
        // dgamma's and dbeta's sums of the first p parts in one launch, as LayerKernels finishes the backward (the
        // kernels write dbeta's parts at row `parts` whatever their own count, as into the product's workspace).
        auto colSums2 = [&](long long p) {
            ubuf_col_sums2_f32_to_bf16<<<colGrid2, 512>>>(p, cols, dgp, dbp, cols, dgamma, dbeta, 0);
        };
        auto staged = [&](bf* out) {
            ubuf_layernorm_bwd_staged_bf16<<<grid, block, smem>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0,
                                                                  out, cols, rowsPerPart, dgp, dbp, cols);
        };
        auto colSums = [&] {
            ubuf_col_sums_f32_to_bf16<<<colGrid, 512>>>(parts, cols, dgp, cols, dgamma, 0);
            ubuf_col_sums_f32_to_bf16<<<colGrid, 512>>>(parts, cols, dbp, cols, dbeta, 0);
        };
        staged(ref);
        CK(cudaDeviceSynchronize());
        // dy and x read, dx written: the bytes a copy of the same traffic moves (the partial rows are more).
        const ProbeTimer timer{rows, cols, n, 3 * bytes, 200, sms, 52, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, dx, launch); };
        time("memcpy d2d (same bytes)", [&] {
            cudaMemcpyAsync(cpyDst, cpySrc, bytes * 3 / 2, cudaMemcpyDeviceToDevice);
        });
        time("OP: product (staged + 2 col sums)", [&] { staged(dx); colSums(); });
        time("product staged kernel", [&] { staged(dx); });
        time("product 2 col sums", [&] { colSums(); });
        time("col sums, one launch", [&] {
            colSums2(parts);
        });
        const int pgrid = (int)(parts * ((cols + 255) / 256) < sms * 8 ? parts * ((cols + 255) / 256) : sms * 8);
        time("two kernels: partial sums + dx", [&] {
            ubuf_layernorm_bwd_params_partial_bf16<<<pgrid, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd,
                                                                   rowsPerPart, dgp, dbp, cols);
            ubuf_layernorm_bwd_dx_bf16<<<(int)rows, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0, dx,
                                                           cols);
        });
        time("  of which dx alone", [&] {
            ubuf_layernorm_bwd_dx_bf16<<<(int)rows, 256>>>(rows, cols, dy, cols, x, cols, mean, rstd, gamma, 0, dx,
                                                           cols);
        });
        auto variant = [&](const char* name, auto kernel, int s, int k, int maxt, long long rpp, bool op) {
            const int b = (int)(((groups + k - 1) / k + 31) / 32 * 32);
            if (b > maxt) return;
            const int sm = (int)(s * 2 * groups * 16);
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
            int perSm = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, b, sm);
            cudaFuncAttributes fa;
            cudaFuncGetAttributes(&fa, kernel);
            const long long pts = (rows + rpp - 1) / rpp;
            const long long res = (long long)sms * (perSm > 0 ? perSm : 1);
            const int g = (int)(pts < res ? pts : res);
            char label[128];
            snprintf(label, sizeof label, "%s%s (b %d, %d/SM, %d regs, rpp %lld)", op ? "OP: " : "", name, b, perSm,
                     fa.numRegs, rpp);
            time(label, [&] {
                kernel<<<g, b, sm>>>(rows, cols, dy, x, mean, rstd, gamma, dx, rpp, dgp, dbp, cols);
                if (op) colSums2(pts);
            });
        };
        // The product since 86e74fe is the walk below (K2 S3) on parts of at least rows / resident rows.
        const long long rppW = rowsPerPart > (rows + resident - 1) / resident ? rowsPerPart
                                                                             : (rows + resident - 1) / resident;
        variant("walk K2 S3", walk<3, 2, 512, 1>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 one barrier", walk<3, 2, 512, 1, true>, 3, 2, 512, rppW, false);
        variant("walk K2 S4 one barrier", walk<4, 2, 512, 1, true>, 4, 2, 512, rppW, false);
        variant("walk K2 S3", walk<3, 2, 512, 1>, 3, 2, 512, rppW, true);
        variant("walk K2 S3 one barrier", walk<3, 2, 512, 1, true>, 3, 2, 512, rppW, true);
        // One change at a time (FLAGS above), then the pairs.
        variant("walk K2 S3 gamma floats", walk<3, 2, 512, 1, false, GAMMA_FLOATS>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 reread", walk<3, 2, 512, 1, false, REREAD>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 fma xhat", walk<3, 2, 512, 1, false, FMA_XHAT>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 gamma floats + reread (104e824)", walk<3, 2, 512, 1, false, GAMMA_FLOATS | REREAD>, 3,
                2, 512, rppW, false);
        variant("walk K2 S3 gamma floats + fma xhat", walk<3, 2, 512, 1, false, GAMMA_FLOATS | FMA_XHAT>, 3, 2,
                512, rppW, false);
        variant("walk K2 S3 one barrier, gamma floats, fma xhat",
                walk<3, 2, 512, 1, true, GAMMA_FLOATS | FMA_XHAT>, 3, 2, 512, rppW, false);
        // The cuts written in the twenty-fourth session: alone, then together (LEAN), with the others on top.
        constexpr int LEAN = FMA_XHAT | DX_FMA | NO_ONE | SUM_FAST;
        variant("walk K2 S3 dx fma", walk<3, 2, 512, 1, false, DX_FMA>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 no one", walk<3, 2, 512, 1, false, NO_ONE>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 sum fast", walk<3, 2, 512, 1, false, SUM_FAST>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 lean", walk<3, 2, 512, 1, false, LEAN>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 lean + gamma floats", walk<3, 2, 512, 1, false, LEAN | GAMMA_FLOATS>, 3, 2, 512, rppW,
                false);
        variant("walk K2 S3 lean + reread", walk<3, 2, 512, 1, false, LEAN | REREAD>, 3, 2, 512, rppW, false);
        variant("walk K2 S3 lean - sum fast, one barrier", walk<3, 2, 512, 1, true, LEAN & ~SUM_FAST>, 3, 2, 512,
                rppW, false);
        variant("walk K2 S4 lean", walk<4, 2, 512, 1, false, LEAN>, 4, 2, 512, rppW, false);
        variant("walk K1 S3 lean bounds(512,2)", walk<3, 1, 512, 2, false, LEAN>, 3, 1, 512, rppW, false);
        variant("walk K2 S3 lean bounds(256,3)", walk<3, 2, 256, 3, false, LEAN>, 3, 2, 256, rppW, false);
        variant("OP: walk K2 S3 lean", walk<3, 2, 512, 1, false, LEAN>, 3, 2, 512, rppW, true);
        {
            const long long pW = (rows + rppW - 1) / rppW;
            time("col sums (parts of the walk), one launch", [&] {
                colSums2(pW);
            });
            time("col sums (parts of the walk), unroll 16", [&] {
                col_sums_both16<<<colGrid2, 512>>>(pW, cols, dgp, dbp, cols, dgamma, dbeta);
            });
        }
        cudaFree(x);
        cudaFree(dy);
        cudaFree(dx);
        cudaFree(ref);
        cudaFree(y);
        cudaFree(gamma);
        cudaFree(beta);
        cudaFree(dgamma);
        cudaFree(dbeta);
        cudaFree(mean);
        cudaFree(rstd);
        cudaFree(part);
        cudaFree(diff);
        cudaFree(cpySrc);
        cudaFree(cpyDst);
    }
    return 0;
}
