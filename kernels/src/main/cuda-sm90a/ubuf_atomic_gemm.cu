// ubuf_atomic_gemm.cu: the atomic GEMM, D = alpha * A * B + beta * D, for Hopper (sm_90a only).
//
// Built by build-fatbin-sm90a.sh into its own fatbin (ubuf_sm90a.fatbin): wgmma and setmaxnreg exist only on
// sm_90a, and a fatbin holding just that cubin leaves the driver no other image to pick on an H100/H200.
//
// Design (atomic-gemm/README.md has the contract and the Java side):
// - A is row-major [M, K] (K-major). B is either stored transposed [N, K] (K-major, "bnk": weights as torch stores
//   them) or row-major [K, N] (N-major, "bkn"). D is row-major [M, N] with leading dimension ldd, bf16 or fp32.
//   Inputs bf16 or fp16, fp32 accumulation.
// - A CTA computes one 128x256 tile at a time (BM x BN), K in steps of 64 (BK: 64 16-bit elements = 128 bytes, the
//   128-byte swizzle span). 384 threads: warpgroup 0 is the producer (one thread issues TMA loads), warpgroups 1
//   and 2 are consumers (each owns 64 rows of the tile: one wgmma m64n256k16 per 16 of K, 128 fp32 accumulators
//   per thread). A 4-stage shared-memory ring (48 KB a stage) with a full and an empty mbarrier per stage.
// - Persistent grid: CTA b takes tiles b, b + gridDim.x, ...; a tile index is decoded chunk first (chunks in the
//   order firstChunk, firstChunk + 1, ... mod chunks), then grouped raster inside the chunk (8 row tiles per
//   group, rows fastest) so concurrently running tiles share A rows and B columns in L2. Tiles never straddle a
//   chunk: a chunk has ceil(chunkRows / 128) row tiles and the last one's rows past the chunk are not stored.
// - Consumer hook (AG, arrival != 0): before the first A load of a tile of chunk c, the producer waits until
//   arrival[c] reaches arrivalValue (wrap-safe). A bounded spin on %globaltimer: past timeoutNs it records
//   {1, chunk, expected, observed, block} in errorSlot and stops waiting; then every CTA stops waiting and no tile
//   is stored any more (the kernel ends in about one timeout; the host reports the slot).
// - Producer hook (RS, done != 0): after a tile is stored, its threads fence, meet at a named barrier, and one
//   thread counts the tile in tileCounters[c] (zeroed by the host before the launch); the chunk's last tile
//   raises done[c] to doneValue with a system-scope release, so a copy engine waiting on it sees the chunk's data.
// Shapes need not be multiples of the tile: TMA zero-fills out-of-bounds reads, the stores are guarded.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "ubuf_atomic_gemm.cu needs sm_90a (wgmma, setmaxnreg): compile with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace ubuf_atomic {

constexpr int BM = 128;
constexpr int BN = 256;
constexpr int BK = 64;
constexpr int STAGES = 4;
constexpr int THREADS = 384;
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_M = 8;
constexpr uint32_t A_STAGE_BYTES = BM * BK * 2;         // 16 KB: 128 rows of 128 bytes
constexpr uint32_t B_STAGE_BYTES = BN * BK * 2;         // 32 KB
constexpr uint32_t B_BOX_BYTES = 64 * BK * 2;           // bkn: one 64-column box, 64 K rows of 128 bytes
constexpr uint32_t STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
// 1024 bytes of slack to align the ring to the 128-byte swizzle's 1024-byte period, the ring, 2 barriers a stage.
constexpr uint32_t SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
static_assert(STAGE_BYTES % 1024 == 0, "stages must keep the 1024-byte swizzle alignment");
static_assert(SMEM_BYTES <= 227 * 1024, "more shared memory than a Hopper block may have");  // AtomicGemmKernel.SMEM_BYTES

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value as a __grid_constant__ parameter.
struct alignas(64) TensorMap {
    unsigned long long words[16];
};

// errorSlot words (uint32): status (0 = fine, 1 = arrival wait expired), chunk, expected, observed, block.
enum { ERR_STATUS = 0, ERR_CHUNK = 1, ERR_EXPECTED = 2, ERR_OBSERVED = 3, ERR_BLOCK = 4 };

struct Tile {
    int chunk;
    int row0;    // first row of the tile
    int rowEnd;  // one past the last row this tile may store: min(row0 + BM, end of its chunk)
    int col0;
};

