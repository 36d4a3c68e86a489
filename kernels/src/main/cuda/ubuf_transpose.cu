// The transpose of a matrix of bytes: FP8 codes of either format, so the other layout of an FP8 tensor (the one a
// backward GEMM needs; cuBLASLt runs FP8 only as A[m, k] B[n, k]^T) costs a read and a write of one byte an element,
// where dequantizing to fp32 and quantizing transposed moved ten. Exact by construction: bytes are copied.
#include "ubuf_common.cuh"

namespace ubuf {

// The vector tile: 64 x 64 bytes, x read 16 bytes a thread (a row's 64 bytes on 4 adjacent threads), y written 16
// bytes a thread (16 rows of x gathered from a column of the tile).
constexpr int BYTE_VTILE = 64;
// Shared rows of 68 bytes (17 words): the column reads of the write phase are at most 2-way bank conflicts.
constexpr int BYTE_VTILE_LD = BYTE_VTILE + 4;
// The scalar tile: 32 x 32 bytes, one 32-column row of threads per tile row.
constexpr int BYTE_TILE = 32;

// The vector path: rows and cols multiples of 16, every row of x and of y 16-byte aligned. blockDim.x must be 256.
__device__ __forceinline__ void transpose_bytes_vec(i64 rows, i64 cols, const unsigned char* x, i64 ldX,
                                                    unsigned char* y, i64 ldY) {
    __shared__ __align__(16) unsigned char tile[BYTE_VTILE][BYTE_VTILE_LD];
    const i64 tileRows = (rows + BYTE_VTILE - 1) / BYTE_VTILE;
    const i64 tileCols = (cols + BYTE_VTILE - 1) / BYTE_VTILE;
    const int i = (int)(threadIdx.x >> 2);      // load phase: the tile row; write phase: the tile column
    const int k = (int)(threadIdx.x & 3u);      // which 16 bytes of the 64
    // The loop bounds are the same for every thread of a block, so every thread reaches each barrier.
    for (i64 t = blockIdx.x; t < tileRows * tileCols; t += gridDim.x) {
        const i64 r0 = (t / tileCols) * BYTE_VTILE;
        const i64 c0 = (t % tileCols) * BYTE_VTILE;
        {
            const i64 r = r0 + i;
            const i64 c = c0 + 16 * k;
            if (r < rows && c < cols) {
                const uint4 u = *reinterpret_cast<const uint4*>(x + r * ldX + c);
                // 4-byte stores: a shared row is 68 bytes, so 16-byte alignment holds only every fourth row.
                unsigned* s = reinterpret_cast<unsigned*>(&tile[i][16 * k]);
                s[0] = u.x;
                s[1] = u.y;
                s[2] = u.z;
                s[3] = u.w;
            }
        }
        __syncthreads();
        {
            const i64 yr = c0 + i;       // a row of y is a column of x
            const i64 yc = r0 + 16 * k;
            if (yr < cols && yc < rows) {
                uint4 u;
                unsigned char* q = reinterpret_cast<unsigned char*>(&u);
#pragma unroll
                for (int e = 0; e < 16; ++e) q[e] = tile[16 * k + e][i];
                *reinterpret_cast<uint4*>(y + yr * ldY + yc) = u;
            }
        }
        __syncthreads();
    }
}

// y [cols, rows] = x^T for x [rows, cols]; x and y must not overlap. The vector path where the shapes and alignments
// allow (see transpose_bytes_vec) and blockDim is 256, else 32 x 32 byte tiles element by element (blockDim.x a
// multiple of 32). Both give the same bytes.
__device__ __forceinline__ void transpose_bytes(i64 rows, i64 cols, const unsigned char* x, i64 ldX,
                                                unsigned char* y, i64 ldY) {
    if (rows <= 0 || cols <= 0 || (blockDim.x & 31u) != 0) return;
    if (blockDim.x == 256 && rows % 16 == 0 && cols % 16 == 0 && aligned16(x) && ldX % 16 == 0 && aligned16(y)
        && ldY % 16 == 0) {
        transpose_bytes_vec(rows, cols, x, ldX, y, ldY);
        return;
    }
    __shared__ unsigned char tile[BYTE_TILE][BYTE_TILE + 4];
    const int lane = (int)(threadIdx.x & 31u);
    const int rowsPerPass = (int)(blockDim.x / 32u);
    const i64 tileRows = (rows + BYTE_TILE - 1) / BYTE_TILE;
    const i64 tileCols = (cols + BYTE_TILE - 1) / BYTE_TILE;
    for (i64 t = blockIdx.x; t < tileRows * tileCols; t += gridDim.x) {
        const i64 r0 = (t / tileCols) * BYTE_TILE;
        const i64 c0 = (t % tileCols) * BYTE_TILE;
        for (int i = (int)(threadIdx.x / 32u); i < BYTE_TILE; i += rowsPerPass) {
            const i64 r = r0 + i;
            const i64 c = c0 + lane;
            if (r < rows && c < cols) tile[i][lane] = x[r * ldX + c];
        }
        __syncthreads();
        for (int i = (int)(threadIdx.x / 32u); i < BYTE_TILE; i += rowsPerPass) {
            const i64 yr = c0 + i;
            const i64 yc = r0 + lane;
            if (yr < cols && yc < rows) y[yr * ldY + yc] = tile[lane][i];
        }
        __syncthreads();
    }
}

}  // namespace ubuf

extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
    ubuf_fp8_transpose(long long rows, long long cols, const unsigned char* x, long long ldX, unsigned char* y,
                       long long ldY) {
    ubuf::transpose_bytes(rows, cols, x, ldX, y, ldY);
}
