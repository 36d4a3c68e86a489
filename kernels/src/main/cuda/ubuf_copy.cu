// SM-driven copy: the use_ce=false alternative to cuMemcpyAsync on the copy engine. dst (or src) may be a
// peer GPU's memory mapped into this context; the stores then travel over NVLink / PCIe.
#include "ubuf_common.cuh"

namespace ubuf {

// Words per thread per iteration: independent 16-byte loads in flight hide the latency of peer memory.
constexpr int COPY_UNROLL = 4;

__device__ __forceinline__ void copy_words(uint4* __restrict__ d, const uint4* __restrict__ s, i64 words) {
    const i64 stride = grid_threads();
    for (i64 i = global_thread(); i < words; i += COPY_UNROLL * stride) {
        uint4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            if (i + u * stride < words) v[u] = s[i + u * stride];
        }
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; ++u) {
            if (i + u * stride < words) d[i + u * stride] = v[u];
        }
    }
}

__device__ __forceinline__ void copy_bytes_scalar(unsigned char* __restrict__ d, const unsigned char* __restrict__ s,
                                                  i64 n) {
    const i64 stride = grid_threads();
    for (i64 i = global_thread(); i < n; i += stride) d[i] = s[i];
}

}  // namespace ubuf

// dst[0..bytes) = src[0..bytes). The ranges must not overlap (memcpy semantics). When dst and src have the
// same address modulo 16 (both 16-aligned in practice), the bytes before the first 16-byte boundary and after
// the last one are copied one by one and the rest as 16-byte words; otherwise every byte singly (slow).
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_copy_bytes(void* dst, const void* src, long long bytes) {
    using ubuf::i64;
    if (bytes <= 0) return;
    unsigned char* d = static_cast<unsigned char*>(dst);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    const uintptr_t misalign = reinterpret_cast<uintptr_t>(d) & 15u;
    if (misalign != (reinterpret_cast<uintptr_t>(s) & 15u)) {
        ubuf::copy_bytes_scalar(d, s, bytes);
        return;
    }
    i64 head = (i64)((16u - misalign) & 15u);
    if (head > bytes) head = bytes;
    const i64 words = (bytes - head) / 16;
    const i64 tailStart = head + words * 16;
    ubuf::copy_bytes_scalar(d, s, head);
    ubuf::copy_words(reinterpret_cast<uint4*>(d + head), reinterpret_cast<const uint4*>(s + head), words);
    ubuf::copy_bytes_scalar(d + tailStart, s + tailStart, bytes - tailStart);
}