// Tile t of the schedule; kept in step with dev.ubuf.atomic.TileSchedule (Java), which the CPU tests check.
__device__ __forceinline__ Tile decode_tile(int t, int chunks, int firstChunk, int chunkRows, int mTilesPerChunk,
                                            int nTiles) {
    const int tilesPerChunk = mTilesPerChunk * nTiles;
    const int slot = t / tilesPerChunk;
    const int q = t - slot * tilesPerChunk;
    const int chunk = (firstChunk + slot) % chunks;
    const int groupTiles = GROUP_M * nTiles;
    const int group = q / groupTiles;
    const int firstM = group * GROUP_M;
    const int groupM = min(GROUP_M, mTilesPerChunk - firstM);
    const int r = q - group * groupTiles;
    const int mt = firstM + r % groupM;
    const int nt = r / groupM;
    Tile tile;
    tile.chunk = chunk;
    tile.row0 = chunk * chunkRows + mt * BM;
    tile.rowEnd = min(tile.row0 + BM, (chunk + 1) * chunkRows);
    tile.col0 = nt * BN;
    return tile;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Waits until the phase with the given parity has completed. Parity 1 on a fresh barrier returns at once (the
// phase before the first counts as completed): that is how the producer's first pass finds every stage free.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t ready;
    do {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(ready)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!ready);
}

// A 2-D TMA load of box {c0 (innermost), c1} into shared memory, completing on bar's transaction count.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, uint32_t bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// wgmma shared-memory matrix descriptor, 128-byte swizzle (layout type 1), base offset 0 (tiles 1024-aligned).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t leadingBytes, uint32_t strideBytes) {
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4)
           | (static_cast<uint64_t>((leadingBytes & 0x3FFFF) >> 4) << 16)
           | (static_cast<uint64_t>((strideBytes & 0x3FFFF) >> 4) << 32)
           | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// Ties the accumulators to this point of the instruction stream, so the compiler neither reads them before a
// wgmma.wait_group nor writes them after a later wgmma was issued (the registers are the tensor cores' meanwhile).
__device__ __forceinline__ void fence_accumulators(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; i++) {
        asm volatile("" : "+f"(d[i])::"memory");
    }
}

// One wgmma m64n256k16 with fp32 accumulation: d += A(desc a) * B(desc b). TRANS_B: B is N-major in shared memory.
template <bool F16, bool TRANS_B>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t a, uint64_t b) {
    if constexpr (!F16 && !TRANS_B) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "setp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1, 0, 0;\n"
            "}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(a), "l"(b), "r"(1));
    } else if constexpr (!F16 && TRANS_B) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "setp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1, 0, 1;\n"
            "}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(a), "l"(b), "r"(1));
    } else if constexpr (F16 && !TRANS_B) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "setp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1, 0, 0;\n"
            "}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(a), "l"(b), "r"(1));
    } else {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "setp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1, 0, 1;\n"
            "}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(a), "l"(b), "r"(1));
    }
}

__device__ __forceinline__ uint64_t global_timer_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint32_t load_volatile(const uint32_t* p) {
    return *reinterpret_cast<const volatile uint32_t*>(p);
}

// The consumer hook: waits until arrival[chunk] reaches expected (wrap-safe). False when the wait expired (this
// thread recorded it, unless another got there first) or another CTA's already had: then nothing more is stored.
__device__ bool wait_arrival(const uint32_t* arrival, int chunk, uint32_t expected, uint64_t timeoutNs,
                             uint32_t* errorSlot) {
    uint32_t observed = load_acquire_sys(arrival + chunk);
    if (static_cast<int32_t>(observed - expected) >= 0) {
        return true;
    }
    const uint64_t start = global_timer_ns();
    while (true) {
        if (load_volatile(errorSlot + ERR_STATUS) != 0) {
            return false;
        }
        __nanosleep(64);
        observed = load_acquire_sys(arrival + chunk);
        if (static_cast<int32_t>(observed - expected) >= 0) {
            return true;
        }
        if (global_timer_ns() - start > timeoutNs) {
            if (atomicCAS(errorSlot + ERR_STATUS, 0u, 1u) == 0u) {
                errorSlot[ERR_CHUNK] = static_cast<uint32_t>(chunk);
                errorSlot[ERR_EXPECTED] = expected;
                errorSlot[ERR_OBSERVED] = observed;
                errorSlot[ERR_BLOCK] = blockIdx.x;
                __threadfence();
            }
            return false;
        }
    }
}

template <typename OutT>
__device__ __forceinline__ void store_pair(OutT* p, float v0, float v1, bool both, bool paired) {
    if constexpr (sizeof(OutT) == 4) {
        if (both && paired) {
            *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        } else {
            p[0] = v0;
            if (both) p[1] = v1;
        }
    } else {
        if (both && paired) {
            *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v0, v1);
        } else {
            p[0] = __float2bfloat16_rn(v0);
            if (both) p[1] = __float2bfloat16_rn(v1);
        }
    }
}

template <typename OutT>
__device__ __forceinline__ float load_old(const OutT* p) {
    if constexpr (sizeof(OutT) == 4) {
        return *p;
    } else {
        return __bfloat162float(*p);
    }
}

