// LayerNorm forward and backward, one block per row (grid-stride over rows), fp32 statistics. Where a row fits in
// the block's registers (LN_FWD_GROUPS / LN_BWD_GROUPS 16-byte column groups per thread) it is read from memory once;
// longer rows take the looped path, which reads it again from the caches. The backward's dgamma/dbeta are column
// sums over rows: per-part partial sums in fp32, written by the fused backward (ubuf_layernorm_bwd_staged_<t>, its
// rows staged in shared memory, or ubuf_layernorm_bwd_<t> where the rows are not 16-byte aligned) or, for rows too
// long for it, by ubuf_layernorm_bwd_params_partial_<t>; then
// ubuf_col_sums_f32_to_<d> adds the parts in a fixed order, so both are deterministic.
#include "ubuf_layer_common.cuh"

namespace ubuf {

// x-hat as the forward and the backwards compute it, one FMA: x * rstd + nmr, nmr = -mean * rstd.
__device__ __forceinline__ float ln_xhat(float x, float rs, float nmr) { return fmaf(x, rs, nmr); }

// A forward output, x-hat * g + beta as one more FMA; g = gamma, or gamma + 1 with zero-centred gamma (ZC, a template
// parameter, so the usual gamma costs no "+ 0"). Two instructions an element where (x - mean) * rstd * g + beta took
// four: `bench kernels` 0.98x the word kernel's time at 2048 x 4096, unchanged at the layer's other shapes (H200;
// 0.94-0.98x back to back in kernels/probes/layernorm_fwd_lean_probe.cu).
template <bool ZC>
__device__ __forceinline__ float ln_out(float x, float rs, float nmr, float gamma, float beta) {
    return fmaf(ln_xhat(x, rs, nmr), ZC ? gamma + 1.f : gamma, beta);
}

// y = x-hat * g + beta (ln_out), x-hat = (x - mean) * rstd; mean and variance (biased, over the row) in fp32, two
// passes over the row; rstd = 1 / sqrt(var + eps). mean/rstd (fp32, one per row) may be null.
template <class T, bool ZC>
__device__ __forceinline__ void layernorm_fwd_looped(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                                     const T* beta, float eps, T* y, i64 ldY, float* mean,
                                                     float* rstd, float* scratch) {
    using G = ColGroups<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(y, ldY) && aligned16(gamma)
                     && aligned16(beta);
    const i64 groups = G::count(cols);
    const float n = (float)cols;
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
        const float nmr = -mu * rs;
        T* yr = y + row * ldY;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float v[N], gm[N], b[N];
            G::load(xr, g, valid, vec, v);
            G::load(gamma, g, valid, vec, gm);
            G::load(beta, g, valid, vec, b);
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = ln_out<ZC>(v[i], rs, nmr, gm[i], b[i]);
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
template <class T, bool ZC>
__device__ __forceinline__ void layernorm_fwd(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                              const T* beta, float eps, T* y, i64 ldY, float* mean, float* rstd) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float scratch[MAX_WARPS];
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int K = LN_FWD_GROUPS;
    const i64 groups = G::count(cols);
    if (groups > (i64)K * blockDim.x) {
        layernorm_fwd_looped<T, ZC>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd, scratch);
        return;
    }
    const bool vec = cols % N == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(y, ldY) && aligned16(gamma)
                     && aligned16(beta);
    const float n = (float)cols;
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
        const float nmr = -mu * rs;
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
                for (int i = 0; i < N; ++i) v[i] = ln_out<ZC>(v[i], rs, nmr, gm[i], b[i]);
                G::store(yr, g, valid, vec, v);
            }
        }
        if (threadIdx.x == 0) {
            if (mean != nullptr) mean[row] = mu;
            if (rstd != nullptr) rstd[row] = rs;
        }
    }
}

// Tells the compiler that the words may have changed, at no cost: without the bound checks' branches it otherwise
// keeps a row unpacked to floats from one pass to the next (twice the registers: the forward spilled at 64).
template <int J>
__device__ __forceinline__ void opaque_words(uint4 (&w)[J]) {
#ifdef __CUDA_ARCH__
#pragma unroll
    for (int j = 0; j < J; ++j) asm volatile("" : "+r"(w[j].x), "+r"(w[j].y), "+r"(w[j].z), "+r"(w[j].w));
#endif
}

