// FP8 (E4M3, E5M2) quantization with per-tensor scales: quantize (optionally also writing the transpose, the layout
// the backward GEMMs need), dequantize, amax, and the scale from an amax (current scaling on the device).
// Conversions are cuda_fp8.h's: round to nearest even, saturating to the largest finite value (__NV_SATFINITE),
// NaN stays NaN. An amax is folded into *amax with atomicMax on the float's bits: for non-negative floats the int
// order is the float order, and a NaN (0x7fc00000 once fabsf clears its sign) beats every number, so it sticks.
#include "ubuf_common.cuh"
#include <cuda_fp8.h>

namespace ubuf {

typedef unsigned char fp8_t;

template <int KIND> struct Fp8Kind;
template <> struct Fp8Kind<0> { static constexpr __nv_fp8_interpretation_t value = __NV_E4M3; };
template <> struct Fp8Kind<1> { static constexpr __nv_fp8_interpretation_t value = __NV_E5M2; };

template <int KIND>
__device__ __forceinline__ fp8_t fp8_store(float v) {
    return (fp8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, Fp8Kind<KIND>::value);
}

template <int KIND>
__device__ __forceinline__ float fp8_load(fp8_t v) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)v, Fp8Kind<KIND>::value);
    return __half2float(__half(h));  // every fp8 value is exact in fp16
}

// |v| as int bits: the order of non-negative floats, NaN above infinity.
__device__ __forceinline__ int abs_bits(float v) {
    return __float_as_int(fabsf(v));
}

// Folds this thread's amax bits into *amax: a warp maximum, the block's maximum over its warps, then one atomic per
// block (blockDim a multiple of 32; every thread of the block must call it). One atomic per warp made a grid of
// eight 256-thread blocks an SM queue 64 same-address atomics an SM at the end of a short kernel.
__device__ __forceinline__ void amax_commit(float* amax, int local) {
    __shared__ int warpMax[32];
    const int lane = (int)(threadIdx.x & 31u);
    const int warp = (int)(threadIdx.x >> 5);
    const int w = __reduce_max_sync(0xffffffffu, local);
    if (lane == 0) warpMax[warp] = w;
    __syncthreads();
    if (warp == 0) {
        const int b = __reduce_max_sync(0xffffffffu, lane < (int)(blockDim.x >> 5) ? warpMax[lane] : 0);
        if (lane == 0 && b > 0) atomicMax(reinterpret_cast<int*>(amax), b);
    }
}