template <bool F16, bool TRANS_B, typename OutT>
__device__ __forceinline__ void atomic_gemm(const TensorMap& tmA, const TensorMap& tmB, OutT* __restrict__ d,
                                            long long ldd, int m, int n, int k, float alpha, float beta,
                                            int chunks, int firstChunk, const uint32_t* arrival,
                                            uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,
                                            uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot) {
    extern __shared__ uint8_t smem_raw[];
    const uint32_t ring = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t fullBars = ring + STAGES * STAGE_BYTES;  // full[s]: the stage's loads have landed
    const uint32_t emptyBars = fullBars + STAGES * 8;       // empty[s]: both consumers are done reading it

    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;
    if (tid == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(fullBars + 8 * s, 1);                // the producer's arrive.expect_tx
            mbar_init(emptyBars + 8 * s, CONSUMER_WARPS);  // one arrive per consumer warp
        }
        // Make the initialised barriers visible to the async proxy (TMA) as well as to the other threads.
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    const int chunkRows = m / chunks;
    const int mTilesPerChunk = (chunkRows + BM - 1) / BM;
    const int nTiles = (n + BN - 1) / BN;
    const int tilesPerChunk = mTilesPerChunk * nTiles;
    const int totalTiles = tilesPerChunk * chunks;
    const int kTiles = (k + BK - 1) / BK;

    if (warpgroup == 0) {
        // Producer: few registers; only thread 0 works, the other 127 leave after giving theirs back.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid != 0) {
            return;
        }
        bool waiting = arrival != nullptr;
        uint32_t it = 0;
        for (int t = blockIdx.x; t < totalTiles; t += gridDim.x) {
            const Tile tile = decode_tile(t, chunks, firstChunk, chunkRows, mTilesPerChunk, nTiles);
            if (waiting) {
                if (wait_arrival(arrival, tile.chunk, arrivalValue, timeoutNs, errorSlot)) {
                    // The arrival was observed through the generic proxy; the A loads go through the async proxy.
                    asm volatile("fence.proxy.async.global;" ::: "memory");
                } else {
                    waiting = false;  // expired: keep the pipeline fed (consumers must not hang), store nothing
                }
            }
            // bkn: 64-column boxes wholly past N are not loaded (their columns are never stored).
            int bBoxes = 1;
            if constexpr (TRANS_B) {
                bBoxes = min(4, (n - tile.col0 + 63) / 64);
            }
            const uint32_t txBytes = A_STAGE_BYTES + (TRANS_B ? bBoxes * B_BOX_BYTES : B_STAGE_BYTES);
            for (int kb = 0; kb < kTiles; kb++, it++) {
                const uint32_t stage = it % STAGES;
                const uint32_t phase = (it / STAGES) & 1;
                mbar_wait(emptyBars + 8 * stage, phase ^ 1);
                const uint32_t full = fullBars + 8 * stage;
                mbar_arrive_expect_tx(full, txBytes);
                const uint32_t sA = ring + stage * STAGE_BYTES;
                const uint32_t sB = sA + A_STAGE_BYTES;
                tma_load_2d(sA, &tmA, full, kb * BK, tile.row0);
                if constexpr (TRANS_B) {
                    for (int j = 0; j < bBoxes; j++) {
                        tma_load_2d(sB + j * B_BOX_BYTES, &tmB, full, tile.col0 + 64 * j, kb * BK);
                    }
                } else {
                    tma_load_2d(sB, &tmB, full, kb * BK, tile.col0);
                }
            }
        }
        return;
    }

    // Consumers: warpgroup 1 owns rows 0..63 of the tile, warpgroup 2 rows 64..127.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
    const int half = warpgroup - 1;
    const int ltid = tid - 128 * warpgroup;
    const int warp = ltid / 32;
    const int lane = tid % 32;
    const bool paired = (ldd & 1) == 0;  // 2-element stores stay aligned (d itself is 16-byte aligned)
    float acc[128];
    uint32_t it = 0;
    for (int t = blockIdx.x; t < totalTiles; t += gridDim.x) {
        const Tile tile = decode_tile(t, chunks, firstChunk, chunkRows, mTilesPerChunk, nTiles);
#pragma unroll
        for (int i = 0; i < 128; i++) {
            acc[i] = 0.0f;
        }
        fence_accumulators(acc);
        uint32_t previous = 0;
        for (int kb = 0; kb < kTiles; kb++, it++) {
            const uint32_t stage = it % STAGES;
            const uint32_t phase = (it / STAGES) & 1;
            mbar_wait(fullBars + 8 * stage, phase);
            const uint32_t sA = ring + stage * STAGE_BYTES + half * (A_STAGE_BYTES / 2);
            const uint32_t sB = ring + stage * STAGE_BYTES + A_STAGE_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) {
                // A, K-major: 8-row groups 1024 bytes apart; the next 16 of K is 32 bytes on inside the swizzled row.
                const uint64_t da = smem_desc(sA + kk * 32, 16, 1024);
                // B, K-major (bnk): as A. N-major (bkn): 64-column blocks 8 KB apart (leading), 8-row K groups
                // 1024 bytes apart (stride); the next 16 of K is 16 rows of 128 bytes on.
                const uint64_t db = TRANS_B ? smem_desc(sB + kk * 2048, B_BOX_BYTES, 1024)
                                            : smem_desc(sB + kk * 32, 16, 1024);
                wgmma_m64n256k16<F16, TRANS_B>(acc, da, db);
            }
            wgmma_commit();
            // At most this k-step's group in flight: the previous one has finished reading its stage.
            wgmma_wait<1>();
            fence_accumulators(acc);
            if (kb > 0 && lane == 0) {
                mbar_arrive(emptyBars + 8 * previous);
            }
            previous = stage;
        }
        wgmma_wait<0>();
        fence_accumulators(acc);
        if (lane == 0) {
            mbar_arrive(emptyBars + 8 * previous);
        }

        // Epilogue. Accumulator layout of m64nNk16: thread (warp w, lane l) holds, for i = 0..N/8-1, rows
        // w*16 + l/4 (acc[4i], acc[4i+1]) and that + 8 (acc[4i+2], acc[4i+3]), columns 8i + 2(l%4) + {0, 1}.
        const bool stopped = load_volatile(errorSlot + ERR_STATUS) != 0;
        if (!stopped) {
            const int rowBase = tile.row0 + half * 64 + warp * 16 + lane / 4;
#pragma unroll
            for (int i = 0; i < BN / 8; i++) {
                const int col = tile.col0 + 8 * i + 2 * (lane % 4);
                if (col < n) {
                    const bool both = col + 1 < n;
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int row = rowBase + 8 * h;
                        if (row < tile.rowEnd) {
                            OutT* p = d + static_cast<long long>(row) * ldd + col;
                            float v0 = alpha * acc[4 * i + 2 * h];
                            float v1 = alpha * acc[4 * i + 2 * h + 1];
                            if (beta != 0.0f) {
                                v0 = fmaf(beta, load_old(p), v0);
                                if (both) v1 = fmaf(beta, load_old(p + 1), v1);
                            }
                            store_pair(p, v0, v1, both, paired);
                        }
                    }
                }
            }
        }
        if (done != nullptr) {
            // Producer hook: the tile's stores, then one count per tile; the chunk's last tile raises done.
            __threadfence();
            asm volatile("bar.sync 1, 256;" ::: "memory");
            if (ltid == 0 && half == 0 && !stopped) {
                uint32_t before;
                asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;"
                             : "=r"(before)
                             : "l"(tileCounters + tile.chunk)
                             : "memory");
                if (before == static_cast<uint32_t>(tilesPerChunk - 1)) {
                    __threadfence_system();
                    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(done + tile.chunk), "r"(doneValue)
                                 : "memory");
                }
            }
        }
    }
}

}  // namespace ubuf_atomic

