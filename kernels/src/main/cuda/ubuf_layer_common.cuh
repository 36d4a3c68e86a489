// Helpers of the layer kernels (LayerNorm, activations, column sums): a deterministic block sum, column groups
// that read the same elements in the same order on the vector and the scalar path, and an element-wise map over
// row-major views. Header-safe: everything is inline or a template (all .cu files form one translation unit).
#pragma once

#include "ubuf_common.cuh"

namespace ubuf {

constexpr int MAX_WARPS = UBUF_MAX_THREADS / 32;

// The block's dynamic shared memory as an array of T (the CPU emulator of the kernels defines its own).
#ifndef UBUF_DYNAMIC_SHARED
#define UBUF_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

// totals[0] + ... + totals[warps - 1], added in that order from 0. Blocks of 2, 4, 8 or 16 warps add a count known
// at compile time (the loads and adds unrolled); the loop over a count known only at run time compiled to about
// 30 instructions of remainder branches, paid a row by every thread of the row kernels (with the count fixed the
// LayerNorms took 0.973-0.997x the time, bench kernels on an H200). The same adds in the same order.
template <int W>
__device__ __forceinline__ float add_totals_fixed(const float* totals) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < W; ++w) total += totals[w];
    return total;
}

__device__ __forceinline__ float add_totals(const float* totals, int warps) {
    switch (warps) {
        case 2: return add_totals_fixed<2>(totals);
        case 4: return add_totals_fixed<4>(totals);
        case 8: return add_totals_fixed<8>(totals);
        case 16: return add_totals_fixed<16>(totals);
        default: {
            float total = 0.f;
            for (int w = 0; w < warps; ++w) total += totals[w];
            return total;
        }
    }
}

// warp_totals_sum (below) of a block of V * blockDim threads run by blockDim: thread t holds v[i], the value of thread
// t + i * blockDim, so warp w of the wider block is this block's warp w % (blockDim / 32), value w / (blockDim / 32).
// The same butterflies and the same order of warp totals as that block's warp_totals_sum, so the same bits;
// V * blockDim at most UBUF_MAX_THREADS (totals has MAX_WARPS slots).
template <int V>
__device__ __forceinline__ float warp_totals_sum_wide(float (&v)[V], float* totals) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    }
    const int warps = (int)(blockDim.x >> 5);
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int i = 0; i < V; ++i) totals[(threadIdx.x >> 5) + i * warps] = v[i];
    }
    __syncthreads();
    return add_totals(totals, V * warps);
}

// The block sums' one-barrier core: a butterfly within each warp, the warp totals into `totals` (a __shared__
// float[MAX_WARPS]), a barrier, then every thread adds the totals in warp order (each computes the same value, so no
// broadcast is needed): a fixed order for a given blockDim. blockDim.x must be a multiple of 32 (the callers return
// early otherwise), and every thread of the block must call it (it is only called outside thread-dependent
// branches). `totals` may be written again only after another barrier.
__device__ __forceinline__ float warp_totals_sum(float v, float* totals) {
    float one[1] = {v};
    return warp_totals_sum_wide<1>(one, totals);
}

// Two sums behind the one barrier, each in the order warp_totals_sum adds.
__device__ __forceinline__ void warp_totals_sum2(float& a, float& b, float* totalsA, float* totalsB) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if ((threadIdx.x & 31) == 0) {
        totalsA[threadIdx.x >> 5] = a;
        totalsB[threadIdx.x >> 5] = b;
    }
    __syncthreads();
    const int warps = (int)(blockDim.x >> 5);
    a = add_totals(totalsA, warps);
    b = add_totals(totalsB, warps);
}

// The sum of v over the block, returned to every thread (warp_totals_sum). `scratch` is a __shared__
// float[MAX_WARPS]; the call ends with a barrier, so the next call may reuse it at once.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const float total = warp_totals_sum(v, scratch);
    __syncthreads();
    return total;
}

// Two block sums with one pair of barriers.
__device__ __forceinline__ void block_sum2(float& a, float& b, float* scratchA, float* scratchB) {
    warp_totals_sum2(a, b, scratchA, scratchB);
    __syncthreads();
}

// block_sum and block_sum2 with one barrier instead of two: consecutive calls alternate between the two halves of
// each scratch (__shared__ float[2][MAX_WARPS]), `parity` flipping at every call, so a call's writes cannot race the
// previous call's reads of the same half (a thread writes a half again only after the next call's barrier, which
// every thread reaches after its reads). The same sums in the same order, so the same bits.
// block_sum_alternating (below) of a block V times as wide (warp_totals_sum_wide).
template <int V>
__device__ __forceinline__ float block_sum_wide_alternating(float (&v)[V], float (*scratch)[MAX_WARPS], int& parity) {
    float* half = scratch[parity];
    parity ^= 1;
    return warp_totals_sum_wide<V>(v, half);
}