// layernorm_fwd's register path for whole 16-byte words only (cols a multiple of the group, x and y rows and gamma
// and beta 16-byte aligned, at most LN_FWD_GROUPS groups a thread; LayerKernels checks this), the same sums in the
// same order, so the same bits, and the two block sums with one barrier each. Without the scalar path's per-element
// bounds and its branches the kernel took fewer registers and instructions (56: 9 blocks of 128 an SM instead of 8),
// 0.82-0.91x layernorm_fwd's time at the layer's shapes (bench kernels, H200; kernels/probes/layernorm_probe.cu);
// with its whole-row body (layernorm_fwd_words below) it takes 62 again, and is faster still.
// With V > 1 each thread stands in for V threads of a block V times as wide (thread t for t, t + blockDim, ...):
// it holds their V * K groups t + j * blockDim (virtual thread j % V's k-th group for k = j / V) and sums them in
// V chains, and the block sums add the wide block's warp totals in its order, so the bits of the wide block's
// kernel. Half the threads a row let twice the rows be resident at once: where a row's block of V = 1 fills an SM
// in fewer rows than a shard has, all of them may still fit in one wave (LayerKernels chooses).
template <class T, bool ZC, int K, int V, bool FULL>
__device__ __forceinline__ void layernorm_fwd_words_rows(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                                         const T* beta, float eps, T* y, i64 ldY, float* mean,
                                                         float* rstd) {
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int J = K * V;
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    const int groups = (int)(cols / N);
    if (groups > J * (int)blockDim.x || (V > 1 && V * blockDim.x > UBUF_MAX_THREADS)) return;
    __shared__ float scratch[2][MAX_WARPS];
    int parity = 0;
    const float n = (float)cols;
    const uint4* gammaW = reinterpret_cast<const uint4*>(gamma);
    const uint4* betaW = reinterpret_cast<const uint4*>(beta);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4* xr = reinterpret_cast<const uint4*>(x + row * ldX);
        uint4 raw[J];
#pragma unroll
        for (int j = 0; j < J; ++j) {
            const int g = (int)threadIdx.x + j * (int)blockDim.x;
            if (FULL || g < groups) raw[j] = xr[g];
        }
        float s[V];
#pragma unroll
        for (int i = 0; i < V; ++i) s[i] = 0.f;
#pragma unroll
        for (int j = 0; j < J; ++j) {
            const int g = (int)threadIdx.x + j * (int)blockDim.x;
            if (FULL || g < groups) {
                float v[N];
                R::unpack(raw[j], v);
#pragma unroll
                for (int i = 0; i < N; ++i) s[j % V] += v[i];
            }
        }
        const float mu = block_sum_wide_alternating<V>(s, scratch, parity) / n;
        if (FULL) opaque_words<J>(raw);
        float q[V];
#pragma unroll
        for (int i = 0; i < V; ++i) q[i] = 0.f;
#pragma unroll
        for (int j = 0; j < J; ++j) {
            const int g = (int)threadIdx.x + j * (int)blockDim.x;
            if (FULL || g < groups) {
                float v[N];
                R::unpack(raw[j], v);
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const float d = v[i] - mu;
                    q[j % V] += d * d;
                }
            }
        }
        const float rs = 1.f / sqrtf(block_sum_wide_alternating<V>(q, scratch, parity) / n + eps);
        const float nmr = -mu * rs;
        if (FULL) opaque_words<J>(raw);
        T* yr = y + row * ldY;
#pragma unroll
        for (int j = 0; j < J; ++j) {
            const int g = (int)threadIdx.x + j * (int)blockDim.x;
            if (FULL || g < groups) {
                // gamma's and beta's words into registers first: unpack of a word in global memory reads it an
                // element at a time (eight 2-byte loads for bf16; 1.2-1.3x the kernel's time).
                const uint4 gammaWord = gammaW[g];
                const uint4 betaWord = betaW[g];
                float v[N], gm[N], b[N];
                R::unpack(raw[j], v);
                R::unpack(gammaWord, gm);
                R::unpack(betaWord, b);
#pragma unroll
                for (int i = 0; i < N; ++i) v[i] = ln_out<ZC>(v[i], rs, nmr, gm[i], b[i]);
                store_vec<T, N>(yr + (i64)g * N, v);
            }
        }
        if (threadIdx.x == 0) {
            if (mean != nullptr) mean[row] = mu;
            if (rstd != nullptr) rstd[row] = rs;
        }
    }
}

