// LayerNorm forward and backward, one block per row (grid-stride over rows), fp32 statistics. Where a row fits in
// the block's registers (LN_FWD_GROUPS / LN_BWD_GROUPS 16-byte column groups per thread) it is read from memory once;
// longer rows take the looped path, which reads it again from the caches. The backward's dgamma/dbeta are column
// sums over rows: per-part partial sums in fp32, written by the fused backward (ubuf_layernorm_bwd_<t>, a block per
// part of rows) or, for rows too long for it, by ubuf_layernorm_bwd_params_partial_<t>; then
// ubuf_col_sums_f32_to_<d> adds the parts in a fixed order, so both are deterministic.
#include "ubuf_layer_common.cuh"

namespace ubuf {

// y = (x - mean) * rstd * g + beta, g = gamma (+ 1 with zero-centred gamma); mean and variance (biased, over the
// row) in fp32, two passes over the row; rstd = 1 / sqrt(var + eps). mean/rstd (fp32, one per row) may be null.
template <class T>
__device__ __forceinline__ void layernorm_fwd_looped(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                                     const T* beta, float eps, int zeroCentered, T* y, i64 ldY,
                                                     float* mean, float* rstd, float* scratch) {
    using G = ColGroups<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(y, ldY) && aligned16(gamma)
                     && aligned16(beta);
    const i64 groups = G::count(cols);
    const float n = (float)cols;
    const float one = zeroCentered ? 1.f : 0.f;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * ldX;
        float s = 0.f;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float v[N];
            G::load(xr, g, valid, vec, v);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                if (i < valid) s += v[i];
            }
        }
        const float mu = block_sum(s, scratch) / n;
        float q = 0.f;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float v[N];
            G::load(xr, g, valid, vec, v);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                if (i < valid) {
                    const float d = v[i] - mu;
                    q += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(block_sum(q, scratch) / n + eps);
        T* yr = y + row * ldY;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float v[N], gm[N], b[N];
            G::load(xr, g, valid, vec, v);
            G::load(gamma, g, valid, vec, gm);
            G::load(beta, g, valid, vec, b);
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + one) + b[i];
            G::store(yr, g, valid, vec, v);
        }
        if (threadIdx.x == 0) {
            if (mean != nullptr) mean[row] = mu;
            if (rstd != nullptr) rstd[row] = rs;
        }
    }
}

// Column groups per thread that the register paths hold: a row of up to LN_FWD_GROUPS * blockDim groups (16384
// bf16 / 8192 fp32 columns at 512 threads) is read once in the forward; the backward, which also holds dy and the
// per-column dgamma/dbeta sums, holds LN_BWD_GROUPS. LayerKernels sizes its blocks from these.
constexpr int LN_FWD_GROUPS = 4;
constexpr int LN_BWD_GROUPS = 2;

// As layernorm_fwd_looped, with the same sums in the same order (each thread's groups in increasing order, then
// block_sum), so both give bit-identical results; the row is loaded once into registers as raw 16-byte words.
// The two-pass variance is taken from the registers, so it costs no memory traffic.
template <class T>
__device__ __forceinline__ void layernorm_fwd(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                              const T* beta, float eps, int zeroCentered, T* y, i64 ldY,
                                              float* mean, float* rstd) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float scratch[MAX_WARPS];
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int K = LN_FWD_GROUPS;
    const i64 groups = G::count(cols);
    if (groups > (i64)K * blockDim.x) {
        layernorm_fwd_looped<T>(rows, cols, x, ldX, gamma, beta, eps, zeroCentered, y, ldY, mean, rstd, scratch);
        return;
    }
    const bool vec = cols % N == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(y, ldY) && aligned16(gamma)
                     && aligned16(beta);
    const float n = (float)cols;
    const float one = zeroCentered ? 1.f : 0.f;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * ldX;
        uint4 raw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) raw[k] = R::load(xr, g, G::valid(g, cols), vec);
        }
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                const int valid = G::valid(g, cols);
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    if (i < valid) s += v[i];
                }
            }
        }
        const float mu = block_sum(s, scratch) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                const int valid = G::valid(g, cols);
                float v[N];
                R::unpack(raw[k], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    if (i < valid) {
                        const float d = v[i] - mu;
                        q += d * d;
                    }
                }
            }
        }
        const float rs = 1.f / sqrtf(block_sum(q, scratch) / n + eps);
        T* yr = y + row * ldY;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                const int valid = G::valid(g, cols);
                float v[N], gm[N], b[N];
                R::unpack(raw[k], v);
                G::load(gamma, g, valid, vec, gm);
                G::load(beta, g, valid, vec, b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = (v[i] - mu) * rs * (gm[i] + one) + b[i];
                G::store(yr, g, valid, vec, v);
            }
        }
        if (threadIdx.x == 0) {
            if (mean != nullptr) mean[row] = mu;
            if (rstd != nullptr) rstd[row] = rs;
        }
    }
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), with xhat = (x - mean) * rstd and
// dxhat = dy * g (g = gamma, + 1 zero-centred), means over the row. dx may be dy or x exactly.
template <class T>
__device__ __forceinline__ void layernorm_bwd_dx(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                                 const float* mean, const float* rstd, const T* gamma,
                                                 int zeroCentered, T* dx, i64 ldDx) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float scratchA[MAX_WARPS];
    __shared__ float scratchB[MAX_WARPS];
    using G = ColGroups<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(dy, ldDy) && rows_aligned16<T>(x, ldX)
                     && rows_aligned16<T>(dx, ldDx) && aligned16(gamma);
    const i64 groups = G::count(cols);
    const float n = (float)cols;
    const float one = zeroCentered ? 1.f : 0.f;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* dyr = dy + row * ldDy;
        const T* xr = x + row * ldX;
        const float mu = mean[row];
        const float rs = rstd[row];
        float s1 = 0.f, s2 = 0.f;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float d[N], v[N], gm[N];
            G::load(dyr, g, valid, vec, d);
            G::load(xr, g, valid, vec, v);
            G::load(gamma, g, valid, vec, gm);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                if (i < valid) {
                    const float xhat = (v[i] - mu) * rs;
                    const float dxhat = d[i] * (gm[i] + one);
                    s1 += dxhat;
                    s2 += dxhat * xhat;
                }
            }
        }
        block_sum2(s1, s2, scratchA, scratchB);
        const float m1 = s1 / n;
        const float m2 = s2 / n;
        T* dxr = dx + row * ldDx;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float d[N], v[N], gm[N];
            G::load(dyr, g, valid, vec, d);
            G::load(xr, g, valid, vec, v);
            G::load(gamma, g, valid, vec, gm);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float xhat = (v[i] - mu) * rs;
                const float dxhat = d[i] * (gm[i] + one);
                d[i] = rs * (dxhat - m1 - xhat * m2);
            }
            G::store(dxr, g, valid, vec, d);
        }
    }
}