__device__ __forceinline__ void store_scale_inverse(const float* scale, float* scaleInv) {
    if (scaleInv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *scaleInv = 1.0f / *scale;
}

// y = fp8(x * scale); *amax = max(*amax, max |x|) when amax is given; *scaleInv = 1 / scale when given.
// Vector path (cols a multiple of 16, x's rows 16-byte aligned, y's rows 16-byte aligned): 16 elements per item,
// one 16-byte store of y; otherwise one element per item. Both give the same bytes.
template <class T, int KIND>
__device__ __forceinline__ void quantize(i64 rows, i64 cols, const T* x, i64 ldX, const float* scale, fp8_t* y,
                                         i64 ldY, float* amax, float* scaleInv) {
    if (rows <= 0 || cols <= 0) return;
    const float s = *scale;
    int local = 0;
    constexpr int V = 16;
    if (cols % V == 0 && rows_aligned16<T>(x, ldX) && rows_aligned16<fp8_t>(y, ldY)) {
        for (RowColIter it(cols / V); it.row < rows; it.next()) {
            float v[V];
            load_vec<T, V>(x + it.row * ldX + it.col * V, v);
            uint4 u;
            fp8_t* q = reinterpret_cast<fp8_t*>(&u);
#pragma unroll
            for (int i = 0; i < V; ++i) {
                local = max(local, abs_bits(v[i]));
                q[i] = fp8_store<KIND>(v[i] * s);
            }
            *reinterpret_cast<uint4*>(y + it.row * ldY + it.col * V) = u;
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            const float v = Elem<T>::load(x[it.row * ldX + it.col]);
            local = max(local, abs_bits(v));
            y[it.row * ldY + it.col] = fp8_store<KIND>(v * s);
        }
    }
    if (amax != nullptr) amax_commit(amax, local);
    store_scale_inverse(scale, scaleInv);
}

// The scalar transpose tile: 32 x 32 elements, one 32-column row of threads per tile row.
constexpr int TILE = 32;
// The vector transpose tile: 64 x 64 elements; x is read 8 elements (one 16-byte load of bf16/fp16, two of fp32)
// per thread, y written 8 bytes and yT 16 bytes (16 rows of x) per thread.
constexpr int VTILE = 64;
// Shared rows of VTILE + 4 bytes: 17 words, so the column reads of the yT phase are at most 2-way bank conflicts.
constexpr int VTILE_LD = VTILE + 4;

// The vector path of quantize_transpose: rows a multiple of 16, cols of 8, x's rows 16-byte aligned, y's (when
// given) 8-byte aligned, yT's 16-byte aligned. Returns this thread's amax bits. blockDim.x must be 256.
template <class T, int KIND>
__device__ __forceinline__ int quantize_transpose_vec(i64 rows, i64 cols, const T* x, i64 ldX, float s, fp8_t* y,
                                                      i64 ldY, fp8_t* yT, i64 ldYT) {
    __shared__ __align__(16) fp8_t tile[VTILE][VTILE_LD];
    const i64 tileRows = (rows + VTILE - 1) / VTILE;
    const i64 tileCols = (cols + VTILE - 1) / VTILE;
    int local = 0;
    // The loop bounds are the same for every thread of a block, so every thread reaches each barrier.
    for (i64 t = blockIdx.x; t < tileRows * tileCols; t += gridDim.x) {
        const i64 r0 = (t / tileCols) * VTILE;
        const i64 c0 = (t % tileCols) * VTILE;
        // 64 rows x 8 groups of 8 columns: two items per thread.
#pragma unroll
        for (int pass = 0; pass < 2; ++pass) {
            const int item = (int)threadIdx.x + pass * 256;
            const int i = item >> 3;
            const int j = item & 7;
            const i64 r = r0 + i;
            const i64 c = c0 + 8 * j;
            if (r < rows && c < cols) {
                float v[8];
                load_vec<T, 8, true>(x + r * ldX + c, v);  // converting: unpack_word's note
                uint2 u;
                fp8_t* q = reinterpret_cast<fp8_t*>(&u);
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    local = max(local, abs_bits(v[e]));
                    q[e] = fp8_store<KIND>(v[e] * s);
                }
                if (y != nullptr) *reinterpret_cast<uint2*>(y + r * ldY + c) = u;
                // 4-byte stores: a shared row is 68 bytes, so 8-byte alignment holds only for even rows.
                reinterpret_cast<unsigned*>(&tile[i][8 * j])[0] = u.x;
                reinterpret_cast<unsigned*>(&tile[i][8 * j])[1] = u.y;
            }
        }
        __syncthreads();
        {
            // 64 columns x 4 chunks of 16 rows: one item per thread, a yT row's 4 chunks on adjacent threads.
            const int cc = (int)(threadIdx.x >> 2);
            const int k = (int)(threadIdx.x & 3);
            const i64 tr = c0 + cc;       // a row of yT is a column of x
            const i64 tc = r0 + 16 * k;
            if (tr < cols && tc < rows) {
                uint4 u;
                fp8_t* q = reinterpret_cast<fp8_t*>(&u);
#pragma unroll
                for (int e = 0; e < 16; ++e) q[e] = tile[16 * k + e][cc];
                *reinterpret_cast<uint4*>(yT + tr * ldYT + tc) = u;
            }
        }
        __syncthreads();
    }
    return local;
}