// Rows of exactly J * blockDim groups (the layer's shapes) take the body without bound checks, which compiled to a
// branch and its reconvergence a group and pass: 0.970-0.996x the time at the layer's shapes (bench kernels, H200;
// the word kernel at 62 registers where 56, the paired one spilling 8 bytes). With the output pass's check kept,
// 0.98-1.00x.
template <class T, bool ZC, int K = LN_FWD_GROUPS, int V = 1>
__device__ __forceinline__ void layernorm_fwd_words(i64 rows, i64 cols, const T* x, i64 ldX, const T* gamma,
                                                    const T* beta, float eps, T* y, i64 ldY, float* mean,
                                                    float* rstd) {
    if (cols == (i64)ColGroups<T>::N * K * V * blockDim.x) {
        layernorm_fwd_words_rows<T, ZC, K, V, true>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);
    } else {
        layernorm_fwd_words_rows<T, ZC, K, V, false>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);
    }
}

// One column group of a row in the fused backwards: the row sums' terms and the per-column parameter sums over its
// first `valid` columns, then its dx. Both fused kernels use it, so they add the same terms in the same order.
// x-hat is one FMA (ln_xhat, as the forward's) and dx two; ZC (zero-centred gamma, g = gamma + 1) is a template
// parameter, so the usual gamma costs no "+ 0" an element: about 5% less time than the plain formulas
// (kernels/probes/layernorm_bwd_walk_probe.cu, "lean - sum fast, one barrier", H200).

template <class T, bool ZC>
struct LnBwdGroup {
    static constexpr int N = ColGroups<T>::N;

    // dxhat = dy * g.
    static __device__ __forceinline__ float scaled(float d, float g) { return ZC ? d * (g + 1.f) : d * g; }

    // One element's dx: rstd * dxhat + (c2 * xhat + c1), every path's rounding.
    static __device__ __forceinline__ float dx_element(float d, float x, float g, float rs, float nmr, float c1,
                                                       float c2) {
        return fmaf(rs, scaled(d, g), fmaf(c2, ln_xhat(x, rs, nmr), c1));
    }

    static __device__ __forceinline__ void accumulate(const uint4& dyRaw, const uint4& xRaw, const uint4& gammaRaw,
                                                      int valid, float rs, float nmr, float& s1, float& s2,
                                                      float (&dg)[N], float (&db)[N]) {
        float d[N], v[N], gm[N];
        RawGroup<T>::unpack(dyRaw, d);
        RawGroup<T>::unpack(xRaw, v);
        RawGroup<T>::unpack(gammaRaw, gm);
#pragma unroll
        for (int i = 0; i < N; ++i) {
            if (i < valid) {
                const float xhat = ln_xhat(v[i], rs, nmr);
                const float dxhat = scaled(d[i], gm[i]);
                s1 += dxhat;
                s2 += dxhat * xhat;
                dg[i] += d[i] * xhat;
                db[i] += d[i];
            }
        }
    }

