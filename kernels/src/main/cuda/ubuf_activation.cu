// Activations of the MLP block, element-wise in fp32 with one rounding per output: GELU with the tanh
// approximation (as Megatron-LM and TE use it) and SwiGLU (silu(a) * b over the two column halves of the fc1
// output, a the first half), each also with fc1's bias fused in: the forward adds the bias on the fly, and the
// backward recomputes the same sum and writes the bias gradient's partial column sums beside dx, so fc1's output
// is neither rewritten by a bias add nor read again by a bias gradient.
#include "ubuf_layer_common.cuh"

namespace ubuf {

// The SFU's 2^x and 1 / x (ex2.approx.ftz, rcp.approx.ftz: within about 2 and 1 ulp, results below 2^-126 as 0):
// one instruction each, where expf, tanhf and the IEEE-rounded division take 8-17 (the division with a slow-path
// branch), and these element-wise kernels are bound by their instructions once fc1's bias and its gradient are fused
// in. The host build (the CPU emulator) takes the library's.
__device__ __forceinline__ float ex2_approx(float x) {
#ifdef __CUDA_ARCH__
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return exp2f(x);
#endif
}

__device__ __forceinline__ float rcp_approx(float x) {
#ifdef __CUDA_ARCH__
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return 1.f / x;
#endif
}

// gelu(x) = 0.5 x (1 + tanh(u)), u = k0 (x + k1 x^3), k0 = sqrt(2 / pi), k1 = 0.044715, computed as
// x * s with s = 0.5 (1 + tanh(u)) = 1 / (1 + e), e = exp(-2u) = 2^(x (c1 + c2 x^2)): no tanh, and no cancellation
// in 1 + tanh(u) where u is very negative. c1 = -2 k0 log2(e), c2 = c1 k1.
constexpr float GELU_C1 = -2.302208198144325f;
constexpr float GELU_C2 = -0.1029432395800235f;
// d gelu / dx = s + s (1 - s) x 2 k0 (1 + 3 k1 x^2) = s + s (1 - s) x (c3 + c4 x^2): c3 = 2 k0, c4 = 6 k0 k1.
constexpr float GELU_C3 = 1.5957691216057308f;
constexpr float GELU_C4 = 0.21406444881780076f;
constexpr float LOG2_E = 1.4426950408889634f;

// exp(-2u) as a function of x and x^2; +inf where x is very negative (s = 0), 0 where very positive (s = 1).
__device__ __forceinline__ float gelu_exp(float x, float x2) { return ex2_approx(x * fmaf(GELU_C2, x2, GELU_C1)); }

__device__ __forceinline__ float gelu_tanh(float x) {
    return x * rcp_approx(1.f + gelu_exp(x, x * x));
}

// s (1 - s) is e s^2, exact where s is near 1 (1 - s would cancel); e is capped so that where it is +inf (s = 0)
// the product is 0, not inf * 0. x (c3 + c4 x^2) overflows only where |x| > 1e13, where s (1 - s) is 0: it is
// dropped there, or 0 * inf would give NaN.
__device__ __forceinline__ float gelu_tanh_grad(float x) {
    const float x2 = x * x;
    const float e = gelu_exp(x, x2);
    const float s = rcp_approx(1.f + e);
    const float p = s * (fminf(e, 1e30f) * s);
    const float w = x * fmaf(GELU_C4, x2, GELU_C3);
    return fmaf(p, p == 0.f ? 0.f : w, s);
}

// sigmoid(a) = 1 / (1 + exp(-a)): exp(-a) is +inf for a < -88, giving exactly 0, never NaN.
__device__ __forceinline__ float sigmoid(float a) {
    return rcp_approx(1.f + ex2_approx(-a * LOG2_E));
}

struct GeluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = gelu_tanh(x[0]); }
};

// inputs (dy, x) -> dx
struct GeluBwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = x[0] * gelu_tanh_grad(x[1]);
    }
};

// x + bias rounded to T and back: the value a separate bias add would have stored, so a fused kernel gives the
// bits of the bias add followed by the activation.
template <class T>
__device__ __forceinline__ float biased(float x, float bias) {
    return Elem<T>::load(Elem<T>::store(x + bias));
}

// inputs (x, bias) -> y = gelu(z), z = x + bias rounded to T
template <class T>
struct BiasGeluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = gelu_tanh(biased<T>(x[0], x[1]));
    }
};