__device__ __forceinline__ float block_sum_alternating(float v, float (*scratch)[MAX_WARPS], int& parity) {
    float one[1] = {v};
    return block_sum_wide_alternating<1>(one, scratch, parity);
}

__device__ __forceinline__ void block_sum2_alternating(float& a, float& b, float (*scratchA)[MAX_WARPS],
                                                       float (*scratchB)[MAX_WARPS], int& parity) {
    float* halfA = scratchA[parity];
    float* halfB = scratchB[parity];
    parity ^= 1;
    warp_totals_sum2(a, b, halfA, halfB);
}

// A row is read in groups of N consecutive columns (N = one 16-byte word of T); thread t of the block takes groups
// t, t + blockDim, ... and, within a group, columns in increasing order. The vector path (one 16-byte load per
// group) and the scalar path visit the same columns in the same order, so a reduction's result does not depend on
// the path. The last group of a row may be partial on the scalar path; `valid` is how many of its columns exist.
template <class T>
struct ColGroups {
    static constexpr int N = VecWidth<T, T>::N;
    static __device__ __forceinline__ i64 count(i64 cols) { return (cols + N - 1) / N; }
    static __device__ __forceinline__ int valid(i64 g, i64 cols) {
        const i64 left = cols - g * N;
        return left < N ? (int)left : N;
    }
    // v[i] = row[g*N + i] for i < valid (the rest 0).
    static __device__ __forceinline__ void load(const T* row, i64 g, int valid, bool vec, float (&v)[N]) {
        if (vec) {
            load_vec<T, N>(row + g * N, v);
        } else {
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = i < valid ? Elem<T>::load(row[g * N + i]) : 0.f;
        }
    }
    static __device__ __forceinline__ void store(T* row, i64 g, int valid, bool vec, const float (&v)[N]) {
        if (vec) {
            store_vec<T, N>(row + g * N, v);
        } else {
#pragma unroll
            for (int i = 0; i < N; ++i) {
                if (i < valid) row[g * N + i] = Elem<T>::store(v[i]);
            }
        }
    }
};

// One column group kept as its raw 16-byte word (4 registers, whatever T is), so a row kernel can hold its row in
// registers between the reduction and the write: the vector path loads the word, the scalar path assembles it from
// the group's valid elements (the rest are 0). unpack gives the same floats ColGroups::load would.
template <class T>
struct RawGroup {
    static constexpr int N = VecWidth<T, T>::N;
    static __device__ __forceinline__ uint4 load(const T* row, i64 g, int valid, bool vec) {
        if (vec) return reinterpret_cast<const uint4*>(row + g * N)[0];
        uint4 u;
        T* e = reinterpret_cast<T*>(&u);
#pragma unroll
        for (int i = 0; i < N; ++i) e[i] = i < valid ? row[g * N + i] : Elem<T>::store(0.f);
        return u;
    }
    template <bool CONVERTING = false>
    static __device__ __forceinline__ void unpack(const uint4& u, float (&v)[N]) {
        unpack_word_as<T, CONVERTING>(u, v);
    }
};

// y_j[i] = op(x_0[i], ..., x_{NIN-1}[i]) for j < NOUT, element by element over one vector of N: the element-wise
// maps' work on a vector they loaded.
template <int NIN, int NOUT, int N, class Op>
__device__ __forceinline__ void apply_vector(const float (&x)[NIN][N], float (&y)[NOUT][N], Op op) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        float xi[NIN], yi[NOUT];
#pragma unroll
        for (int j = 0; j < NIN; ++j) xi[j] = x[j][i];
        op(xi, yi);
#pragma unroll
        for (int j = 0; j < NOUT; ++j) y[j][i] = yi[j];
    }
}