    // dx = rstd * (dxhat - m1 - xhat * m2), m1 and m2 the row's means of dxhat and dxhat * xhat, as
    // rstd * dxhat + (c2 * xhat + c1), c1 = -rstd * m1, c2 = -rstd * m2.
    static __device__ __forceinline__ void dx(const uint4& dyRaw, const uint4& xRaw, const uint4& gammaRaw, float rs,
                                              float nmr, float c1, float c2, float (&out)[N]) {
        float v[N], gm[N];
        RawGroup<T>::unpack(dyRaw, out);
        RawGroup<T>::unpack(xRaw, v);
        RawGroup<T>::unpack(gammaRaw, gm);
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = dx_element(out[i], v[i], gm[i], rs, nmr, c1, c2);
    }
};

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), with xhat = (x - mean) * rstd and
// dxhat = dy * g (g = gamma, + 1 zero-centred: ZC), means over the row, computed as the fused backwards compute
// them (LnBwdGroup's roundings), so either path gives the same bits. dx may be dy or x exactly.
// Every backward takes a row's means as its sums times 1 / cols, computed once, where a division by cols a row
// and thread ran an IEEE division with its slow-path branch (0.975-0.998x the time at the layer's shapes but
// 70B tp 2, 1.004x; bench kernels, H200). The forward keeps its divisions: with rsqrtf and 1 / cols there too the
// paired forward ran 1.01x slower at 2048 x 4096.
template <class T, bool ZC>
__device__ __forceinline__ void layernorm_bwd_dx(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                                 const float* mean, const float* rstd, const T* gamma, T* dx,
                                                 i64 ldDx) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31) != 0) return;
    __shared__ float scratchA[MAX_WARPS];
    __shared__ float scratchB[MAX_WARPS];
    using G = ColGroups<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(dy, ldDy) && rows_aligned16<T>(x, ldX)
                     && rows_aligned16<T>(dx, ldDx) && aligned16(gamma);
    const i64 groups = G::count(cols);
    const float invN = 1.f / (float)cols;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* dyr = dy + row * ldDy;
        const T* xr = x + row * ldX;
        const float rs = rstd[row];
        const float nmr = -mean[row] * rs;
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
                    const float xhat = ln_xhat(v[i], rs, nmr);
                    const float dxhat = LnBwdGroup<T, ZC>::scaled(d[i], gm[i]);
                    s1 += dxhat;
                    s2 += dxhat * xhat;
                }
            }
        }
        block_sum2(s1, s2, scratchA, scratchB);
        const float c1 = -rs * (s1 * invN);
        const float c2 = -rs * (s2 * invN);
        T* dxr = dx + row * ldDx;
        for (i64 g = threadIdx.x; g < groups; g += blockDim.x) {
            const int valid = G::valid(g, cols);
            float d[N], v[N], gm[N];
            G::load(dyr, g, valid, vec, d);
            G::load(xr, g, valid, vec, v);
            G::load(gamma, g, valid, vec, gm);
#pragma unroll
            for (int i = 0; i < N; ++i) d[i] = LnBwdGroup<T, ZC>::dx_element(d[i], v[i], gm[i], rs, nmr, c1, c2);
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
            const float rs = rstd[r];
            const float xhat = ln_xhat(Elem<T>::load(x[r * ldX + c]), rs, -mean[r] * rs);
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
template <class T, bool ZC>
__device__ __forceinline__ void layernorm_bwd(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                              const float* mean, const float* rstd, const T* gamma, T* dx,
                                              i64 ldDx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart,
                                              i64 ldPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0 || (blockDim.x & 31) != 0) return;
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int K = LN_BWD_GROUPS;
    const i64 groups = G::count(cols);
    if (groups > (i64)K * blockDim.x) return;
    __shared__ float scratchA[2][MAX_WARPS];
    __shared__ float scratchB[2][MAX_WARPS];
    int parity = 0;
    const bool vec = cols % N == 0 && rows_aligned16<T>(dy, ldDy) && rows_aligned16<T>(x, ldX)
                     && rows_aligned16<T>(dx, ldDx) && aligned16(gamma);
    const float invN = 1.f / (float)cols;
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
            const float rs = rstd[r];
            const float nmr = -mean[r] * rs;
            float s1 = 0.f, s2 = 0.f;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    LnBwdGroup<T, ZC>::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], G::valid(g, cols), rs, nmr, s1,
                                                  s2, dg[k], db[k]);
                }
            }
            block_sum2_alternating(s1, s2, scratchA, scratchB, parity);
            const float c1 = -rs * (s1 * invN);
            const float c2 = -rs * (s2 * invN);
            T* dxr = dx + r * ldDx;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const i64 g = threadIdx.x + (i64)k * blockDim.x;
                if (g < groups) {
                    float d[N];
                    LnBwdGroup<T, ZC>::dx(dyRaw[k], xRaw[k], gammaRaw[k], rs, nmr, c1, c2, d);
                    G::store(dxr, g, G::valid(g, cols), vec, d);
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

// The same backward with the rows staged in shared memory: each thread copies the 16-byte words it will itself
// read (cp.async, so no barrier orders the copies) LN_BWD_STAGES - 1 rows ahead of the row it computes, so the
// loads of several rows are in flight while a row's two block sums wait on their barriers; in the register-only
// kernel above a block had one row in flight, and a row's time was a memory latency. A block walks the rows of its
// parts (blockIdx.x, + gridDim.x, ...) in order, so the prefetch runs on across a part's end. Same sums in the same
// order as layernorm_bwd for the same blockDim. Vector path only (cols a multiple of the group width, dy, x and dx
// rows 16-byte aligned, gamma aligned, the partial rows 16-byte aligned); LayerKernels checks this, and launches
// it with LN_BWD_STAGES * 2 * groups * 16 bytes of dynamic shared memory.
// The walk keeps two cursors (the row being copied, the row being computed) that step without dividing, and loads a
// row's mean and rstd while the row before it is computed: finding each row's part with 64-bit divisions and loading
// the statistics after the wait made the kernel 20-28% slower (kernels/probes/layernorm_bwd_walk_probe.cu), loading
// them just before the wait 4-8% (kernels/probes/layernorm_bwd_lean_probe.cu; both H200).
constexpr int LN_BWD_STAGES = 3;

// A place in shared memory to copy 16 bytes to: on sm_80 and later its 32-bit shared-window address, converted from
// the generic pointer once (converting every row cost the staged backward 1-2%, kernels/probes/
// layernorm_bwd_lean_probe.cu, H200), elsewhere the pointer itself. Either adds a byte offset.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
using SharedAddr = unsigned;
__device__ __forceinline__ SharedAddr shared_addr(void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp_async16(SharedAddr smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem));
}
#else
using SharedAddr = char*;
__device__ __forceinline__ SharedAddr shared_addr(void* p) { return static_cast<char*>(p); }
__device__ __forceinline__ void cp_async16(SharedAddr smem, const void* gmem) {
    *reinterpret_cast<uint4*>(smem) = *reinterpret_cast<const uint4*>(gmem);
}
#endif

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// A block's rows in order: its parts blockIdx.x, + gridDim.x, ..., each of rowsPerPart rows (the last may be
// shorter); ok turns false past the last.
struct PartRows {
    i64 part, row, end;
    bool ok;