// inputs (x, bias) -> (y, pre): pre = z, the pre-activation the backward needs
template <class T>
struct BiasGeluFwdPre {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[2]) const {
        const float z = biased<T>(x[0], x[1]);
        y[0] = gelu_tanh(z);
        y[1] = z;
    }
};

// inputs (a, b) -> silu(a) * b
struct SwigluFwd {
    __device__ __forceinline__ void operator()(const float (&x)[2], float (&y)[1]) const {
        y[0] = x[0] * sigmoid(x[0]) * x[1];
    }
};

// inputs (dy, a, b) -> (da, db): da = dy * b * silu'(a), db = dy * silu(a), silu'(a) = s (1 + a (1 - s)).
__device__ __forceinline__ void swiglu_grad(float dy, float a, float b, float& da, float& db) {
    const float s = sigmoid(a);
    da = dy * b * (s * (1.f + a * (1.f - s)));
    db = dy * (a * s);
}

struct SwigluBwd {
    __device__ __forceinline__ void operator()(const float (&x)[3], float (&y)[2]) const {
        swiglu_grad(x[0], x[1], x[2], y[0], y[1]);
    }
};

// The backwards of the biased activations, on the pre-activations z (H of them: GELU's one, SwiGLU's two halves),
// with how their fused backward (bias_act_bwd_partial) is compiled best for each, as measured on an H200:
// DENSE_STRIDES, whether dense views (the layer's: ld = cols for dy, H cols for x, dx and the partial rows) run with
// their row strides as one value, so the walk's row offsets share their products; CONVERTING_UNPACK, whether the
// raw words widen element by element (Elem<T>::load) rather than by unpack_word's bit moves.
struct GeluGradOp {
    static constexpr int H = 1;
    // Both ways GELU's backward ran slower: one stride 1.08x, the converting unpack 1.01-1.02x (session 34).
    static constexpr bool DENSE_STRIDES = false;
    static constexpr bool CONVERTING_UNPACK = false;
    __device__ __forceinline__ void operator()(float dy, const float (&z)[1], float (&dz)[1]) const {
        dz[0] = dy * gelu_tanh_grad(z[0]);
    }
};

struct SwigluGradOp {
    static constexpr int H = 2;
    // One stride: 0.92-0.94x the time one row ahead at four blocks an SM, where the strides as given ran 1.06x the
    // two-block kernel's; unpack_word's bit moves ran it 1.12x slower (session 34).
    static constexpr bool DENSE_STRIDES = true;
    static constexpr bool CONVERTING_UNPACK = true;
    __device__ __forceinline__ void operator()(float dy, const float (&z)[2], float (&dz)[2]) const {
        swiglu_grad(dy, z[0], z[1], dz[0], dz[1]);
    }
};

// The fused bias kernels walk column tiles: a thread keeps one column group (16 bytes' worth of columns) of every
// half for all the rows of its item, so the bias is loaded once per item and the backward's column sums stay in
// registers; rows are read as raw 16-byte words, ACT_FWD_AHEAD rows ahead in the forward (raw words take half the
// registers of their floats, so more bytes are in flight per SM), the backwards' own number ahead.
constexpr int ACT_FWD_AHEAD = 8;
// The backward's block: ACT_LANES row lanes x (blockDim / ACT_LANES) column groups; lane l takes rows l, l + lanes,
// ... of the item's part, and the lanes' sums are added in lane order through shared memory.
constexpr int ACT_LANES = 4;
constexpr int ACT_BLOCK = 256;
// Blocks an SM the register budget leaves room for (launch bounds): more threads with bytes in flight.
constexpr int ACT_FWD_BLOCKS_PER_SM = 2;
// SwiGLU's backward: one row ahead at four blocks an SM (64 registers), 0.90-0.93x the time of four rows ahead at two
// (128 registers) with the SFU's sigmoid; two or three rows at three or four blocks spilled more and ran slower
// (H200, kernels/probes/bias_swiglu_bwd_ahead_probe.cu).
constexpr int ACT_SWIGLU_BWD_BLOCKS_PER_SM = 4;
constexpr int ACT_SWIGLU_BWD_AHEAD = 1;
// GELU's backward has one half (fewer raw words in flight): three blocks an SM fit 80 registers without spilling and
// ran 0.89-0.91x the time of two at 117 (H200, kernels/probes/bias_gelu_probe.cu); four spill. Three rows ahead
// rather than four: 0.95-0.99x the time; 1 or 2 rows at 4-8 blocks no faster, with tanhf or the SFU's math
// (bias_gelu_bwd_ahead_probe.cu).
constexpr int ACT_GELU_BWD_BLOCKS_PER_SM = 3;
constexpr int ACT_GELU_BWD_AHEAD = 3;
// bias_gelu_fwd_cols: 256-thread blocks, eight an SM (32 registers).
constexpr int ACT_COLS_BLOCK = 256;
constexpr int ACT_COLS_BLOCKS_PER_SM = 8;