// out_j[e] = op(in_0[e], ..., in_{NIN-1}[e]) for j < NOUT over n elements of dense tensors, in fp32, each output
// rounded once; outputs may be inputs exactly (as map_elements). When every pointer is 16-aligned a thread takes two
// 16-byte words a step (grid-stride; a grid of a thread per two words runs the loop once), and the elements past the
// last whole word (all of them otherwise) go one by one. Few registers live, so an SM holds its full 2048 threads:
// for GELU with tanhf (a long word to compute), map_elements' two-item walk (51 registers) ran 13-18% behind a
// copy of the same bytes on an H100. With two inputs
// a block takes its words consecutively, as PyTorch's vectorized kernel walks them: GELU's backward 0.95-0.97x the
// time of a thread's two words half the tensor apart; with one input (GELU's forward) that walk ran 1.01-1.02x
// slower, so a thread's two words stay half the tensor apart there (H200, bench/results/2026-11-28-session24).
template <class T, int NIN, int NOUT, class Op>
__device__ __forceinline__ void map_dense(i64 n, const T* const (&in)[NIN], T* const (&out)[NOUT], Op op) {
    if (n <= 0) return;
    constexpr int N = VecWidth<T, T>::N;
    bool vec = true;
#pragma unroll
    for (int j = 0; j < NIN; ++j) vec = vec && aligned16(in[j]);
#pragma unroll
    for (int j = 0; j < NOUT; ++j) vec = vec && aligned16(out[j]);
    const i64 words = vec ? n / N : 0;
    const i64 stride = grid_threads();
    // A thread's two words: blockDim apart in its block's 2 * blockDim (two inputs), or the grid's threads apart.
    const i64 apart = NIN > 1 ? (i64)blockDim.x : stride;
    const i64 first = NIN > 1 ? (i64)blockIdx.x * 2 * apart + threadIdx.x : global_thread();
    // Two words a thread, both loaded before either is computed: twice the bytes in flight (an H200 needs them).
    for (i64 w = first; w < words; w += 2 * stride) {
        const bool second = w + apart < words;
        uint4 raw[2][NIN];
#pragma unroll
        for (int j = 0; j < NIN; ++j) raw[0][j] = reinterpret_cast<const uint4*>(in[j])[w];
        if (second) {
#pragma unroll
            for (int j = 0; j < NIN; ++j) raw[1][j] = reinterpret_cast<const uint4*>(in[j])[w + apart];
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (h == 1 && !second) break;
            float x[NIN][N], y[NOUT][N];
#pragma unroll
            for (int j = 0; j < NIN; ++j) RawGroup<T>::unpack(raw[h][j], x[j]);
            apply_vector<NIN, NOUT, N>(x, y, op);
#pragma unroll
            for (int j = 0; j < NOUT; ++j) store_vec<T, N>(out[j] + (w + h * apart) * N, y[j]);
        }
    }
    for (i64 e = words * N + global_thread(); e < n; e += stride) {
        float xi[NIN], yi[NOUT];
#pragma unroll
        for (int j = 0; j < NIN; ++j) xi[j] = Elem<T>::load(in[j][e]);
        op(xi, yi);
#pragma unroll
        for (int j = 0; j < NOUT; ++j) out[j][e] = Elem<T>::store(yi[j]);
    }
}

// out_j[r][c] = op(in_0[r][c], ..., in_{NIN-1}[r][c]) for j < NOUT, over rows x cols, in fp32, each output rounded
// once. An input with ld 0 is a row broadcast (a bias). Every input of an element is read before any output of it
// is written, by the same thread, so an output may be an input exactly (same pointer and ld); partial overlaps are
// not allowed. 16-byte vectors when cols is a multiple of the vector width and every view's rows are 16-aligned.
// op(const float (&x)[NIN], float (&y)[NOUT]).
template <class T, int NIN, int NOUT, class Op>
__device__ __forceinline__ void map_elements(i64 rows, i64 cols, const T* const (&in)[NIN], const i64 (&ldIn)[NIN],
                                             T* const (&out)[NOUT], const i64 (&ldOut)[NOUT], Op op) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<T, T>::N;
    bool vec = cols % N == 0;
#pragma unroll
    for (int j = 0; j < NIN; ++j) vec = vec && rows_aligned16<T>(in[j], ldIn[j]);
#pragma unroll
    for (int j = 0; j < NOUT; ++j) vec = vec && rows_aligned16<T>(out[j], ldOut[j]);
    if (vec) {
        // Two items per thread per step, both loaded before either is stored: twice the loads in flight.
        auto apply = [&](const float (&x)[NIN][N], i64 row, i64 col) {
            float y[NOUT][N];
            apply_vector<NIN, NOUT, N>(x, y, op);
#pragma unroll
            for (int j = 0; j < NOUT; ++j) store_vec<T, N>(out[j] + row * ldOut[j] + col * N, y[j]);
        };
        for (RowColPair it(cols / N); it.a.row < rows; it.next()) {
            const bool hasB = it.b.row < rows;
            float xa[NIN][N], xb[NIN][N];
#pragma unroll
            for (int j = 0; j < NIN; ++j) load_vec<T, N>(in[j] + it.a.row * ldIn[j] + it.a.col * N, xa[j]);
            if (hasB) {
#pragma unroll
                for (int j = 0; j < NIN; ++j) load_vec<T, N>(in[j] + it.b.row * ldIn[j] + it.b.col * N, xb[j]);
            }
            apply(xa, it.a.row, it.a.col);
            if (hasB) apply(xb, it.b.row, it.b.col);
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            float xi[NIN], yi[NOUT];
#pragma unroll
            for (int j = 0; j < NIN; ++j) xi[j] = Elem<T>::load(in[j][it.row * ldIn[j] + it.col]);
            op(xi, yi);
#pragma unroll
            for (int j = 0; j < NOUT; ++j) out[j][it.row * ldOut[j] + it.col] = Elem<T>::store(yi[j]);
        }
    }
}

}  // namespace ubuf
