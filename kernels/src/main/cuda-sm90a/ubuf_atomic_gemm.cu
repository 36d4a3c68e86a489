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
// - Clusters (the _cc kernels): two CTAs share each B load through TMA multicast; see atomic_gemm.
// - Split-K (splits > 1): a tile's K steps are cut into `splits` near-equal ranges, one work unit each; work unit
//   u is tile u / splits, range u % splits (a tile's units are neighbours, so they run at the same time on
//   neighbouring CTAs). Every unit writes its fp32 partial to its own workspace slot, fences, and counts itself in
//   the tile's semaphore; the unit that counts last adds the partials in split order (0, 1, ..., splits - 1: the
//   same additions whichever unit is last, so results are bitwise reproducible), runs the epilogue (alpha, beta,
//   output type), resets the semaphore to 0 for the next launch, and only then does the producer hook count the
//   tile. No unit ever waits on another, so a partly resident grid cannot deadlock. The AG wait applies to every
//   unit (each loads A rows of its chunk). Units count even when the kernel has stopped, so the semaphores are
//   always back at 0 when the kernel ends.
// - Error slot: ERR_STATUS holds the launchId of the last launch that recorded an expired wait; a launch stops when
//   it reads its own id there. So the slot needs no clearing before each launch (the host passes a fresh id).
// Shapes need not be multiples of the tile: TMA zero-fills out-of-bounds reads, the stores are guarded.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "ubuf_wgmma_sm90a.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "ubuf_atomic_gemm.cu needs sm_90a (wgmma, setmaxnreg): compile with -gencode arch=compute_90a,code=sm_90a"
#endif

namespace ubuf_atomic {

constexpr int BM = 128;
constexpr int BK = 64;
constexpr int THREADS = 384;
constexpr int CONSUMER_WARPS = 8;
constexpr int GROUP_M = 8;
constexpr uint32_t A_STAGE_BYTES = BM * BK * 2;         // 16 KB: 128 rows of 128 bytes
constexpr uint32_t B_BOX_BYTES = 64 * BK * 2;           // bkn: one 64-column box, 64 K rows of 128 bytes
constexpr uint32_t MAX_SMEM_BYTES = 227 * 1024;         // a Hopper block's dynamic shared memory limit

// One tile configuration: BM x BN output tiles (BN = 256 the default; narrower ones for shapes with few tiles, see
// dev.ubuf.atomic.TileConfig, which mirrors BN, STAGES and SMEM_BYTES). As many ring stages as fit, at most 8.
// TM_: rows of a tile, 128 (cooperative: both consumer warpgroups share a tile) or 64 (ping-pong: one each).
template <int BN_, int TM_ = BM>
struct Config {
    static constexpr int BN = BN_;
    static constexpr int TM = TM_;
    static constexpr uint32_t A_BYTES = TM * BK * 2;        // TM rows of 128 bytes
    static constexpr uint32_t B_STAGE_BYTES = BN * BK * 2;  // BN rows (bnk) or BN / 64 boxes (bkn) of 128 bytes
    static constexpr uint32_t STAGE_BYTES = A_BYTES + B_STAGE_BYTES;
    static constexpr int FIT = static_cast<int>((MAX_SMEM_BYTES - 1024 - 2 * 8 * 8) / STAGE_BYTES);
    static constexpr int STAGES = FIT < 8 ? FIT : 8;
    // 1024 bytes of slack to align the ring to the 128-byte swizzle's 1024-byte period, the ring, 2 barriers a stage.
    static constexpr uint32_t SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
    static_assert(BN % 16 == 0 && BN >= 64 && BN <= 256, "wgmma m64nNk16 widths used here: 64..256, step 16");
    static_assert(STAGE_BYTES % 1024 == 0, "stages must keep the 1024-byte swizzle alignment");
    static_assert(STAGES >= 3, "a pipeline of at least 3 stages");
    static_assert(SMEM_BYTES <= MAX_SMEM_BYTES, "more shared memory than a Hopper block may have");
};
static_assert(Config<256>::STAGES == 4 && Config<256>::SMEM_BYTES == 197696, "the default tile is unchanged");
static_assert(Config<256, 64>::STAGES == 5, "ping-pong 64x256: 5 stages of 40 KB");

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value as a __grid_constant__ parameter.
struct alignas(64) TensorMap {
    unsigned long long words[16];
};

// errorSlot words (uint32): status (the launchId of the last launch whose wait expired), chunk, expected, observed,
// block.
enum { ERR_STATUS = 0, ERR_CHUNK = 1, ERR_EXPECTED = 2, ERR_OBSERVED = 3, ERR_BLOCK = 4 };

struct Tile {
    int chunk;
    int row0;    // first row of the tile
    int rowEnd;  // one past the last row this tile may store: min(row0 + BM, end of its chunk)
    int col0;
};

// Tile t of the schedule of TM x BN tiles; kept in step with dev.ubuf.atomic.TileSchedule (Java), which the CPU
// tests check. Groups span GROUP_M * 128 rows whatever TM is (16 row tiles of 64), the same L2 footprint.
template <int TM>
__device__ __forceinline__ Tile decode_tile(int t, int chunks, int firstChunk, int chunkRows, int mTilesPerChunk,
                                            int nTiles, int bn) {
    constexpr int GROUP = GROUP_M * BM / TM;
    const int tilesPerChunk = mTilesPerChunk * nTiles;
    const int slot = t / tilesPerChunk;
    const int q = t - slot * tilesPerChunk;
    const int chunk = (firstChunk + slot) % chunks;
    const int groupTiles = GROUP * nTiles;
    const int group = q / groupTiles;
    const int firstM = group * GROUP;
    const int groupM = min(GROUP, mTilesPerChunk - firstM);
    const int r = q - group * groupTiles;
    const int mt = firstM + r % groupM;
    const int nt = r / groupM;
    Tile tile;
    tile.chunk = chunk;
    tile.row0 = chunk * chunkRows + mt * TM;
    tile.rowEnd = min(tile.row0 + TM, (chunk + 1) * chunkRows);
    tile.col0 = nt * bn;
    return tile;
}

// The tile of cluster rank `rank` in pair p of a 2-CTA cluster launch: the pair is the p-th 2*TM-row tile of the
// schedule above (pairs never straddle a chunk), rank r takes its rows [r*TM, (r+1)*TM). A half wholly past its
// chunk's rows (row0 >= rowEnd) is a placeholder: its CTA still loads and multicasts its share of B, stores nothing.
// Kept in step with TileSchedule.clusterTilesOfBlock.
template <int TM>
__device__ __forceinline__ Tile decode_cluster_tile(int p, int rank, int chunks, int firstChunk, int chunkRows,
                                                    int mPairsPerChunk, int nTiles, int bn) {
    Tile tile = decode_tile<2 * TM>(p, chunks, firstChunk, chunkRows, mPairsPerChunk, nTiles, bn);
    tile.row0 += rank * TM;
    tile.rowEnd = min(tile.row0 + TM, tile.rowEnd);
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

// The multicast form: the box lands at the same shared offset in every CTA of ctaMask (this cluster's ranks) and
// completes tx bytes on the mbarrier at bar's offset in each of them.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const TensorMap* map, uint32_t bar, int c0, int c1,
                                                      uint16_t ctaMask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(ctaMask)
        : "memory");
}