// y = silu(za) * zb over rows x cols (x has 2 cols columns: a, then b), z = round_T(x + bias). Items are (part of
// rowsPerPart rows, tile of blockDim column groups).
template <class T>
__device__ __forceinline__ void bias_swiglu_fwd_tiled(i64 rows, i64 cols, const T* x, i64 ldX, const T* bias, T* y,
                                                      i64 ldY, i64 rowsPerPart) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0) return;
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    const bool vec = cols % N == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(y, ldY) && aligned16(bias);
    const i64 groups = G::count(cols);
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const i64 tiles = (groups + blockDim.x - 1) / blockDim.x;
    for (i64 item = blockIdx.x; item < parts * tiles; item += gridDim.x) {
        const i64 p = item / tiles;
        const i64 g = (item - p * tiles) * blockDim.x + threadIdx.x;
        if (g >= groups) continue;
        const int valid = G::valid(g, cols);
        const i64 r0 = p * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        // Raw words, unpacked where used: 4 registers each instead of N.
        const uint4 rba = R::load(bias, g, valid, vec);
        const uint4 rbb = R::load(bias + cols, g, valid, vec);
        for (i64 r = r0; r < r1; r += ACT_FWD_AHEAD) {
            uint4 ra[ACT_FWD_AHEAD], rb[ACT_FWD_AHEAD];
#pragma unroll
            for (int u = 0; u < ACT_FWD_AHEAD; ++u) {
                if (r + u < r1) {
                    ra[u] = R::load(x + (r + u) * ldX, g, valid, vec);
                    rb[u] = R::load(x + (r + u) * ldX + cols, g, valid, vec);
                }
            }
#pragma unroll
            for (int u = 0; u < ACT_FWD_AHEAD; ++u) {
                if (r + u < r1) {
                    float a[N], b[N], out[N], ba[N], bb[N];
                    R::unpack(ra[u], a);
                    R::unpack(rb[u], b);
                    R::unpack(rba, ba);
                    R::unpack(rbb, bb);
#pragma unroll
                    for (int i = 0; i < N; ++i) {
                        const float za = biased<T>(a[i], ba[i]);
                        out[i] = za * sigmoid(za) * biased<T>(b[i], bb[i]);
                    }
                    G::store(y + (r + u) * ldY, g, valid, vec, out);
                }
            }
        }
    }
}

// y = silu(za) * zb over rows x cols, z = round_T(x + bias) with a bias (2 cols values) or z = x without one: the
// bits of bias_swiglu_fwd_tiled and of the swiglu map. Vector path only (cols a multiple of the 16-byte group, x, y
// and the bias 16-byte aligned row by row, rows * cols / group below 2^31; LayerKernels checks it): a thread per
// 16-byte word of y on a one-shot grid, as map_dense walks GELU, its two words of x and of the bias loaded at once
// (the bias from the caches). The column-tile walk of bias_swiglu_fwd_tiled kept two blocks an SM busy with eight
// rows each and ran at 60-72% of a copy's speed on an H200.
template <class T>
__device__ __forceinline__ void swiglu_fwd_words(i64 rows, i64 cols, const T* x, i64 ldX, const T* bias, T* y,
                                                 i64 ldY) {
    using R = RawGroup<T>;
    constexpr int N = R::N;
    if (rows <= 0 || cols <= 0 || cols % N != 0) return;
    const unsigned perRow = (unsigned)(cols / N);
    const unsigned words = (unsigned)(rows * (cols / N));
    for (unsigned w = (unsigned)global_thread(); w < words; w += (unsigned)grid_threads()) {
        const unsigned r = w / perRow;
        const i64 c = (i64)(w - r * perRow) * N;
        const T* xr = x + (i64)r * ldX + c;
        const uint4 ra = *reinterpret_cast<const uint4*>(xr);
        const uint4 rb = *reinterpret_cast<const uint4*>(xr + cols);
        float a[N], b[N], out[N];
        R::unpack(ra, a);
        R::unpack(rb, b);
        if (bias != nullptr) {
            // Unpacked from global memory, so read an element at a time from the caches: as whole words first it ran
            // 0.4-0.9% slower (bench kernels, H200, 2026-11-28).
            float ba[N], bb[N];
            R::unpack(*reinterpret_cast<const uint4*>(bias + c), ba);
            R::unpack(*reinterpret_cast<const uint4*>(bias + cols + c), bb);
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const float za = biased<T>(a[i], ba[i]);
                out[i] = za * sigmoid(za) * biased<T>(b[i], bb[i]);
            }
        } else {
#pragma unroll
            for (int i = 0; i < N; ++i) out[i] = a[i] * sigmoid(a[i]) * b[i];
        }
        store_vec<T, N>(y + (i64)r * ldY + c, out);
    }
}