    __device__ __forceinline__ void start(i64 rows, i64 rowsPerPart) {
        part = blockIdx.x;
        enter(rows, rowsPerPart);
    }
    __device__ __forceinline__ void next(i64 rows, i64 rowsPerPart) {
        if (++row < end) return;
        part += gridDim.x;
        enter(rows, rowsPerPart);
    }
    // The row next() moves to; past the block's last row it is at least `rows`.
    __device__ __forceinline__ i64 following(i64 rowsPerPart) const {
        return row + 1 < end ? row + 1 : (part + gridDim.x) * rowsPerPart;
    }

  private:
    __device__ __forceinline__ void enter(i64 rows, i64 rowsPerPart) {
        row = part * rowsPerPart;
        end = row + rowsPerPart < rows ? row + rowsPerPart : rows;
        ok = row < rows;
    }
};

// A warp's fp32 sums of 32 consecutive column groups of N (N = 8: 64 float4 words of the row `row`, from group g0)
// stored as N / 4 instructions of 512 contiguous bytes: lane l stores word w = j * 32 + l, taking it from the lane
// that holds it by shuffles. A thread's own two words 32 bytes apart left each store instruction half of every
// 32-byte sector it touched; the partial rows written so, and read back by the column sums, cost the op 2.5-7% at
// the layer's shapes (kernels/probes/layernorm_warp_probe.cu, H200). Groups from `groups` on are not stored. Every
// lane of the warp calls it.
template <int N>
__device__ __forceinline__ void store_warp_groups(const float (&a)[N], float* row, i64 g0, int groups) {
    static_assert(N % 4 == 0, "whole float4 words");
    constexpr int W = N / 4;  // words a group
    const int lane = (int)(threadIdx.x & 31);
    if (W == 1) {  // a group is one word: the lanes' own words are already consecutive
        if (g0 + lane < groups) reinterpret_cast<float4*>(row)[g0 + lane] = make_float4(a[0], a[1], a[2], a[3]);
        return;
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
        const int w = j * 32 + lane;  // the word this lane stores: group w / W of the warp's, its word w % W
        const int src = w / W;
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            float pick = 0.f;
#pragma unroll
            for (int q = 0; q < W; ++q) {
                const float got = __shfl_sync(0xffffffffu, a[4 * q + i], src);
                if (w % W == q) pick = got;
            }
            v[i] = pick;
        }
        if (g0 + src < groups) {
            reinterpret_cast<float4*>(row + (g0 + src) * N)[w % W] = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
}

// K: the column groups a thread holds; the kernels take LN_BWD_GROUPS (other K and launch bounds were slower,
// kernels/probes/layernorm_bulk_probe.cu).
template <class T, bool ZC, int K = LN_BWD_GROUPS>
__device__ __forceinline__ void layernorm_bwd_staged(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                                     const float* mean, const float* rstd, const T* gamma, T* dx,
                                                     i64 ldDx, i64 rowsPerPart, float* dgammaPart, float* dbetaPart,
                                                     i64 ldPart) {
    using G = ColGroups<T>;
    constexpr int N = G::N;
    constexpr int S = LN_BWD_STAGES;
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0 || (blockDim.x & 31) != 0 || cols % N != 0) return;
    if (cols / N > (i64)K * blockDim.x) return;
    const int groups = (int)(cols / N);
    UBUF_DYNAMIC_SHARED(uint4, stage);  // S slots of [dy row | x row], groups words each
    __shared__ float scratchA[2][MAX_WARPS];
    __shared__ float scratchB[2][MAX_WARPS];
    int parity = 0;
    PartRows copying, computing;
    copying.start(rows, rowsPerPart);
    computing.start(rows, rowsPerPart);
    if (!computing.ok) return;
    const float invN = 1.f / (float)cols;
    int copySlot = 0, slot = 0;
    // This thread's first word in slot 0 (its word k is kBytes further, x's half of a slot xBytes), and its first
    // word's byte offset in a row: computed once, not every row.
    const SharedAddr own = shared_addr(stage + threadIdx.x);
    const unsigned slotBytes = 32u * (unsigned)groups, xBytes = 16u * (unsigned)groups, kBytes = 16u * blockDim.x;
    const unsigned ownBytes = 16u * threadIdx.x;
    // The next row's words into the next slot; past the end an empty group keeps the count the wait relies on.
    auto issue = [&]() {
        if (copying.ok) {
            const SharedAddr s = own + copySlot * slotBytes;
            const char* dyr = reinterpret_cast<const char*>(dy + copying.row * ldDy) + ownBytes;
            const char* xr = reinterpret_cast<const char*>(x + copying.row * ldX) + ownBytes;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int g = (int)threadIdx.x + k * (int)blockDim.x;
                if (g < groups) {
                    cp_async16(s + k * kBytes, dyr + k * kBytes);
                    cp_async16(s + xBytes + k * kBytes, xr + k * kBytes);
                }
            }
            copying.next(rows, rowsPerPart);
        }
        cp_async_commit();
        copySlot = copySlot + 1 == S ? 0 : copySlot + 1;
    };
    uint4 gammaRaw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int g = (int)threadIdx.x + k * (int)blockDim.x;
        if (g < groups) gammaRaw[k] = reinterpret_cast<const uint4*>(gamma)[g];
    }