// As quantize, and yT [cols, rows] = the transpose of y; y itself only when given. Tiles go through shared memory
// so both the reads of x and the writes of yT are row-wise: 64 x 64 with 8- and 16-byte accesses where the shapes
// and alignments allow (see quantize_transpose_vec) and blockDim is 256, else 32 x 32 element by element
// (blockDim.x a multiple of 32). Both give the same bytes.
template <class T, int KIND>
__device__ __forceinline__ void quantize_transpose(i64 rows, i64 cols, const T* x, i64 ldX, const float* scale,
                                                   fp8_t* y, i64 ldY, fp8_t* yT, i64 ldYT, float* amax,
                                                   float* scaleInv) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31u) != 0) return;
    const float s = *scale;
    const bool yOk = y == nullptr || (((reinterpret_cast<uintptr_t>(y) | (uintptr_t)ldY) & 7u) == 0);
    if (blockDim.x == 256 && rows % 16 == 0 && cols % 8 == 0 && rows_aligned16<T>(x, ldX) && yOk
        && rows_aligned16<fp8_t>(yT, ldYT)) {
        const int local = quantize_transpose_vec<T, KIND>(rows, cols, x, ldX, s, y, ldY, yT, ldYT);
        if (amax != nullptr) amax_commit(amax, local);
        store_scale_inverse(scale, scaleInv);
        return;
    }
    __shared__ fp8_t tile[TILE][TILE + 4];
    const int lane = (int)(threadIdx.x & 31u);
    const int rowsPerPass = (int)(blockDim.x / 32u);
    const i64 tileRows = (rows + TILE - 1) / TILE;
    const i64 tileCols = (cols + TILE - 1) / TILE;
    int local = 0;
    // The loop bounds are the same for every thread of a block, so every thread reaches each barrier.
    for (i64 t = blockIdx.x; t < tileRows * tileCols; t += gridDim.x) {
        const i64 r0 = (t / tileCols) * TILE;
        const i64 c0 = (t % tileCols) * TILE;
        for (int i = (int)(threadIdx.x / 32u); i < TILE; i += rowsPerPass) {
            const i64 r = r0 + i;
            const i64 c = c0 + lane;
            if (r < rows && c < cols) {
                const float v = Elem<T>::load(x[r * ldX + c]);
                local = max(local, abs_bits(v));
                const fp8_t q = fp8_store<KIND>(v * s);
                if (y != nullptr) y[r * ldY + c] = q;
                tile[i][lane] = q;
            }
        }
        __syncthreads();
        for (int i = (int)(threadIdx.x / 32u); i < TILE; i += rowsPerPass) {
            const i64 tr = c0 + i;    // a row of yT is a column of x
            const i64 tc = r0 + lane;
            if (tr < cols && tc < rows) yT[tr * ldYT + tc] = tile[lane][i];
        }
        __syncthreads();
    }
    if (amax != nullptr) amax_commit(amax, local);
    store_scale_inverse(scale, scaleInv);
}

// y = round_T(decode(x) * scaleInv).
template <int KIND, class T>
__device__ __forceinline__ void dequantize(i64 rows, i64 cols, const fp8_t* x, i64 ldX, const float* scaleInv, T* y,
                                           i64 ldY) {
    if (rows <= 0 || cols <= 0) return;
    const float s = *scaleInv;
    for (RowColIter it(cols); it.row < rows; it.next()) {
        y[it.row * ldY + it.col] = Elem<T>::store(fp8_load<KIND>(x[it.row * ldX + it.col]) * s);
    }
}

// *amax = max(*amax, max |x|): current scaling's reduction before the quantization.
template <class T>
__device__ __forceinline__ void amax_only(i64 rows, i64 cols, const T* x, i64 ldX, float* amax) {
    if (rows <= 0 || cols <= 0) return;
    int local = 0;
    for (RowColIter it(cols); it.row < rows; it.next()) {
        local = max(local, abs_bits(Elem<T>::load(x[it.row * ldX + it.col])));
    }
    amax_commit(amax, local);
}

}  // namespace ubuf

#define UBUF_FP8_QUANTIZE_KERNELS(TNAME, T, FNAME, KIND)                                                           \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS) ubuf_fp8_quantize_##TNAME##_to_##FNAME(         \
        long long rows, long long cols, const T* x, long long ldX, const float* scale, unsigned char* y,           \
        long long ldY, float* amax, float* scaleInv) {                                                             \
        ubuf::quantize<T, KIND>(rows, cols, x, ldX, scale, y, ldY, amax, scaleInv);                                \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                                 \
        ubuf_fp8_quantize_transpose_##TNAME##_to_##FNAME(long long rows, long long cols, const T* x, long long ldX, \
                                                         const float* scale, unsigned char* y, long long ldY,      \
                                                         unsigned char* yT, long long ldYT, float* amax,           \
                                                         float* scaleInv) {                                        \
        ubuf::quantize_transpose<T, KIND>(rows, cols, x, ldX, scale, y, ldY, yT, ldYT, amax, scaleInv);            \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS) ubuf_fp8_dequantize_##FNAME##_to_##TNAME(       \
        long long rows, long long cols, const unsigned char* x, long long ldX, const float* scaleInv, T* y,        \
        long long ldY) {                                                                                           \
        ubuf::dequantize<KIND, T>(rows, cols, x, ldX, scaleInv, y, ldY);                                           \
    }

UBUF_FP8_QUANTIZE_KERNELS(f32, float, e4m3, 0)
UBUF_FP8_QUANTIZE_KERNELS(f16, __half, e4m3, 0)
UBUF_FP8_QUANTIZE_KERNELS(bf16, __nv_bfloat16, e4m3, 0)
UBUF_FP8_QUANTIZE_KERNELS(f32, float, e5m2, 1)
UBUF_FP8_QUANTIZE_KERNELS(f16, __half, e5m2, 1)
UBUF_FP8_QUANTIZE_KERNELS(bf16, __nv_bfloat16, e5m2, 1)