// y = gelu(z), z = round_T(x + bias): the bits of map_elements with BiasGeluFwd. Vector path only: cols a multiple
// of the 16-byte word; x's and y's rows and the bias 16-byte aligned; each view's rows * ld below 2^31 words, so
// the 32-bit offsets and row steps cannot wrap (LayerKernels checks it). Column-stationary: the grid's threads,
// rounded down to whole rows of words, take k rows a sweep; thread t keeps word column t % perRow and its bias word,
// and walks rows t / perRow, + k, ..., two rows' words loaded before either is computed (a grid narrower than a
// row's words takes a word a thread instead). 32-bit word offsets keep it within 32 registers, so an SM holds 2048
// threads: with tanhf (a long word to compute) map_elements' (row, column) pairs at 64 registers ran at 65% of a
// copy's speed on an H200, this walk at 78% (a word a thread 75%; kernels/probes/bias_gelu_probe.cu). Storing pre
// as well spilled at 32 registers, so that stays with map_elements.
template <class T>
__device__ __forceinline__ void bias_gelu_word(const uint4& rx, const uint4& rb, T* y) {
    using R = RawGroup<T>;
    constexpr int N = R::N;
    float in[2][N], out[1][N];
    R::unpack(rx, in[0]);
    R::unpack(rb, in[1]);
    apply_vector<2, 1, N>(in, out, BiasGeluFwd<T>());  // the map's op, so the map's bits
    store_vec<T, N>(y, out[0]);
}

template <class T>
__device__ __forceinline__ void bias_gelu_fwd_cols(i64 rows, i64 cols, const T* x, i64 ldX, const T* bias, T* y,
                                                   i64 ldY) {
    constexpr int N = RawGroup<T>::N;
    if (rows <= 0 || cols <= 0 || cols % N != 0) return;
    const unsigned perRow = (unsigned)(cols / N);
    const unsigned nRows = (unsigned)rows;
    const unsigned threads = gridDim.x * blockDim.x;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint4* xw = reinterpret_cast<const uint4*>(x);
    const uint4* bw = reinterpret_cast<const uint4*>(bias);
    uint4* yw = reinterpret_cast<uint4*>(y);
    const unsigned ldXw = (unsigned)(ldX / N), ldYw = (unsigned)(ldY / N);
    if (threads < perRow) {
        for (unsigned w = t; w < nRows * perRow; w += threads) {
            const unsigned r = w / perRow, c = w - r * perRow;
            bias_gelu_word<T>(xw[r * ldXw + c], bw[c], reinterpret_cast<T*>(yw + (r * ldYw + c)));
        }
        return;
    }
    const unsigned rowStep = threads / perRow;
    if (t >= rowStep * perRow) return;
    const unsigned c = t % perRow;
    const uint4 rb = bw[c];
    for (unsigned r = t / perRow; r < nRows; r += 2 * rowStep) {
        const bool second = r + rowStep < nRows;
        uint4 rx[2];
        rx[0] = xw[r * ldXw + c];
        if (second) rx[1] = xw[(r + rowStep) * ldXw + c];
        bias_gelu_word<T>(rx[0], rb, reinterpret_cast<T*>(yw + (r * ldYw + c)));
        if (second) bias_gelu_word<T>(rx[1], rb, reinterpret_cast<T*>(yw + ((r + rowStep) * ldYw + c)));
    }
}