#pragma unroll
    for (int i = 0; i < S - 1; ++i) issue();
    float dg[K][N], db[K][N];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
    }
    // A row's mean and rstd are loaded while the row before it is computed, so its first adds do not wait on them.
    float rsNext = rstd[computing.row], meanNext = mean[computing.row];
    while (computing.ok) {
        issue();  // into the slot of the previous row, which this thread has finished with
        const i64 r = computing.row;
        const float rs = rsNext;
        const float nmr = -meanNext * rs;
        const i64 following = computing.following(rowsPerPart);
        if (following < rows) {
            rsNext = rstd[following];
            meanNext = mean[following];
        }
        cp_async_wait<S - 1>();
        const uint4* s = stage + slot * 2 * groups;
        uint4 dyRaw[K], xRaw[K];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                dyRaw[k] = s[g];
                xRaw[k] = s[groups + g];
                LnBwdGroup<T, ZC>::accumulate(dyRaw[k], xRaw[k], gammaRaw[k], N, rs, nmr, s1, s2, dg[k], db[k]);
            }
        }
        block_sum2_alternating(s1, s2, scratchA, scratchB, parity);
        const float c1 = -rs * (s1 * invN);
        const float c2 = -rs * (s2 * invN);
        T* dxr = dx + r * ldDx;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int g = (int)threadIdx.x + k * (int)blockDim.x;
            if (g < groups) {
                float d[N];
                LnBwdGroup<T, ZC>::dx(dyRaw[k], xRaw[k], gammaRaw[k], rs, nmr, c1, c2, d);
                store_vec<T, N>(dxr + g * N, d);
            }
        }
        if (r + 1 == computing.end) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                // The warp's groups g0 .. g0 + 31 of this k (threads past the row hold zeros and store nothing).
                const i64 g0 = (i64)(threadIdx.x & ~31u) + (i64)k * blockDim.x;
                store_warp_groups<N>(dg[k], dgammaPart + computing.part * ldPart, g0, groups);
                store_warp_groups<N>(db[k], dbetaPart + computing.part * ldPart, g0, groups);