#undef UBUF_FP8_QUANTIZE_KERNELS

#define UBUF_FP8_AMAX_KERNEL(TNAME, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                                 \
        ubuf_fp8_amax_##TNAME(long long rows, long long cols, const T* x, long long ldX, float* amax) {           \
        ubuf::amax_only<T>(rows, cols, x, ldX, amax);                                                              \
    }

UBUF_FP8_AMAX_KERNEL(f32, float)
UBUF_FP8_AMAX_KERNEL(f16, __half)
UBUF_FP8_AMAX_KERNEL(bf16, __nv_bfloat16)

#undef UBUF_FP8_AMAX_KERNEL

// Current scaling on the device (one thread): scale = fp8Max / amax, FLT_MAX where that overflows, 1 when the amax
// is 0, infinite or NaN (dev.ubuf.fp8.Fp8Recipe.CurrentScaling); scaleInv = 1 / scale.
extern "C" __global__ void ubuf_fp8_scale_from_amax(const float* amax, float fp8Max, float* scale, float* scaleInv) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const float a = *amax;
    float s = 1.0f;
    if (a > 0.0f && !isinf(a)) {
        s = fp8Max / a;
        if (isinf(s)) s = 3.402823466e38f;  // FLT_MAX
    }
    *scale = s;
    if (scaleInv != nullptr) *scaleInv = 1.0f / s;
}

// Delayed scaling's end of a step on the device (dev.ubuf.fp8.ScalingState.update with
// Fp8Recipe.DelayedScaling.scale, bit for bit), a block per slot of the context's scale table:
//   table   fp32 cells `stride` floats apart: scale[i], then scaleInv[n + i], then amax[2n + i] (the step's amax,
//           already the maximum over the TP group)
//   window  [n][history] fp32: each slot's amax window; `current` is the running step's column (zero on entry)
//   fp8Max  [n] fp32: each slot's format's largest finite value
// The step's amax goes into the running column; the amax used is that column (mostRecent) or the window's maximum
// (a NaN anywhere gives NaN); the next scale is fp8Max / amax / 2^margin (FLT_MAX where that overflows), the previous
// one kept when the amax is 0, infinite or NaN; its inverse beside it. Then the next column and the table's amax are
// zeroed for the next step. blockDim: a power of two up to 1024.
// steps: null, or the count of steps ended so far on the device (then `current` is ignored and the running column is
// steps % history): a step replayed from a CUDA graph cannot carry a host-side column, so a graph-capturable context
// keeps the count on the device and ubuf_fp8_count_step advances it after this kernel.
namespace ubuf {
__device__ __forceinline__ float nan_max(float a, float b) {
    return (isnan(a) || isnan(b)) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}
}  // namespace ubuf

extern "C" __global__ void ubuf_fp8_delayed_update(float* table, int n, int stride, float* window, int history,
                                                   int current, int mostRecent, int margin, const float* fp8Max,
                                                   const unsigned long long* steps) {
    __shared__ float partial[1024];
    const int i = blockIdx.x;
    if (steps != nullptr && history > 0) current = (int)(*steps % (unsigned long long)history);
    if (i >= n || history < 1 || current < 0 || current >= history) return;
    float* w = window + (long long)i * history;
    float* amaxCell = table + (long long)(2 * n + i) * stride;
    if (threadIdx.x == 0) w[current] = ubuf::nan_max(w[current], *amaxCell);
    __syncthreads();
    float m = 0.0f;
    if (mostRecent) {
        m = w[current];
    } else {
        for (int j = threadIdx.x; j < history; j += blockDim.x) m = ubuf::nan_max(m, w[j]);
        partial[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) partial[threadIdx.x] = ubuf::nan_max(partial[threadIdx.x], partial[threadIdx.x + s]);
            __syncthreads();
        }
        m = partial[0];
    }
    if (threadIdx.x == 0) {
        float* scaleCell = table + (long long)i * stride;
        float s = *scaleCell;
        if (m > 0.0f && !isinf(m)) {
            s = scalbnf(fp8Max[i] / m, -margin);
            if (isinf(s)) s = 3.402823466e38f;  // FLT_MAX
        }
        *scaleCell = s;
        table[(long long)(n + i) * stride] = 1.0f / s;
        w[(current + 1) % history] = 0.0f;
        *amaxCell = 0.0f;
    }
}

// One more step ended on the device (ubuf_fp8_delayed_update's `steps`), after that kernel: one thread.
extern "C" __global__ void ubuf_fp8_count_step(unsigned long long* steps) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *steps += 1ULL;
}