// dx = op(dy, z), z = round_T(x + bias), over rows x (H halves of cols columns): x, bias and dx hold H * cols
// columns, half h at column offset h * cols, dy holds cols. Also the bias gradient's first step: part[p][c] = the
// sum of the stored (rounded) dx[r][c] over the rows of part p, in a fixed order (each lane's rows in row order, then
// the lanes in lane order), which col_sums_f32 finishes. Items are (part, tile of blockDim / ACT_LANES column groups
// of one half); every thread owns one group in every half. blockDim must be ACT_BLOCK (the lanes' shared sums are
// sized for it). dx may be x itself (each element is read before the same thread writes it). VEC: every row and the
// bias whole aligned 16-byte words (bias_act_bwd_partial_any decides once), so the loads and stores have no scalar
// path to branch to. AHEAD: rows of raw words a lane loads before computing any (each kernel its own, and probes').
template <class T, class Op, bool VEC, int AHEAD>
__device__ __forceinline__ void bias_act_bwd_partial(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x, i64 ldX,
                                                     const T* bias, T* dx, i64 ldDx, i64 rowsPerPart, float* part,
                                                     i64 ldPart, Op op) {
    if (rows <= 0 || cols <= 0 || rowsPerPart <= 0 || blockDim.x != ACT_BLOCK) return;
    constexpr int H = Op::H;
    using G = ColGroups<T>;
    using R = RawGroup<T>;
    constexpr int N = G::N;
    constexpr int TILE = ACT_BLOCK / ACT_LANES;
    __shared__ float laneSums[ACT_LANES][H][TILE * N];
    constexpr bool vec = VEC;
    const i64 groups = G::count(cols);
    const i64 parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const i64 tiles = (groups + TILE - 1) / TILE;
    const int lane = (int)(threadIdx.x / TILE);
    const int col = (int)(threadIdx.x % TILE);
    for (i64 item = blockIdx.x; item < parts * tiles; item += gridDim.x) {
        const i64 p = item / tiles;
        const i64 g = (item - p * tiles) * TILE + col;
        const bool has = g < groups;  // no early exit: every thread reaches the barriers
        const int valid = has ? G::valid(g, cols) : 0;
        const i64 r0 = p * rowsPerPart;
        const i64 r1 = r0 + rowsPerPart < rows ? r0 + rowsPerPart : rows;
        uint4 rb[H];  // raw words, unpacked where used: 4 registers each instead of N
        float acc[H][N];
#pragma unroll
        for (int h = 0; h < H; ++h) {
#pragma unroll
            for (int i = 0; i < N; ++i) acc[h][i] = 0.f;
            if (has) rb[h] = R::load(bias + h * cols, g, valid, vec);
        }
        if (has) {
            for (i64 r = r0 + lane; r < r1; r += (i64)AHEAD * ACT_LANES) {
                uint4 rd[AHEAD], rx[H][AHEAD];
#pragma unroll
                for (int u = 0; u < AHEAD; ++u) {
                    const i64 ru = r + (i64)u * ACT_LANES;
                    if (ru < r1) {
                        rd[u] = R::load(dy + ru * ldDy, g, valid, vec);
#pragma unroll
                        for (int h = 0; h < H; ++h) rx[h][u] = R::load(x + ru * ldX + h * cols, g, valid, vec);
                    }
                }
#pragma unroll
                for (int u = 0; u < AHEAD; ++u) {
                    const i64 ru = r + (i64)u * ACT_LANES;
                    if (ru < r1) {
                        constexpr bool CV = Op::CONVERTING_UNPACK;
                        float d[N], xv[H][N], b[H][N], out[H][N];
                        R::template unpack<CV>(rd[u], d);
#pragma unroll
                        for (int h = 0; h < H; ++h) {
                            R::template unpack<CV>(rx[h][u], xv[h]);
                            R::template unpack<CV>(rb[h], b[h]);
                        }
#pragma unroll
                        for (int i = 0; i < N; ++i) {
                            float z[H], dz[H];
#pragma unroll
                            for (int h = 0; h < H; ++h) z[h] = biased<T>(xv[h][i], b[h][i]);
                            op(d[i], z, dz);
#pragma unroll
                            for (int h = 0; h < H; ++h) {
                                out[h][i] = Elem<T>::load(Elem<T>::store(dz[h]));
                                acc[h][i] += i < valid ? out[h][i] : 0.f;
                            }
                        }
#pragma unroll
                        for (int h = 0; h < H; ++h) G::store(dx + ru * ldDx + h * cols, g, valid, vec, out[h]);
                    }
                }
            }
        }
#pragma unroll
        for (int h = 0; h < H; ++h) {
#pragma unroll
            for (int i = 0; i < N; ++i) laneSums[lane][h][col * N + i] = acc[h][i];
        }
        __syncthreads();
        if (lane == 0 && has) {
#pragma unroll
            for (int h = 0; h < H; ++h) {
                float* o = part + p * ldPart + h * cols + g * N;
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    float total = laneSums[0][h][col * N + i];
#pragma unroll
                    for (int l = 1; l < ACT_LANES; ++l) total += laneSums[l][h][col * N + i];
                    if (i < valid) o[i] = total;
                }
            }
        }
        __syncthreads();
    }
}