// Entry points: ubuf_atomic_gemm_<in>_<b layout>_<out>. Launch with gridDim.x <= tiles (persistent), 384 threads,
// dynamic shared memory ubuf_atomic::SMEM_BYTES (after cuFuncSetAttribute raised the limit).
#define UBUF_ATOMIC_GEMM_ENTRY(NAME, F16, TRANS_B, OUT_T)                                                         \
    extern "C" __global__ void __launch_bounds__(ubuf_atomic::THREADS, 1)                                        \
    NAME(const __grid_constant__ ubuf_atomic::TensorMap tmA, const __grid_constant__ ubuf_atomic::TensorMap tmB, \
         OUT_T* d, long long ldd, int m, int n, int k, float alpha, float beta, int chunks, int firstChunk,      \
         const uint32_t* arrival, uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,          \
         uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot) {                                     \
        ubuf_atomic::atomic_gemm<F16, TRANS_B, OUT_T>(tmA, tmB, d, ldd, m, n, k, alpha, beta, chunks,           \
                                                      firstChunk, arrival, arrivalValue, timeoutNs, done,       \
                                                      doneValue, tileCounters, errorSlot);                      \
    }

UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_bf16_bnk_bf16, false, false, __nv_bfloat16)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_bf16_bnk_f32, false, false, float)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_bf16_bkn_bf16, false, true, __nv_bfloat16)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_bf16_bkn_f32, false, true, float)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_f16_bnk_bf16, true, false, __nv_bfloat16)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_f16_bnk_f32, true, false, float)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_f16_bkn_bf16, true, true, __nv_bfloat16)
UBUF_ATOMIC_GEMM_ENTRY(ubuf_atomic_gemm_f16_bkn_f32, true, true, float)