// Partial dgamma / dbeta: for part p (rows [p * rowsPerPart, min(rows, (p + 1) * rowsPerPart))) and column c,
// dgammaPart[p][c] = sum over the part's rows, in row order, of dy * xhat, and dbetaPart[p][c] of dy. A thread
// owns one (part, column); blocks take (part, tile of blockDim columns) items grid-stride, so the sums do not
// depend on the grid. parts = ceil(rows / rowsPerPart) rows of each partial matrix are written.
template <class T>
__device__ __forceinline__ void layernorm_bwd_params_partial(i64 rows, i64 cols, const T* dy, i64 ldDy,
                                                             const T* x, i64 ldX, const float* mean,
                                                             const float* rstd, i64 rowsPerPart, float* dgammaPart,
                                                             float* dbetaPart, i64 ldPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0) return;
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const i64 tiles = (cols + blockDim.x - 1) / blockDim.x;
    for (i64 item = blockIdx.x; item < parts * tiles; item += gridDim.x) {
        const i64 part = item / tiles;
        const i64 c = (item - part * tiles) * blockDim.x + threadIdx.x;
        if (c >= cols) continue;
        const i64 r0 = part * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        float dg = 0.f, db = 0.f;
        for (i64 r = r0; r < r1; ++r) {
            const float d = Elem<T>::load(dy[r * ldDy + c]);
            const float xhat = (Elem<T>::load(x[r * ldX + c]) - mean[r]) * rstd[r];
            dg += d * xhat;
            db += d;
        }
        dgammaPart[part * ldPart + c] = dg;
        dbetaPart[part * ldPart + c] = db;
    }
}