template <class T, class Op, int AHEAD>
__device__ __forceinline__ void bias_act_bwd_partial_any(i64 rows, i64 cols, const T* dy, i64 ldDy, const T* x,
                                                         i64 ldX, const T* bias, T* dx, i64 ldDx, i64 rowsPerPart,
                                                         float* part, i64 ldPart, Op op) {
    constexpr int N = ColGroups<T>::N;
    constexpr int H = Op::H;
    if (cols % N == 0 && rows_aligned16<T>(dy, ldDy) && rows_aligned16<T>(x, ldX) && rows_aligned16<T>(dx, ldDx)
        && aligned16(bias)) {
        if constexpr (Op::DENSE_STRIDES) {
            if (ldDy == cols && ldX == H * cols && ldDx == H * cols && ldPart == H * cols) {
                bias_act_bwd_partial<T, Op, true, AHEAD>(rows, cols, dy, cols, x, H * cols, bias, dx, H * cols,
                                                         rowsPerPart, part, H * cols, op);
                return;
            }
        }
        bias_act_bwd_partial<T, Op, true, AHEAD>(rows, cols, dy, ldDy, x, ldX, bias, dx, ldDx, rowsPerPart, part,
                                                 ldPart, op);
    } else {
        bias_act_bwd_partial<T, Op, false, AHEAD>(rows, cols, dy, ldDy, x, ldX, bias, dx, ldDx, rowsPerPart, part,
                                                  ldPart, op);
    }
}

}  // namespace ubuf