__device__ __forceinline__ int cluster_ctarank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return static_cast<int>(r);
}

// One arrive on the mbarrier at this CTA's shared address bar, but in the cluster's CTA `rank`. Default semantics
// (release at CTA scope): it only says this warp's wgmmas have finished reading the stage (wgmma.wait_group came
// first); a cluster-scope release would make every arrive wait for this thread's memory operations cluster-wide.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, int rank) {
    asm volatile(
        "{\n"
        ".reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n"
        ::"r"(bar), "r"(rank)
        : "memory");
}

// Every thread of every CTA of the cluster.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
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
template <int R>
__device__ __forceinline__ void fence_accumulators(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) {
        asm volatile("" : "+f"(d[i])::"memory");
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
                             uint32_t* errorSlot, uint32_t launchId) {
    uint32_t observed = load_acquire_sys(arrival + chunk);
    if (static_cast<int32_t>(observed - expected) >= 0) {
        return true;
    }
    const uint64_t start = global_timer_ns();
    while (true) {
        if (load_volatile(errorSlot + ERR_STATUS) == launchId) {
            return false;
        }
        __nanosleep(64);
        observed = load_acquire_sys(arrival + chunk);
        if (static_cast<int32_t>(observed - expected) >= 0) {
            return true;
        }
        if (global_timer_ns() - start > timeoutNs) {
            // The first to record in this launch writes the details (the others see their own id come back).
            if (atomicExch(errorSlot + ERR_STATUS, launchId) != launchId) {
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

// Named barrier of the 256 consumer threads that also ORs a predicate over them: true in every thread when any
// thread passed true (bar.red; id 2, apart from id 1 of the producer hook).
__device__ __forceinline__ bool consumers_barrier_or(bool p) {
    uint32_t out;
    asm volatile(
        "{\n"
        ".reg .pred p, q;\n"
        "setp.ne.u32 p, %1, 0;\n"
        "bar.red.or.pred q, 2, 256, p;\n"
        "selp.u32 %0, 1, 0, q;\n"
        "}\n"
        : "=r"(out)
        : "r"(static_cast<uint32_t>(p))
        : "memory");
    return out != 0;
}

// Split-K partial tiles in the workspace: one slot of BM x BN fp32 per work unit, in accumulator order so that each
// of a warp's float4 accesses covers 512 contiguous bytes: float4 number (j * 256 + consumer thread) holds that
// thread's acc[4j .. 4j + 3].
__device__ __forceinline__ float4* partial_slot(float* workspace, long long unit, int bn) {
    return reinterpret_cast<float4*>(workspace + unit * static_cast<long long>(BM) * bn);
}

// One K step of one warpgroup: its 64 rows of A at sA times the stage's B at sB, BK / 16 wgmmas in one group.
template <int BN, bool F16, bool TRANS_B>
__device__ __forceinline__ void mma_step(float (&acc)[BN / 2], uint32_t sA, uint32_t sB) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        // A, K-major: 8-row groups 1024 bytes apart; the next 16 of K is 32 bytes on inside the swizzled row.
        const uint64_t da = smem_desc(sA + kk * 32, 16, 1024);
        // B, K-major (bnk): as A. N-major (bkn): 64-column blocks 8 KB apart (leading), 8-row K groups
        // 1024 bytes apart (stride); the next 16 of K is 16 rows of 128 bytes on.
        const uint64_t db = TRANS_B ? smem_desc(sB + kk * 2048, B_BOX_BYTES, 1024)
                                    : smem_desc(sB + kk * 32, 16, 1024);
        wgmma_m64nNk16<BN, F16, TRANS_B>(acc, da, db);
    }
    wgmma_commit();
}

__device__ __forceinline__ uint32_t bf16x2_bits(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// w[i] for i = 0..3 without indexing the array by a register (that would put it in local memory).
__device__ __forceinline__ uint32_t pick4(const uint32_t (&w)[4], int i) {
    return i == 0 ? w[0] : i == 1 ? w[1] : i == 2 ? w[2] : w[3];
}

// The bf16 epilogue of a tile wholly inside N with beta = 0 and 16-byte aligned rows: the four lanes of a quad hold
// one row's 8-column blocks i = 4g..4g+3 as bf16 pairs, 2 columns each; a 4 x 4 exchange of those words inside the
// quad (four shuffles, each lane sending word (q + r) % 4 and receiving from lane (q - r) % 4) leaves lane q with all
// 8 columns of block 4g + q, which it stores as one 16-byte write. A warp's store then covers 64 contiguous bytes of
// each of its 8 rows (whole 32-byte sectors) instead of 16: half the L2 sectors and a quarter of the store
// instructions of store_rows' pairs. Every lane shuffles; only the row guard predicates the store.
template <int BN>
__device__ __forceinline__ void store_rows_bf16_wide(const float (&acc)[BN / 2], __nv_bfloat16* __restrict__ d,
                                                     long long ldd, int rowBase, int rowEnd, int col0, int lane,
                                                     float alpha) {
    static_assert(BN % 32 == 0, "whole groups of four 8-column blocks");
    const int q = lane & 3;
    const int quadBase = lane & ~3;
#pragma unroll
    for (int g = 0; g < BN / 32; g++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            uint32_t w[4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int i = 4 * g + j;
                w[j] = bf16x2_bits(alpha * acc[4 * i + 2 * h], alpha * acc[4 * i + 2 * h + 1]);
            }
            uint32_t o[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int src = (q - r) & 3;
                const uint32_t got = __shfl_sync(0xffffffffu, pick4(w, (q + r) & 3), quadBase | src);
                // got is lane src's word for block 4g + q: columns 2 src, 2 src + 1 of that block.
                o[0] = src == 0 ? got : o[0];
                o[1] = src == 1 ? got : o[1];
                o[2] = src == 2 ? got : o[2];
                o[3] = src == 3 ? got : o[3];
            }
            const int row = rowBase + 8 * h;
            if (row < rowEnd) {
                __nv_bfloat16* p = d + static_cast<long long>(row) * ldd + col0 + 8 * (4 * g + q);
                *reinterpret_cast<uint4*>(p) = make_uint4(o[0], o[1], o[2], o[3]);
            }
        }
    }
}

// Epilogue of one warpgroup's 64 x BN accumulators. Layout of m64nNk16: thread (warp w, lane l) holds, for
// i = 0..N/8-1, rows w*16 + l/4 (acc[4i], acc[4i+1]) and that + 8 (acc[4i+2], acc[4i+3]), columns
// 8i + 2(l%4) + {0, 1}. rowBase is this thread's first row; rows from rowEnd and columns from n are not stored.
// bf16 tiles wholly inside N with beta = 0 and ldd a multiple of 8 take store_rows_bf16_wide (the conditions are the
// same in every lane of the warpgroup, as its shuffles need).
template <int BN, typename OutT>
__device__ __forceinline__ void store_rows(const float (&acc)[BN / 2], OutT* __restrict__ d, long long ldd, int n,
                                           int rowBase, int rowEnd, int col0, int lane, float alpha, float beta,
                                           bool paired) {
    if constexpr (sizeof(OutT) == 2 && BN % 32 == 0) {
        if (beta == 0.0f && (ldd & 7) == 0 && col0 + BN <= n) {
            store_rows_bf16_wide<BN>(acc, d, ldd, rowBase, rowEnd, col0, lane, alpha);
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < BN / 8; i++) {
        const int col = col0 + 8 * i + 2 * (lane % 4);
        if (col < n) {
            const bool both = col + 1 < n;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = rowBase + 8 * h;
                if (row < rowEnd) {
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

// The producer (one thread): loads every work unit of this CTA, in order, into the ring. Unit u is tile u / nSplits,
// K steps [kb0, kb1) of split u % nSplits; the AG wait comes before a unit's first A load.
// CLUSTER = 2 (the clustered cooperative kernels): "units" are pairs, decoded by decode_cluster_tile with
// mTilesPerChunk counting pairs; cluster c takes pairs c, c + clusters, ...; each CTA loads its own A rows (none for a
// placeholder) and half of the stage's B, multicast to both CTAs, so every stage's full barrier expects its A and the
// whole B.
template <typename C, bool TRANS_B, int CLUSTER = 1>
__device__ __forceinline__ void produce(const TensorMap& tmA, const TensorMap& tmB, uint32_t ring, uint32_t fullBars,
                                        uint32_t emptyBars, int n, int kTiles, int nSplits, int totalUnits,
                                        int chunks, int firstChunk, int chunkRows, int mTilesPerChunk, int nTiles,
                                        const uint32_t* arrival, uint32_t arrivalValue,
                                        unsigned long long timeoutNs, uint32_t* errorSlot, uint32_t launchId) {
    constexpr int BN = C::BN;
    constexpr int STAGES = C::STAGES;
    // Fetch both descriptors while the first tile is decoded, not on the first load's critical path.
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
    bool waiting = arrival != nullptr;
    const int rank = CLUSTER == 1 ? 0 : cluster_ctarank();
    uint32_t it = 0;
    for (int u = blockIdx.x / CLUSTER; u < totalUnits; u += gridDim.x / CLUSTER) {
        const int t = u / nSplits;
        const int split = u - t * nSplits;
        const int kb0 = static_cast<int>(static_cast<long long>(split) * kTiles / nSplits);
        const int kb1 = static_cast<int>(static_cast<long long>(split + 1) * kTiles / nSplits);
        const Tile tile = CLUSTER == 1
                              ? decode_tile<C::TM>(t, chunks, firstChunk, chunkRows, mTilesPerChunk, nTiles, BN)
                              : decode_cluster_tile<C::TM>(t, rank, chunks, firstChunk, chunkRows, mTilesPerChunk,
                                                           nTiles, BN);
        const bool placeholder = tile.row0 >= tile.rowEnd;
        if (waiting && !placeholder) {
            if (wait_arrival(arrival, tile.chunk, arrivalValue, timeoutNs, errorSlot, launchId)) {
                // The arrival was observed through the generic proxy; the A loads go through the async proxy.
                asm volatile("fence.proxy.async.global;" ::: "memory");
            } else {
                waiting = false;  // expired: keep the pipeline fed (consumers must not hang), store nothing
            }
        }
        // bkn: 64-column boxes wholly past N are not loaded (their columns are never stored).
        int bBoxes = 1;
        if constexpr (TRANS_B) {
            bBoxes = min(BN / 64, (n - tile.col0 + 63) / 64);
        }
        const uint32_t txBytes = (placeholder ? 0 : C::A_BYTES) + (TRANS_B ? bBoxes * B_BOX_BYTES : C::B_STAGE_BYTES);
        for (int kb = kb0; kb < kb1; kb++, it++) {
            const uint32_t stage = it % STAGES;
            const uint32_t phase = (it / STAGES) & 1;
            // With CLUSTER = 2 this barrier also counts the peer's consumers: its copy of the stage is free too.
            mbar_wait(emptyBars + 8 * stage, phase ^ 1);
            const uint32_t full = fullBars + 8 * stage;
            mbar_arrive_expect_tx(full, txBytes);
            const uint32_t sA = ring + stage * C::STAGE_BYTES;
            const uint32_t sB = sA + C::A_BYTES;
            if (!placeholder) {
                tma_load_2d(sA, &tmA, full, kb * BK, tile.row0);
            }
            if constexpr (CLUSTER == 1) {
                if constexpr (TRANS_B) {
                    for (int j = 0; j < bBoxes; j++) {
                        tma_load_2d(sB + j * B_BOX_BYTES, &tmB, full, tile.col0 + 64 * j, kb * BK);
                    }
                } else {
                    tma_load_2d(sB, &tmB, full, kb * BK, tile.col0);
                }
            } else {
                // Both CTAs' tiles share these B columns: each loads half (bnk: BN / 2 rows of N, the host's box;
                // bkn: every other 64-column box) into both.
                if constexpr (TRANS_B) {
                    for (int j = rank; j < bBoxes; j += 2) {
                        tma_load_2d_multicast(sB + j * B_BOX_BYTES, &tmB, full, tile.col0 + 64 * j, kb * BK, 0x3);
                    }
                } else {
                    tma_load_2d_multicast(sB + rank * (BN / 2) * 128, &tmB, full, kb * BK, tile.col0 + rank * (BN / 2),
                                          0x3);
                }
            }
        }
    }
    if constexpr (CLUSTER > 1) {
        // The producer's tail: wait until both CTAs' consumers have released every stage's last fill. Then the
        // peer has arrived on this CTA's barriers for the last time and holds every byte multicast to it, so this
        // CTA may exit (the producer thread is the last to: consumers leave after their last release).
        for (int s = 0; s < STAGES; s++, it++) {
            mbar_wait(emptyBars + 8 * (it % STAGES), ((it / STAGES) & 1) ^ 1);
        }
    }
}

// The CTA's ring in dynamic shared memory, aligned to the 128-byte swizzle's 1024-byte period: C::STAGES stages, then
// a full mbarrier per stage (the producer's arrive.expect_tx) and an empty one (emptyArrivals: one arrive per
// consumer warp that reads the stage). Thread 0 initialises the barriers and makes them visible to the async proxy
// (TMA) as well as to the other threads; every thread returns after the CTA's barrier.
struct Ring {
    uint32_t stages;  // shared address of stage 0
    uint32_t full;    // full[s] at full + 8 s: the stage's loads have landed
    uint32_t empty;   // empty[s] at empty + 8 s: its readers are done with it
};

template <typename C>
__device__ __forceinline__ Ring setup_ring(uint32_t emptyArrivals) {
    extern __shared__ uint8_t smem_raw[];
    Ring r;
    r.stages = (smem_addr(smem_raw) + 1023u) & ~1023u;
    r.full = r.stages + C::STAGES * C::STAGE_BYTES;
    r.empty = r.full + C::STAGES * 8;
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; s++) {
            mbar_init(r.full + 8 * s, 1);
            mbar_init(r.empty + 8 * s, emptyArrivals);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    return r;
}

// A consumer warp is done with a stage: one arrive on its empty barrier, in this CTA and (CLUSTER = 2) in the peer,
// whose producer multicasts into this CTA's copy of the stage too.
template <int CLUSTER>
__device__ __forceinline__ void release_stage(uint32_t emptyBar, int rank) {
    mbar_arrive(emptyBar);
    if constexpr (CLUSTER > 1) {
        mbar_arrive_remote(emptyBar, rank ^ 1);
    }
}

// CLUSTER = 2 (the _cc kernels, launched in clusters of two CTAs): the two CTAs of a cluster take the two 128-row
// halves of the same 256-row tile pair (decode_cluster_tile), so they read the same B columns; each producer loads its
// own A and half of B multicast into both CTAs: per FLOP, 2/3 of the unclustered kernel's L2 traffic and 2/5 of the
// ping-pong's. A stage is then written by both producers, so the consumers release it in both CTAs (empty barriers
// count 16 warps) and a producer refills it only when both copies are free; both CTAs run the same number of pairs
// and K steps, so their rings stay in step. A placeholder half (past its chunk) loads no A, skips its wgmmas, stores
// and counts nothing. Every thread of both CTAs meets at a cluster barrier after the barriers' initialisation (before
// any remote arrive or multicast); at the end each producer waits until both CTAs have released its every stage
// (produce's tail), so no CTA exits while its peer may still arrive on its barriers or it still owes the peer bytes.
// No split-K (the host refuses splits > 1; splits is not read).
template <int BN, bool F16, bool TRANS_B, typename OutT, int CLUSTER = 1>
__device__ __forceinline__ void atomic_gemm(const TensorMap& tmA, const TensorMap& tmB, OutT* __restrict__ d,
                                            long long ldd, int m, int n, int k, float alpha, float beta,
                                            int chunks, int firstChunk, const uint32_t* arrival,
                                            uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,
                                            uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot,
                                            int splits, float* workspace, uint32_t* semaphores,
                                            uint32_t launchId) {
    using C = Config<BN>;
    static_assert(!TRANS_B || BN % 64 == 0, "bkn loads B in 64-column boxes: BN must be a multiple of 64");
    constexpr int STAGES = C::STAGES;
    constexpr uint32_t STAGE_BYTES = C::STAGE_BYTES;
    constexpr int ACC = BN / 2;  // fp32 accumulators a consumer thread holds: its 64 x BN share, 128 threads
    static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of one or two CTAs");
    const Ring r = setup_ring<C>(CLUSTER * CONSUMER_WARPS);  // both consumer warpgroups read every stage, in each CTA
    if constexpr (CLUSTER > 1) {
        cluster_sync();  // the peer's barriers are initialised before anything arrives on them
    }
    const uint32_t ring = r.stages;
    const uint32_t fullBars = r.full;
    const uint32_t emptyBars = r.empty;

    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;

    const int chunkRows = m / chunks;
    const int mTilesPerChunk = (chunkRows + BM - 1) / BM;
    const int nTiles = (n + BN - 1) / BN;
    const int tilesPerChunk = mTilesPerChunk * nTiles;
    const int totalTiles = tilesPerChunk * chunks;
    const int kTiles = (k + BK - 1) / BK;
    // Every split gets at least one K step (the host never asks for more splits than steps; this keeps it so).
    const int nSplits = CLUSTER == 1 ? max(1, min(splits, kTiles)) : 1;
    // With CLUSTER = 2 the CTAs (clusters) iterate over pairs of row tiles.
    const int mUnitsPerChunk = CLUSTER == 1 ? mTilesPerChunk : (chunkRows + 2 * BM - 1) / (2 * BM);
    const int totalUnits = mUnitsPerChunk * nTiles * chunks * nSplits;
    const int rank = CLUSTER == 1 ? 0 : cluster_ctarank();

    if (warpgroup == 0) {
        // Producer: few registers; only thread 0 works, the other 127 leave after giving theirs back.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid != 0) {
            return;
        }
        produce<C, TRANS_B, CLUSTER>(tmA, tmB, ring, fullBars, emptyBars, n, kTiles, nSplits, totalUnits, chunks,
                                     firstChunk, chunkRows, mUnitsPerChunk, nTiles, arrival, arrivalValue, timeoutNs,
                                     errorSlot, launchId);
        return;
    }

    // Consumers: warpgroup 1 owns rows 0..63 of the tile, warpgroup 2 rows 64..127.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
    const int half = warpgroup - 1;
    const int ltid = tid - 128 * warpgroup;
    const int ctid = tid - 128;  // 0..255 over both consumer warpgroups
    const int warp = ltid / 32;
    const int lane = tid % 32;
    const bool paired = (ldd & 1) == 0;  // 2-element stores stay aligned (d itself is 16-byte aligned)
    float acc[ACC];
    uint32_t it = 0;
    for (int u = blockIdx.x / CLUSTER; u < totalUnits; u += gridDim.x / CLUSTER) {
        const int t = u / nSplits;
        const int split = u - t * nSplits;
        const int kb0 = static_cast<int>(static_cast<long long>(split) * kTiles / nSplits);
        const int kb1 = static_cast<int>(static_cast<long long>(split + 1) * kTiles / nSplits);
        const Tile tile = CLUSTER == 1
                              ? decode_tile<BM>(t, chunks, firstChunk, chunkRows, mTilesPerChunk, nTiles, BN)
                              : decode_cluster_tile<BM>(t, rank, chunks, firstChunk, chunkRows, mUnitsPerChunk,
                                                        nTiles, BN);
        const bool placeholder = tile.row0 >= tile.rowEnd;
#pragma unroll
        for (int i = 0; i < ACC; i++) {
            acc[i] = 0.0f;
        }
        fence_accumulators(acc);
        uint32_t previous = 0;
        for (int kb = kb0; kb < kb1; kb++, it++) {
            const uint32_t stage = it % STAGES;
            const uint32_t phase = (it / STAGES) & 1;
            mbar_wait(fullBars + 8 * stage, phase);
            const uint32_t sA = ring + stage * STAGE_BYTES + half * (A_STAGE_BYTES / 2);
            const uint32_t sB = ring + stage * STAGE_BYTES + A_STAGE_BYTES;
            if (!placeholder) {
                mma_step<BN, F16, TRANS_B>(acc, sA, sB);
            }
            // At most this k-step's group in flight: the previous one has finished reading its stage.
            wgmma_wait<1>();
            fence_accumulators(acc);
            if (kb > kb0 && lane == 0) {
                release_stage<CLUSTER>(emptyBars + 8 * previous, rank);
            }
            previous = stage;
        }
        wgmma_wait<0>();
        fence_accumulators(acc);
        if (lane == 0) {
            release_stage<CLUSTER>(emptyBars + 8 * previous, rank);  // kb1 > kb0: a unit has at least one K step
        }
        if (placeholder) {
            continue;
        }

        if (nSplits > 1) {
            // Split-K: publish this unit's partial, count it; the last of the tile's units reduces (see the top).
            float4* mine = partial_slot(workspace, u, BN);
#pragma unroll
            for (int j = 0; j < ACC / 4; j++) {
                const float4 v = make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
                __stcg(mine + j * 256 + ctid, v);
            }
            __threadfence();  // the partial is visible GPU-wide before the count that publishes it
            asm volatile("bar.sync 2, 256;" ::: "memory");
            bool last = false;
            if (ctid == 0) {
                uint32_t before;
                asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;"
                             : "=r"(before)
                             : "l"(semaphores + t)
                             : "memory");
                last = before == static_cast<uint32_t>(nSplits - 1);
                if (last) {
                    // Every unit of this tile has counted: back to 0 for the next launch (nobody reads it again).
                    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(semaphores + t), "r"(0u) : "memory");
                }
            }
            if (!consumers_barrier_or(last)) {
                continue;  // another unit of this tile finishes it
            }
            // Acquire side: the other units' partials were published before their counts; read them from L2 (ld.cg),
            // never from this SM's L1.
            __threadfence();
            const float4* parts = partial_slot(workspace, static_cast<long long>(t) * nSplits, BN);
            constexpr int SLOT_FLOAT4S = BM * BN / 4;
#pragma unroll
            for (int j = 0; j < ACC / 4; j++) {
                // Split order, whichever unit is last: ((p0 + p1) + p2) + ... This unit's own partial is read back
                // too: keeping it in registers across the barrier would spill (168 registers a thread).
                float4 sum = __ldcg(parts + j * 256 + ctid);
                for (int s = 1; s < nSplits; s++) {
                    const float4 p = __ldcg(parts + s * SLOT_FLOAT4S + j * 256 + ctid);
                    sum.x += p.x;
                    sum.y += p.y;
                    sum.z += p.z;
                    sum.w += p.w;
                }
                acc[4 * j] = sum.x;
                acc[4 * j + 1] = sum.y;
                acc[4 * j + 2] = sum.z;
                acc[4 * j + 3] = sum.w;
            }
        }

        // Epilogue (store_rows has the accumulator layout).
        const bool stopped = load_volatile(errorSlot + ERR_STATUS) == launchId;
        if (!stopped) {
            store_rows<BN>(acc, d, ldd, n, tile.row0 + half * 64 + warp * 16 + lane / 4, tile.rowEnd, tile.col0, lane,
                           alpha, beta, paired);
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

// Named barriers of the ping-pong kernel (0 is __syncthreads; 1 and 2 belong to the cooperative kernel), immediate
// ids (a register id makes ptxas reserve all 16): 3 + w holds warpgroup w's next main loop until the other
// warpgroup has issued its own (256 threads: 128 arrive, 128 sync); 5 + w is warpgroup w's own (128 threads),
// before the producer hook counts its tile.
constexpr int PP_BM = 64;  // rows of a ping-pong tile: one warpgroup's m64 wgmma

__device__ __forceinline__ void order_wait(int wg) {
    if (wg == 0) {
        asm volatile("bar.sync 3, 256;" ::: "memory");
    } else {
        asm volatile("bar.sync 4, 256;" ::: "memory");
    }
}

__device__ __forceinline__ void order_release_other(int wg) {
    if (wg == 0) {
        asm volatile("bar.arrive 4, 256;" ::: "memory");
    } else {
        asm volatile("bar.arrive 3, 256;" ::: "memory");
    }
}

__device__ __forceinline__ void warpgroup_barrier(int wg) {
    if (wg == 0) {
        asm volatile("bar.sync 5, 128;" ::: "memory");
    } else {
        asm volatile("bar.sync 6, 128;" ::: "memory");
    }
}

// The ping-pong variant: 64 x BN tiles, and the two consumer warpgroups take a CTA's tiles in turn (tile j of the
// CTA, j = 0, 1, ..., belongs to warpgroup j % 2). Their main loops alternate: warpgroup w starts tile j's only
// once the other has issued every wgmma of tile j - 1, so one warpgroup has the tensor cores while the other runs its
// epilogue (and the last wgmmas of the previous tile drain behind the next tile's first ones). The producer loads
// tiles in CTA order, so the ring's stages are consumed in the order they were filled: a stage of tile j is read
// by one warpgroup only (empty barriers count 4 warps) and the main loops' order keeps every full-barrier wait
// within one phase of the barrier. Each warpgroup counts the ring position from the tiles before its own.
// No split-K: the host refuses splits > 1 with this schedule (splits, workspace and semaphores are not read).
// Hooks as in the cooperative kernel: the producer waits for a tile's chunk before its first A load; a warpgroup
// counts its tile after its own stores, a fence and its own named barrier.
template <int BN, bool F16, bool TRANS_B, typename OutT>
__device__ __forceinline__ void atomic_gemm_pingpong(const TensorMap& tmA, const TensorMap& tmB,
                                                     OutT* __restrict__ d, long long ldd, int m, int n, int k,
                                                     float alpha, float beta, int chunks, int firstChunk,
                                                     const uint32_t* arrival, uint32_t arrivalValue,
                                                     unsigned long long timeoutNs, uint32_t* done,
                                                     uint32_t doneValue, uint32_t* tileCounters,
                                                     uint32_t* errorSlot, uint32_t launchId) {
    using C = Config<BN, PP_BM>;
    static_assert(!TRANS_B || BN % 64 == 0, "bkn loads B in 64-column boxes: BN must be a multiple of 64");
    constexpr int STAGES = C::STAGES;
    constexpr uint32_t STAGE_BYTES = C::STAGE_BYTES;
    constexpr int ACC = BN / 2;
    const Ring r = setup_ring<C>(CONSUMER_WARPS / 2);  // the 4 warps of the one warpgroup reading a stage
    const uint32_t ring = r.stages;
    const uint32_t fullBars = r.full;
    const uint32_t emptyBars = r.empty;

    const int tid = threadIdx.x;
    const int warpgroup = tid / 128;

    const int chunkRows = m / chunks;
    const int mTilesPerChunk = (chunkRows + PP_BM - 1) / PP_BM;
    const int nTiles = (n + BN - 1) / BN;
    const int tilesPerChunk = mTilesPerChunk * nTiles;
    const int totalTiles = tilesPerChunk * chunks;
    const int kTiles = (k + BK - 1) / BK;

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid != 0) {
            return;
        }
        produce<C, TRANS_B>(tmA, tmB, ring, fullBars, emptyBars, n, kTiles, 1, totalTiles, chunks, firstChunk,
                            chunkRows, mTilesPerChunk, nTiles, arrival, arrivalValue, timeoutNs, errorSlot, launchId);
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
    const int wg = warpgroup - 1;
    const int ltid = tid - 128 * warpgroup;
    const int warp = ltid / 32;
    const int lane = tid % 32;
    const bool paired = (ldd & 1) == 0;
    float acc[ACC];
    // Tile j of this CTA is t = blockIdx.x + j * gridDim.x; this warpgroup's are j = wg, wg + 2, ...
    int j = wg;
    for (int t = blockIdx.x + wg * gridDim.x; t < totalTiles; t += 2 * gridDim.x, j += 2) {
        const Tile tile = decode_tile<PP_BM>(t, chunks, firstChunk, chunkRows, mTilesPerChunk, nTiles, BN);
#pragma unroll
        for (int i = 0; i < ACC; i++) {
            acc[i] = 0.0f;
        }
        fence_accumulators(acc);
        if (j > 0) {
            order_wait(wg);  // the other warpgroup has issued tile j - 1
        }
        // Ring position: every tile before this one used kTiles stages.
        uint32_t it = static_cast<uint32_t>(j) * static_cast<uint32_t>(kTiles);
        uint32_t previous = 0;
        for (int kb = 0; kb < kTiles; kb++, it++) {
            const uint32_t stage = it % STAGES;
            const uint32_t phase = (it / STAGES) & 1;
            mbar_wait(fullBars + 8 * stage, phase);
            const uint32_t sA = ring + stage * STAGE_BYTES;
            mma_step<BN, F16, TRANS_B>(acc, sA, sA + C::A_BYTES);
            wgmma_wait<1>();
            fence_accumulators(acc);
            if (kb > 0 && lane == 0) {
                mbar_arrive(emptyBars + 8 * previous);
            }
            previous = stage;
        }
        // Every wgmma of tile j is issued: tile j + 1 (the other warpgroup's, if this CTA has one) may start.
        if (t + gridDim.x < totalTiles) {
            order_release_other(wg);
        }
        wgmma_wait<0>();
        fence_accumulators(acc);
        if (lane == 0) {
            mbar_arrive(emptyBars + 8 * previous);  // kTiles >= 1
        }

        const bool stopped = load_volatile(errorSlot + ERR_STATUS) == launchId;
        if (!stopped) {
            store_rows<BN>(acc, d, ldd, n, tile.row0 + warp * 16 + lane / 4, tile.rowEnd, tile.col0, lane, alpha,
                           beta, paired);
        }
        if (done != nullptr) {
            __threadfence();
            warpgroup_barrier(wg);
            if (ltid == 0 && !stopped) {
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

// Entry points: ubuf_atomic_gemm_<in>_<b layout>_<out> (the default 128 x 256 tile) and
// ubuf_atomic_gemm_<in>_<b layout>_<out>_n<BN> (128 x BN tiles). Launch with gridDim.x <= tiles (persistent),
// 384 threads, dynamic shared memory ubuf_atomic::Config<BN>::SMEM_BYTES (after cuFuncSetAttribute raised the limit).
// splits > 1: workspace holds tiles * splits * 128 * BN floats (16-byte aligned), semaphores one zeroed uint32 per
// tile (left zeroed by every launch); splits = 1 reads neither.
#define UBUF_ATOMIC_GEMM_ENTRY(NAME, BN, F16, TRANS_B, OUT_T)                                                     \
    extern "C" __global__ void __launch_bounds__(ubuf_atomic::THREADS, 1)                                        \
    NAME(const __grid_constant__ ubuf_atomic::TensorMap tmA, const __grid_constant__ ubuf_atomic::TensorMap tmB, \
         OUT_T* d, long long ldd, int m, int n, int k, float alpha, float beta, int chunks, int firstChunk,      \
         const uint32_t* arrival, uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,          \
         uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot, int splits, float* workspace,          \
         uint32_t* semaphores, uint32_t launchId) {                                                             \
        ubuf_atomic::atomic_gemm<BN, F16, TRANS_B, OUT_T>(tmA, tmB, d, ldd, m, n, k, alpha, beta, chunks,       \
                                                          firstChunk, arrival, arrivalValue, timeoutNs, done,   \
                                                          doneValue, tileCounters, errorSlot, splits,           \
                                                          workspace, semaphores, launchId);                     \
    }

// The ping-pong kernels (64 x BN tiles), <name>_pp<width suffix>: the same parameters; splits must be 1 (the host
// refuses more), workspace and semaphores are not read.
#define UBUF_ATOMIC_GEMM_PP_ENTRY(NAME, BN, F16, TRANS_B, OUT_T)                                                  \
    extern "C" __global__ void __launch_bounds__(ubuf_atomic::THREADS, 1)                                        \
    NAME(const __grid_constant__ ubuf_atomic::TensorMap tmA, const __grid_constant__ ubuf_atomic::TensorMap tmB, \
         OUT_T* d, long long ldd, int m, int n, int k, float alpha, float beta, int chunks, int firstChunk,      \
         const uint32_t* arrival, uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,          \
         uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot, int splits, float* workspace,          \
         uint32_t* semaphores, uint32_t launchId) {                                                             \
        ubuf_atomic::atomic_gemm_pingpong<BN, F16, TRANS_B, OUT_T>(tmA, tmB, d, ldd, m, n, k, alpha, beta,      \
                                                                   chunks, firstChunk, arrival, arrivalValue,   \
                                                                   timeoutNs, done, doneValue, tileCounters,    \
                                                                   errorSlot, launchId);                        \
    }

// The clustered cooperative kernels, <name>_cc<width suffix>: the same parameters; compiled with a cluster of two
// CTAs, so the grid must be even (the host launches 2 x min(co-resident clusters, tile pairs)); splits must be 1 (the
// host refuses more; splits, workspace and semaphores are not read). bnk: tmB's box is BN / 2 rows of N (each CTA
// loads half a tile's B); bkn: the usual 64 x 64 boxes.
#define UBUF_ATOMIC_GEMM_CC_ENTRY(NAME, BN, F16, TRANS_B, OUT_T)                                                  \
    extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(ubuf_atomic::THREADS, 1)              \
    NAME(const __grid_constant__ ubuf_atomic::TensorMap tmA, const __grid_constant__ ubuf_atomic::TensorMap tmB, \
         OUT_T* d, long long ldd, int m, int n, int k, float alpha, float beta, int chunks, int firstChunk,      \
         const uint32_t* arrival, uint32_t arrivalValue, unsigned long long timeoutNs, uint32_t* done,          \
         uint32_t doneValue, uint32_t* tileCounters, uint32_t* errorSlot, int splits, float* workspace,          \
         uint32_t* semaphores, uint32_t launchId) {                                                             \
        ubuf_atomic::atomic_gemm<BN, F16, TRANS_B, OUT_T, 2>(tmA, tmB, d, ldd, m, n, k, alpha, beta, chunks,    \
                                                             firstChunk, arrival, arrivalValue, timeoutNs, done, \
                                                             doneValue, tileCounters, errorSlot, 1, workspace,   \
                                                             semaphores, launchId);                              \
    }

// Every input type and output type of one B layout for one tile width: cooperative, ping-pong and clustered
// cooperative; SUFFIX is empty for the default width.
#define UBUF_ATOMIC_GEMM_TYPES(ENTRY, BN, LAYOUT, TRANS_B, SUFFIX)                                                \
    ENTRY(ubuf_atomic_gemm_bf16_##LAYOUT##_bf16##SUFFIX, BN, false, TRANS_B, __nv_bfloat16)                      \
    ENTRY(ubuf_atomic_gemm_bf16_##LAYOUT##_f32##SUFFIX, BN, false, TRANS_B, float)                               \
    ENTRY(ubuf_atomic_gemm_f16_##LAYOUT##_bf16##SUFFIX, BN, true, TRANS_B, __nv_bfloat16)                        \
    ENTRY(ubuf_atomic_gemm_f16_##LAYOUT##_f32##SUFFIX, BN, true, TRANS_B, float)
#define UBUF_ATOMIC_GEMM_LAYOUT(BN, LAYOUT, TRANS_B, SUFFIX)                                                      \
    UBUF_ATOMIC_GEMM_TYPES(UBUF_ATOMIC_GEMM_ENTRY, BN, LAYOUT, TRANS_B, SUFFIX)                                  \
    UBUF_ATOMIC_GEMM_TYPES(UBUF_ATOMIC_GEMM_PP_ENTRY, BN, LAYOUT, TRANS_B, _pp##SUFFIX)                         \
    UBUF_ATOMIC_GEMM_TYPES(UBUF_ATOMIC_GEMM_CC_ENTRY, BN, LAYOUT, TRANS_B, _cc##SUFFIX)

// Kept in step with dev.ubuf.atomic.TileConfig: 256 (both layouts), 224 and 160 (bnk only: bkn needs BN % 64 == 0),
// 192 and 128 (both layouts).
UBUF_ATOMIC_GEMM_LAYOUT(256, bnk, false, )
UBUF_ATOMIC_GEMM_LAYOUT(256, bkn, true, )
UBUF_ATOMIC_GEMM_LAYOUT(224, bnk, false, _n224)
UBUF_ATOMIC_GEMM_LAYOUT(192, bnk, false, _n192)
UBUF_ATOMIC_GEMM_LAYOUT(192, bkn, true, _n192)
UBUF_ATOMIC_GEMM_LAYOUT(160, bnk, false, _n160)
UBUF_ATOMIC_GEMM_LAYOUT(128, bnk, false, _n128)
UBUF_ATOMIC_GEMM_LAYOUT(128, bkn, true, _n128)
