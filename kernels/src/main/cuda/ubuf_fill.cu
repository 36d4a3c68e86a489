// Fills: a bit pattern (zeroing, NaN poisoning of buffers a test expects to be overwritten) and
// reproducible uniform random matrices made on the device (benchmark inputs too large to upload).
#include "ubuf_common.cuh"

namespace ubuf {

// dst[0..n) = value. dst must be aligned to sizeof(E); the elements between 16-byte boundaries are written
// one by one, the rest as 16-byte words.
template <class E>
__device__ __forceinline__ void fill_elems(E* dst, i64 n, E value, uint4 word) {
    if (n <= 0) return;
    const i64 t = global_thread();
    const i64 stride = grid_threads();
    i64 head = (i64)(((16u - (reinterpret_cast<uintptr_t>(dst) & 15u)) & 15u) / sizeof(E));
    if (head > n) head = n;
    const i64 words = (n - head) * (i64)sizeof(E) / 16;
    const i64 tailStart = head + words * (i64)(16 / sizeof(E));
    for (i64 i = t; i < head; i += stride) dst[i] = value;
    uint4* body = reinterpret_cast<uint4*>(dst + head);
    for (i64 i = t; i < words; i += stride) body[i] = word;
    for (i64 i = tailStart + t; i < n; i += stride) dst[i] = value;
}

// The splitmix64 output function (Steele, Lea, Flood 2014; public-domain reference by Vigna).
__device__ __forceinline__ unsigned long long splitmix64_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

constexpr unsigned long long SPLITMIX64_GAMMA = 0x9E3779B97F4A7C15ull;

// Key of a row: output number row+1 of splitmix64 seeded with seed.
__device__ __forceinline__ unsigned long long random_row_key(unsigned long long seed, i64 row) {
    return splitmix64_mix(seed + SPLITMIX64_GAMMA * (unsigned long long)(row + 1));
}

// Element (row, col): output number col+1 of splitmix64 seeded with the row key; its top 24 bits m give
// (m - 2^23) * 2^-23 in [-1, 1) exactly, times scale rounded once (round-to-nearest-even fp32 multiply).
// dev.ubuf.kernels.DeviceRandom computes the same value on the host, bit for bit.
__device__ __forceinline__ float random_value(unsigned long long rowKey, i64 col, float scale) {
    unsigned long long h = splitmix64_mix(rowKey + SPLITMIX64_GAMMA * (unsigned long long)(col + 1));
    int m = (int)(h >> 40) - (1 << 23);
    float unit = __fmul_rn(__int2float_rn(m), 0x1p-23f);  // exact
    return __fmul_rn(unit, scale);
}

template <class T>
__device__ __forceinline__ void fill_random_rows(T* dst, i64 rows, i64 cols, i64 ld, unsigned long long seed,
                                                 float scale) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int N = VecWidth<T, T>::N;
    if (cols % N == 0 && rows_aligned16<T>(dst, ld)) {
        for (RowColIter it(cols / N); it.row < rows; it.next()) {
            const unsigned long long key = random_row_key(seed, it.row);
            const i64 c0 = it.col * N;
            float v[N];
#pragma unroll
            for (int i = 0; i < N; ++i) v[i] = random_value(key, c0 + i, scale);
            store_vec<T, N>(dst + it.row * ld + c0, v);
        }
    } else {
        for (RowColIter it(cols); it.row < rows; it.next()) {
            dst[it.row * ld + it.col] = Elem<T>::store(random_value(random_row_key(seed, it.row), it.col, scale));
        }
    }
}

}  // namespace ubuf

// Fill n elements of 1, 2 or 4 bytes with the low bits of `bits` (NaN poison: 0x7fc00000 fp32, 0x7e00 fp16,
// 0x7fc0 bf16).
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_fill_u8(void* dst, long long n, unsigned int bits) {
    const unsigned int b = bits & 0xffu;
    const unsigned int w = b * 0x01010101u;
    ubuf::fill_elems<unsigned char>(static_cast<unsigned char*>(dst), n, (unsigned char)b, make_uint4(w, w, w, w));
}

extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_fill_u16(void* dst, long long n, unsigned int bits) {
    const unsigned int h = bits & 0xffffu;
    const unsigned int w = h * 0x00010001u;
    ubuf::fill_elems<unsigned short>(static_cast<unsigned short*>(dst), n, (unsigned short)h, make_uint4(w, w, w, w));
}

extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_fill_u32(void* dst, long long n, unsigned int bits) {
    ubuf::fill_elems<unsigned int>(static_cast<unsigned int*>(dst), n, bits, make_uint4(bits, bits, bits, bits));
}

#define UBUF_FILL_RANDOM_KERNEL(NAME, T)                                                                 \
    extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)                                       \
    NAME(T* dst, long long rows, long long cols, long long ld, unsigned long long seed, float scale) {   \
        ubuf::fill_random_rows<T>(dst, rows, cols, ld, seed, scale);                                     \
    }

UBUF_FILL_RANDOM_KERNEL(ubuf_fill_random_f32, float)
UBUF_FILL_RANDOM_KERNEL(ubuf_fill_random_f16, __half)
UBUF_FILL_RANDOM_KERNEL(ubuf_fill_random_bf16, __nv_bfloat16)

#undef UBUF_FILL_RANDOM_KERNEL