#define UBUF_ACTIVATION_KERNELS(SUFFIX, T)                                                                       \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, T* y, long long ldY) {     \
        const T* const in[1] = {x};                                                                              \
        const long long ldIn[1] = {ldX};                                                                         \
        T* const out[1] = {y};                                                                                   \
        const long long ldOut[1] = {ldY};                                                                        \
        ubuf::map_elements<T, 1, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::GeluFwd());                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,              \
                           long long ldX, T* dx, long long ldDx) {                                               \
        const T* const in[2] = {dy, x};                                                                          \
        const long long ldIn[2] = {ldDy, ldX};                                                                   \
        T* const out[1] = {dx};                                                                                  \
        const long long ldOut[1] = {ldDx};                                                                       \
        ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::GeluBwd());                          \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_fwd_dense_##SUFFIX(long long n, const T* x, T* y) {                                                \
        const T* const in[1] = {x};                                                                              \
        T* const out[1] = {y};                                                                                   \
        ubuf::map_dense<T, 1, 1>(n, in, out, ubuf::GeluFwd());                                                   \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_gelu_bwd_dense_##SUFFIX(long long n, const T* dy, const T* x, T* dx) {                                  \
        const T* const in[2] = {dy, x};                                                                          \
        T* const out[1] = {dx};                                                                                  \
        ubuf::map_dense<T, 2, 1>(n, in, out, ubuf::GeluBwd());                                                   \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_bias_gelu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* bias,        \
                                T* y, long long ldY, T* pre, long long ldPre) {                                  \
        const T* const in[2] = {x, bias};                                                                        \
        const long long ldIn[2] = {ldX, 0}; /* ld 0: the bias row is broadcast */                                \
        if (pre == nullptr) {                                                                                    \
            T* const out[1] = {y};                                                                               \
            const long long ldOut[1] = {ldY};                                                                    \
            ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::BiasGeluFwd<T>());               \
        } else {                                                                                                 \
            T* const out[2] = {y, pre};                                                                          \
            const long long ldOut[2] = {ldY, ldPre};                                                             \
            ubuf::map_elements<T, 2, 2>(rows, cols, in, ldIn, out, ldOut, ubuf::BiasGeluFwdPre<T>());            \
        }                                                                                                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(ubuf::ACT_COLS_BLOCK, ubuf::ACT_COLS_BLOCKS_PER_SM)             \
    ubuf_bias_gelu_fwd_cols_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* bias,   \
                                     T* y, long long ldY) {                                                      \
        ubuf::bias_gelu_fwd_cols<T>(rows, cols, x, ldX, bias, y, ldY);                                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_swiglu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, T* y, long long ldY) {   \
        const T* const in[2] = {x, x + cols};                                                                    \
        const long long ldIn[2] = {ldX, ldX};                                                                    \
        T* const out[1] = {y};                                                                                   \
        const long long ldOut[1] = {ldY};                                                                        \
        ubuf::map_elements<T, 2, 1>(rows, cols, in, ldIn, out, ldOut, ubuf::SwigluFwd());                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_swiglu_bwd_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy, const T* x,            \
                             long long ldX, T* dx, long long ldDx) {                                             \
        const T* const in[3] = {dy, x, x + cols};                                                                \
        const long long ldIn[3] = {ldDy, ldX, ldX};                                                              \
        T* const out[2] = {dx, dx + cols};                                                                       \
        const long long ldOut[2] = {ldDx, ldDx};                                                                 \
        ubuf::map_elements<T, 3, 2>(rows, cols, in, ldIn, out, ldOut, ubuf::SwigluBwd());                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                               \
    ubuf_swiglu_fwd_words_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* bias,     \
                                   T* y, long long ldY) {                                                        \
        ubuf::swiglu_fwd_words<T>(rows, cols, x, ldX, bias, y, ldY);                                             \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(ubuf::ACT_BLOCK, ubuf::ACT_FWD_BLOCKS_PER_SM)                   \
    ubuf_bias_swiglu_fwd_##SUFFIX(long long rows, long long cols, const T* x, long long ldX, const T* bias,      \
                                  T* y, long long ldY, long long rowsPerPart) {                                  \
        ubuf::bias_swiglu_fwd_tiled<T>(rows, cols, x, ldX, bias, y, ldY, rowsPerPart);                           \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(ubuf::ACT_BLOCK, ubuf::ACT_GELU_BWD_BLOCKS_PER_SM)              \
    ubuf_bias_gelu_bwd_partial_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy,             \
                                        const T* x, long long ldX, const T* bias, T* dx, long long ldDx,         \
                                        long long rowsPerPart, float* part, long long ldPart) {                  \
        ubuf::bias_act_bwd_partial_any<T, ubuf::GeluGradOp, ubuf::ACT_GELU_BWD_AHEAD>(                           \
            rows, cols, dy, ldDy, x, ldX, bias, dx, ldDx, rowsPerPart, part, ldPart, ubuf::GeluGradOp());        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(ubuf::ACT_BLOCK, ubuf::ACT_SWIGLU_BWD_BLOCKS_PER_SM)            \
    ubuf_bias_swiglu_bwd_partial_##SUFFIX(long long rows, long long cols, const T* dy, long long ldDy,           \
                                          const T* x, long long ldX, const T* bias, T* dx, long long ldDx,       \
                                          long long rowsPerPart, float* part, long long ldPart) {                \
        ubuf::bias_act_bwd_partial_any<T, ubuf::SwigluGradOp, ubuf::ACT_SWIGLU_BWD_AHEAD>(                       \
            rows, cols, dy, ldDy, x, ldX, bias, dx, ldDx, rowsPerPart, part, ldPart, ubuf::SwigluGradOp());      \
    }

UBUF_ACTIVATION_KERNELS(f32, float)
UBUF_ACTIVATION_KERNELS(f16, __half)
UBUF_ACTIVATION_KERNELS(bf16, __nv_bfloat16)

#undef UBUF_ACTIVATION_KERNELS
