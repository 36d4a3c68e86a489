// Shared device helpers for the ubuf kernels: element conversions, 16-byte vector access and the
// division-free 2-D grid-stride iterator. Every .cu file in this directory includes this header; the build
// compiles all of them as one translation unit, so everything here is header-safe (inline / templates).
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

// Every kernel is written for 1-D blocks (and a 1-D grid) of at most this many threads; 256 is recommended.
// 512 rather than 1024 lets ptxas give the two-items-per-thread reductions up to 128 registers, so nothing
// spills; a launch with more threads per block fails with CUDA_ERROR_INVALID_VALUE.
#define UBUF_MAX_THREADS 512

namespace ubuf {

typedef long long i64;

// fp32 <-> element conversions; stores round once, to nearest even.
template <class T> struct Elem;
template <> struct Elem<float> {
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float v) { return v; }
};
template <> struct Elem<__half> {
    static __device__ __forceinline__ float load(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half store(float v) { return __float2half_rn(v); }
};
template <> struct Elem<__nv_bfloat16> {
    static __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// The fp32 values of one 16-byte word of T's elements, in order, each converted by Elem<T>::load.
template <class T>
__device__ __forceinline__ void unpack_word_converting(const uint4& u, float (&v)[16 / sizeof(T)]) {
    const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(T)); ++i) v[i] = Elem<T>::load(e[i]);
}

// The same values; bf16 widens by moving bits: an element's float is its 16 bits shifted up, so a 32-bit pair's low
// element is w << 16 and its high one w & 0xffff0000, one instruction each, where Elem<bf16>::load took two for the
// high one (a byte permute, then the shift). On an H200 (session 34) the LayerNorms, the bias add and the SwiGLU
// backward ran 0.93-0.97x their time so; the fused SwiGLU backward ran 1.12x slower and the FP8 quantize with
// transpose up to 1.025x, so those two keep the converting unpack (SwigluGradOp::CONVERTING_UNPACK, and load_vec's
// CONVERTING in quantize_transpose_vec).
template <class T>
__device__ __forceinline__ void unpack_word(const uint4& u, float (&v)[16 / sizeof(T)]) {
    unpack_word_converting<T>(u, v);
}

__device__ __forceinline__ float float_from_bits(uint32_t b) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(b);
#else
    float f;
    __builtin_memcpy(&f, &b, sizeof f);
    return f;
#endif
}

template <>
__device__ __forceinline__ void unpack_word<__nv_bfloat16>(const uint4& u, float (&v)[8]) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        v[2 * i] = float_from_bits(w[i] << 16);
        v[2 * i + 1] = float_from_bits(w[i] & 0xffff0000u);
    }
}

// unpack_word, or with CONVERTING unpack_word_converting.
template <class T, bool CONVERTING>
__device__ __forceinline__ void unpack_word_as(const uint4& u, float (&v)[16 / sizeof(T)]) {
    if (CONVERTING) {
        unpack_word_converting<T>(u, v);
    } else {
        unpack_word<T>(u, v);
    }
}

__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// A row-major matrix whose every row starts on a 16-byte boundary: true when the base is 16-aligned and a
// row of ld elements is a whole number of 16-byte words.
template <class T>
__device__ __forceinline__ bool rows_aligned16(const void* base, i64 ld) {
    return aligned16(base) && ((ld * (i64)sizeof(T)) & 15) == 0;
}

// Loads N consecutive elements of T (N * sizeof(T) a multiple of 16, p 16-aligned) as fp32 (unpack_word_as).
template <class T, int N, bool CONVERTING = false>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[N]) {
    static_assert((N * sizeof(T)) % 16 == 0, "vector must be whole 16-byte words");
    constexpr int WORDS = (int)(N * sizeof(T) / 16);
    constexpr int PER_WORD = (int)(16 / sizeof(T));
#pragma unroll
    for (int w = 0; w < WORDS; ++w) {
        uint4 u = reinterpret_cast<const uint4*>(p)[w];
        if (CONVERTING) {
            const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
            for (int i = 0; i < PER_WORD; ++i) out[w * PER_WORD + i] = Elem<T>::load(e[i]);
        } else {
            float v[PER_WORD];
            unpack_word<T>(u, v);
#pragma unroll
            for (int i = 0; i < PER_WORD; ++i) out[w * PER_WORD + i] = v[i];
        }
    }
}

// Stores N fp32 values as T (each rounded once) to N consecutive elements at p (16-aligned).
template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[N]) {
    static_assert((N * sizeof(T)) % 16 == 0, "vector must be whole 16-byte words");
    constexpr int WORDS = (int)(N * sizeof(T) / 16);
    constexpr int PER_WORD = (int)(16 / sizeof(T));
#pragma unroll
    for (int w = 0; w < WORDS; ++w) {
        uint4 u;
        T* e = reinterpret_cast<T*>(&u);
#pragma unroll
        for (int i = 0; i < PER_WORD; ++i) e[i] = Elem<T>::store(in[w * PER_WORD + i]);
        reinterpret_cast<uint4*>(p)[w] = u;
    }
}

__device__ __forceinline__ i64 global_thread() {
    return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ i64 grid_threads() {
    return (i64)gridDim.x * blockDim.x;
}

// Walks the items (row, col) of a rows x perRow grid, item i = row * perRow + col, from item `first` in steps
// of `stride` items (by default this thread's grid-stride sequence). One division at the start; each step then
// adds the stride's (rows, cols) with one carry, so the hot loop has no 64-bit division.
struct RowColIter {
    i64 row, col;
    i64 perRow, stepRows, stepCols;

    __device__ __forceinline__ RowColIter(i64 itemsPerRow, i64 first, i64 stride) : perRow(itemsPerRow) {
        row = first / perRow;
        col = first - row * perRow;
        stepRows = stride / perRow;
        stepCols = stride - stepRows * perRow;
    }

    __device__ __forceinline__ explicit RowColIter(i64 itemsPerRow)
        : RowColIter(itemsPerRow, global_thread(), grid_threads()) {}

    __device__ __forceinline__ void next() {
        row += stepRows;
        col += stepCols;
        if (col >= perRow) {
            col -= perRow;
            ++row;
        }
    }
};

// This thread's grid-stride items taken two at a time: `a` and `b` are one grid stride apart and each steps two,
// so a loop body can issue both items' loads before either store (two independent memory accesses in flight per
// thread; one is not enough to saturate HBM). `b` is past the end whenever `a` is.
struct RowColPair {
    RowColIter a, b;

    __device__ __forceinline__ explicit RowColPair(i64 itemsPerRow)
        : a(itemsPerRow, global_thread(), 2 * grid_threads()),
          b(itemsPerRow, global_thread() + grid_threads(), 2 * grid_threads()) {}

    __device__ __forceinline__ void next() {
        a.next();
        b.next();
    }
};

// Vector width (elements) of a kernel reading S and writing D: one 16-byte word of the narrower type, so
// both sides move whole 16-byte words (fp32 -> bf16 reads two words per source and writes one).
template <class S, class D>
struct VecWidth {
    static constexpr int N = (int)(16 / (sizeof(S) < sizeof(D) ? sizeof(S) : sizeof(D)));
};

}  // namespace ubuf