#pragma unroll
                for (int i = 0; i < N; ++i) dg[k][i] = db[k][i] = 0.f;
            }
        }
        computing.next(rows, rowsPerPart);
        slot = slot + 1 == S ? 0 : slot + 1;
    }
    cp_async_wait<0>();
}

}  // namespace ubuf

// The forward at 64 registers: uncapped it took 88, so 5 blocks of 128 an SM, and the rows of a layer's shard
// (2048-4096) ran in waves that each read, reduced and wrote in turn; capped, 10-13% faster, same bits, no spills in
// bf16 (kernels/probes/layernorm_probe.cu, H200).
#define UBUF_LAYERNORM_KERNELS(SUFFIX, T)                                                                        \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS, 65536 / (64 * UBUF_MAX_THREADS))             \
    ubuf_layernorm_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* gamma,       \
                                const T* beta, float eps, int zeroCenteredGamma, T* y, long long ldY,            \
                                float* mean, float* rstd) {                                                      \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_fwd<T, true>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);              \
        } else {                                                                                                 \
            ubuf::layernorm_fwd<T, false>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);             \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS, 65536 / (64 * UBUF_MAX_THREADS))             \
    ubuf_layernorm_fwd_words_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* gamma, \
                                      const T* beta, float eps, int zeroCenteredGamma, T* y, long long ldY,      \
                                      float* mean, float* rstd) {                                                \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_fwd_words<T, true>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);        \
        } else {                                                                                                 \
            ubuf::layernorm_fwd_words<T, false>(rows, cols, x, ldX, gamma, beta, eps, y, ldY, mean, rstd);       \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS / 2, 65536 / (64 * UBUF_MAX_THREADS / 2))     \
    ubuf_layernorm_fwd_words2_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* gamma,\
                                       const T* beta, float eps, int zeroCenteredGamma, T* y, long long ldY,     \
                                       float* mean, float* rstd) {                                               \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_fwd_words<T, true, ubuf::LN_FWD_GROUPS, 2>(rows, cols, x, ldX, gamma, beta, eps, y,  \
                                                                       ldY, mean, rstd);                         \
        } else {                                                                                                 \
            ubuf::layernorm_fwd_words<T, false, ubuf::LN_FWD_GROUPS, 2>(rows, cols, x, ldX, gamma, beta, eps, y, \
                                                                        ldY, mean, rstd);                        \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_bwd_dx_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,      \
                                   long long ldX, const float* mean, const float* rstd, const T* gamma,          \
                                   int zeroCenteredGamma, T* dx, long long ldDx) {                               \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_bwd_dx<T, true>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx);          \
        } else {                                                                                                 \
            ubuf::layernorm_bwd_dx<T, false>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx);         \
        }                                                                                                        \
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
    ubuf_layernorm_bwd_staged_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,  \
                                       long long ldX, const float* mean, const float* rstd, const T* gamma,      \
                                       int zeroCenteredGamma, T* dx, long long ldDx, long long rowsPerPart,      \
                                       float* dgammaPart, float* dbetaPart, long long ldPart) {                  \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_bwd_staged<T, true>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx,       \
                                                rowsPerPart, dgammaPart, dbetaPart, ldPart);                     \
        } else {                                                                                                 \
            ubuf::layernorm_bwd_staged<T, false>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx,      \
                                                 rowsPerPart, dgammaPart, dbetaPart, ldPart);                    \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_layernorm_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,         \
                                long long ldX, const float* mean, const float* rstd, const T* gamma,             \
                                int zeroCenteredGamma, T* dx, long long ldDx, long long rowsPerPart,             \
                                float* dgammaPart, float* dbetaPart, long long ldPart) {                         \
        if (zeroCenteredGamma) {                                                                                 \
            ubuf::layernorm_bwd<T, true>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx, rowsPerPart, \
                                         dgammaPart, dbetaPart, ldPart);                                         \
        } else {                                                                                                 \
            ubuf::layernorm_bwd<T, false>(rows, cols, dy, ldDy, x, ldX, mean, rstd, gamma, dx, ldDx,             \
                                          rowsPerPart, dgammaPart, dbetaPart, ldPart);                           \
        }                                                                                                        \
    }

UBUF_LAYERNORM_KERNELS(f32, float)
UBUF_LAYERNORM_KERNELS(f16, __half)
UBUF_LAYERNORM_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_LAYERNORM_KERNELS