// The whole backward in one pass over dy and x, for rows of at most LN_BWD_GROUPS * blockDim column groups: a block
// takes parts of rowsPerPart consecutive rows (grid-stride over parts) and, row by row in order, computes dx as
// layernorm_bwd_dx does while each thread adds dy * xhat and dy into per-column fp32 sums it keeps in registers;
// at the end of the part they are that part's row of dgammaPart / dbetaPart, the same sums in the same order as
// layernorm_bwd_params_partial. The next row's dy and x are loaded before this row's reductions, so the loads
// overlap the barriers. dx may be dy or x exactly: a thread writes only the elements it has already read.
// Does nothing for longer rows (LayerKernels launches the two-kernel path for them).
template <class T>
__device__ __forceinline__ void layernorm_bwd(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                              const float* mean, const float* rstd, const T* gamma,
                                              int zeroCentered, T* dx, i64 ldDx, i64 rowsPerPart,
                                              float* dgammaPart, float* dbetaPart, i64 ldPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0 || (blockDim.x & 31) != 0) return;
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int K = LN_BWD_GROUPS;
    const i64 groups = G::count(cols);
    if (groups > (i64)K * blockDim.x) return;
    __shared__ float scratchA[MAX_WARPS];
    __shared__ float scratchB[MAX_WARPS];
    const bool vec = cols % N == 0 && rows_aligned16<T>(dy, ldDy) && rows_aligned16<T>(x, ldX)
                     && rows_aligned16<T>(dx, ldDx) && aligned16(gamma);
    const float n = (float)cols;
    const float one = zeroCentered ? 1.f : 0.f;
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const i64 g = threadIdx.x + (i64)k * blockDim.x;
        if (g < groups) gammaRaw[k] = R::load(gamma, g, G::valid(g, cols), vec);
    }
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    for (i64 part = blockIdx.x; part < parts; part += gridDim.x) {
        const i64 r0 = part * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        float dg[K][N], db[K][N];
        uint4 dyRaw[K], xRaw[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
#pragma unroll
            for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            if (g < groups) {
                const int valid = G::valid(g, cols);
                dyRaw[k] = R::load(dy + r0 * ldDy, g, valid, vec);
                xRaw[k] = R::load(x + r0 * ldX, g, valid, vec);
            }
        }
        for (i64 r = r0; r < r1; ++r) {
            uint4 dyNext[K], xNext[K];
            if (r + 1 < r1) {
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    const i64 g = threadIdx.x + (i64)k * blockDim.x;
                    if (g < groups) {
                        const int valid = G::valid(g, cols);
                        dyNext[k] = R::load(dy + (r + 1) * ldDy, g, valid, vec);
                        xNext[k] = R::load(x + (r + 1) * ldX, g, valid, vec);
                    }
                }
            }
            const float mu = mean[r];
            const float rs = rstd[r];
            float s1 = 0.f, s2 = 0.f;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    const int valid = G::valid(g, cols);
                    float d[N], v[N], gm[N];
                    R::unpack(dyRaw[k], d);
                    R::unpack(xRaw[k], v);
                    R::unpack(gammaRaw[k], gm);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        if (i < valid) {
                            const float xhat = (v[i] - mu) * rs;
                            const float dxhat = d[i] * (gm[i] + one);
                            s1 += dxhat;
                            s2 += dxhat * xhat;
                            dg[k][i] += d[i] * xhat;
                            db[k][i] += d[i];
                        }
                    }
                }
            }
            block_sum2(s1, s2, scratchA, scratchB);
            const float m1 = s1 / n;
            const float m2 = s2 / n;
            T* dxr = dx + r * ldDx;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    const int valid = G::valid(g, cols);
                    float d[N], v[N], gm[N];
                    R::unpack(dyRaw[k], d);
                    R::unpack(xRaw[k], v);
                    R::unpack(gammaRaw[k], gm);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        const float xhat = (v[i] - mu) * rs;
                        const float dxhat = d[i] * (gm[i] + one);
                        d[i] = rs * (dxhat - m1 - xhat * m2);
                    }
                    G::store(dxr, g, valid, vec, d);
                }
            }
            if (r + 1 < r1) {
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    dyRaw[k] = dyNext[k];
                    xRaw[k] = xNext[k];
                }
            }
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const i64 g = threadIdx.x + (i64)k * blockDim.x;
            if (g < groups) {
                const int valid = G::valid(g, cols);
                float* gp = dgammaPart + part * ldPart + g * N;
                float* bp = dbetaPart + part * ldPart + g * N;
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    if (i < valid) {
                        gp[i] = dg[k][i];
                        bp[i] = db[k][i];
                    }
                }
            }
        }
    }
}

}  // namespace ubuf

#define UBUF_LAYERNORM_KERNELS(SUFFIX, T)                                                                        \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* gamma,       \
                                const T* beta, float eps, int zeroCenteredGamma, T* y, long long ldY,            \
                                float* mean, float* rstd) {                                                      \
        ubuf::layernorm_fwd<T>(rows, cols, x, ldX, gamma, beta, eps, zeroCenteredGamma, y, ldY, mean, rstd);     \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_bwd_dx_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,      \
                                   long long ldX, const float* mean, const float* rstd, const T* gamma,          \
                                   int zeroCenteredGamma, T* dx, long long ldDx) {                               \
        ubuf::layernorm_bwd_dx<T>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, zeroCenteredGamma, dx, ldDx); \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_bwd_params_partial_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy,      \
                                               const T* x, long long ldX, const float* mean, const float* rstd,  \
                                               long long rowsPerPart, float* dgammaPart, float* dbetaPart,       \
                                               long long ldPart) {                                               \
        ubuf::layernorm_bwd_params_partial<T>(rows, cols, dy, ldDy, x, ldX, mean, rstd, rowsPerPart, dgammaPart, \
                                              dbetaPart, ldPart);                                                \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,         \
                                long long ldX, const float* mean, const float* rstd, const T* gamma,             \
                                int zeroCenteredGamma, T* dx, long long ldDx, long long rowsPerPart,             \
                                float* dgammaPart, float* dbetaPart, long long ldPart) {                         \
        ubuf::layernorm_bwd<T>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, zeroCenteredGamma, dx, ldDx,     \
                               rowsPerPart, dgammaPart, dbetaPart, ldPart);                                      \
    }

UBUF_LAYERNORM_KERNELS(f32, float)
UBUF_LAYERNORM_KERNELS(f16, __half)
UBUF_LAYERNORM_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_LAYERNORM_KERNELS
