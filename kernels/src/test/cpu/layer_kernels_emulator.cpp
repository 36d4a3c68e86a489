// Runs the layer kernels' CUDA source on the CPU, so their indexing, vector/scalar paths, block reductions and
// partial sums are checked without a GPU. A minimal emulation of the execution model: blocks run one after another,
// the threads of a block as std::threads; __syncthreads is a barrier; __shfl_xor_sync and __shfl_sync exchange
// through a per-block array between two barriers (the kernels call them uniformly); __shared__ arrays are function
// statics, shared by the block's threads. Math functions are the host's (tanhf, expf, sqrtf), a few fp32 ulps from
// the device's.
//
// Build: g++ -std=c++20 -O2 -fno-strict-aliasing -pthread -I<cuda>/include -I kernels/src/main/cuda \
//        layer_kernels_emulator.cpp
// (-fno-strict-aliasing: the kernels read 16-byte words through uint4 casts, as CUDA code does; g++ -O2 would
// otherwise assume those loads cannot alias the element stores.)
// Output (stdout): cases of inputs and outputs as hex floats, which LayerKernelsEmulatedTest (layers module)
// compares with the float64 reference HostLayerMath:
//   case <name> <kernel-family> <dtype> <rows> <cols> <key>=<value>...
//   array <name> <count> <hex float>...
//   end
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

struct EmuDim {
    unsigned x = 1, y = 1, z = 1;
};
thread_local EmuDim emu_threadIdx;
EmuDim emu_blockIdx, emu_blockDim, emu_gridDim;
std::barrier<>* emu_barrier = nullptr;
float emu_exchange[1024];

#define threadIdx emu_threadIdx
#define blockIdx emu_blockIdx
#define blockDim emu_blockDim
#define gridDim emu_gridDim
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)

inline void __syncthreads() { emu_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float v, int laneMask) {
    const unsigned t = emu_threadIdx.x;
    emu_exchange[t] = v;
    emu_barrier->arrive_and_wait();
    const float r = emu_exchange[(t & ~31u) | ((t & 31u) ^ (unsigned)laneMask)];
    emu_barrier->arrive_and_wait();
    return r;
}

inline float __shfl_sync(unsigned, float v, int srcLane) {
    const unsigned t = emu_threadIdx.x;
    emu_exchange[t] = v;
    emu_barrier->arrive_and_wait();
    const float r = emu_exchange[(t & ~31u) | ((unsigned)srcLane & 31u)];
    emu_barrier->arrive_and_wait();
    return r;
}

// Dynamic shared memory: one buffer, as blocks run one at a time.
alignas(16) unsigned char emu_dynamic_shared[256 * 1024];
#define UBUF_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(emu_dynamic_shared)

#include "ubuf_layernorm.cu"
#include "ubuf_colsum.cu"
#include "ubuf_activation.cu"
#include "ubuf_bias.cu"
#include "ubuf_train.cu"
#include "ubuf_transpose.cu"

namespace {

void launch(unsigned grid, unsigned block, const std::function<void()>& kernel) {
    emu_gridDim.x = grid;
    emu_blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b) {
        emu_blockIdx.x = b;
        std::barrier<> bar((std::ptrdiff_t)block);
        emu_barrier = &bar;
        std::vector<std::thread> threads;
        threads.reserve(block);
        for (unsigned t = 0; t < block; ++t) {
            threads.emplace_back([t, &kernel] {
                emu_threadIdx.x = t;
                kernel();
            });
        }
        for (auto& th : threads) th.join();
    }
    emu_barrier = nullptr;
}

// A row-major matrix of T in a buffer with `pad` spare elements in front (so the base can be misaligned on
// purpose) and NaN-free guard values after every row's end up to ld.
template <class T>
struct Mat {
    long long rows, cols, ld;
    std::vector<T> buf;
    T* base;
    Mat(long long r, long long c, long long ldIn, int offset) : rows(r), cols(c), ld(ldIn),
            buf((size_t)(r * ldIn + offset + 16)) {
        // 16-byte aligned start, then `offset` elements in.
        uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
        size_t skip = ((16 - (p & 15)) & 15) / sizeof(T);
        base = buf.data() + skip + offset;
        for (auto& e : buf) e = ubuf::Elem<T>::store(-777.f);  // guard: a kernel writing outside shows
    }
    T* at(long long r, long long c) { return base + r * ld + c; }
};

unsigned long long rngState = 0x9E3779B97F4A7C15ull;
float uniform(float scale) {
    rngState = rngState * 6364136223846793005ull + 1442695040888963407ull;
    const double u = (double)(rngState >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    return (float)((2 * u - 1) * scale);
}

template <class T>
void fill(Mat<T>& m, float scale) {
    for (long long r = 0; r < m.rows; ++r)
        for (long long c = 0; c < m.cols; ++c) *m.at(r, c) = ubuf::Elem<T>::store(uniform(scale));
}

template <class T>
void put(const char* name, Mat<T>& m) {
    printf("array %s %lld", name, m.rows * m.cols);
    for (long long r = 0; r < m.rows; ++r)
        for (long long c = 0; c < m.cols; ++c) printf(" %a", (double)ubuf::Elem<T>::load(*m.at(r, c)));
    printf("\n");
}

void putF(const char* name, const std::vector<float>& v, long long n) {
    printf("array %s %lld", name, n);
    for (long long i = 0; i < n; ++i) printf(" %a", (double)v[(size_t)i]);
    printf("\n");
}

// Every element outside the view (padding between rows, guards) must still hold the guard value.
template <class T>
bool guardsIntact(Mat<T>& m) {
    const T* end = m.base + (m.rows - 1) * m.ld + m.cols;
    for (const T* p = m.buf.data(); p < m.buf.data() + m.buf.size(); ++p) {
        const bool inside = p >= m.base && p < end && ((p - m.base) % m.ld) < m.cols;
        if (!inside && ubuf::Elem<T>::load(*p) != ubuf::Elem<T>::load(ubuf::Elem<T>::store(-777.f))) return false;
    }
    return true;
}

template <class T>
const char* suffix();
template <> const char* suffix<float>() { return "f32"; }
template <> const char* suffix<__half>() { return "f16"; }
template <> const char* suffix<__nv_bfloat16>() { return "bf16"; }

// The exported entry points (their extern "C" parameter lists are what the Java launchers marshal).
template <class T>
struct K;
#define UBUF_EMU_KERNELS(T, S)                                                                            \
    template <>                                                                                           \
    struct K<T> {                                                                                         \
        static constexpr auto lnFwd = ubuf_layernorm_fwd_##S;                                             \
        static constexpr auto lnFwdWords = ubuf_layernorm_fwd_words_##S;                                  \
        static constexpr auto lnFwdWords2 = ubuf_layernorm_fwd_words2_##S;                                \
        static constexpr auto lnBwdDx = ubuf_layernorm_bwd_dx_##S;                                        \
        static constexpr auto lnBwdParams = ubuf_layernorm_bwd_params_partial_##S;                        \
        static constexpr auto lnBwd = ubuf_layernorm_bwd_##S;                                             \
        static constexpr auto lnBwdStaged = ubuf_layernorm_bwd_staged_##S;                                \
        static constexpr auto colSumsPartial = ubuf_col_sums_partial_##S;                                 \
        static constexpr auto colSums = ubuf_col_sums_f32_to_##S;                                         \
        static constexpr auto colSums2 = ubuf_col_sums2_f32_to_##S;                                       \
        static constexpr auto geluFwd = ubuf_gelu_fwd_##S;                                                \
        static constexpr auto geluBwd = ubuf_gelu_bwd_##S;                                                \
        static constexpr auto geluFwdDense = ubuf_gelu_fwd_dense_##S;                                     \
        static constexpr auto geluBwdDense = ubuf_gelu_bwd_dense_##S;                                     \
        static constexpr auto biasGeluFwd = ubuf_bias_gelu_fwd_##S;                                       \
        static constexpr auto biasGeluFwdCols = ubuf_bias_gelu_fwd_cols_##S;                              \
        static constexpr auto swigluFwd = ubuf_swiglu_fwd_##S;                                            \
        static constexpr auto swigluFwdWords = ubuf_swiglu_fwd_words_##S;                                 \
        static constexpr auto swigluBwd = ubuf_swiglu_bwd_##S;                                            \
        static constexpr auto biasSwigluFwd = ubuf_bias_swiglu_fwd_##S;                                   \
        static constexpr auto biasGeluBwdPartial = ubuf_bias_gelu_bwd_partial_##S;                        \
        static constexpr auto biasSwigluBwdPartial = ubuf_bias_swiglu_bwd_partial_##S;                    \
        static constexpr auto addBias = ubuf_add_bias_##S;                                                \
        static constexpr auto sgd = ubuf_sgd_##S;                                                         \
    };
UBUF_EMU_KERNELS(float, f32)
UBUF_EMU_KERNELS(__half, f16)
UBUF_EMU_KERNELS(__nv_bfloat16, bf16)
#undef UBUF_EMU_KERNELS

int failures = 0;
int stagedRuns = 0;
int lnWordRuns = 0;
int lnPairedRuns = 0;
int denseRuns = 0;
int wordRuns = 0;
int colsRuns = 0;

// Whether LayerKernels runs ubuf_swiglu_fwd_words for these views (whole 16-byte groups in every row).
template <class T>
bool swigluWords(long long f, long long ldX, long long ldY, int offset) {
    const long long n = 16 / (long long)sizeof(T);
    return offset == 0 && f % n == 0 && (ldX * (long long)sizeof(T)) % 16 == 0 && (ldY * (long long)sizeof(T)) % 16 == 0;
}
template <class T>
void checkGuards(const char* what, Mat<T>& m) {
    if (!guardsIntact(m)) {
        printf("guard-violation %s\n", what);
        ++failures;
    }
}

// The biased GELU forward's column kernel beside the map's output `want` (pre not stored), where LayerKernels
// launches it (whole 16-byte words in every row, the same test as swigluWords): on the case's grid of 256-thread
// blocks, each thread down a word column, and on one block of 32 threads, narrower than a row's words when the row
// has more than 32, which takes a word a thread. Both must give want's bits.
template <class T>
void biasGeluCols(const char* name, long long rows, long long cols, Mat<T>& x, long long ldX, Mat<T>& bias,
                  long long ldY, int offset, unsigned grid, Mat<T>& want) {
    if (!swigluWords<T>(cols, ldX, ldY, offset)) return;
    Mat<T> wide(rows, cols, ldY, offset), narrow(rows, cols, ldY, offset);
    launch(grid, 256, [&] { K<T>::biasGeluFwdCols(rows, cols, x.base, ldX, bias.base, wide.base, ldY); });
    launch(1, 32, [&] { K<T>::biasGeluFwdCols(rows, cols, x.base, ldX, bias.base, narrow.base, ldY); });
    checkGuards(name, wide);
    checkGuards(name, narrow);
    for (long long r = 0; r < rows; ++r) {
        if (std::memcmp(wide.at(r, 0), want.at(r, 0), (size_t)cols * sizeof(T)) != 0
            || std::memcmp(narrow.at(r, 0), want.at(r, 0), (size_t)cols * sizeof(T)) != 0) {
            printf("cols-mismatch %s\n", name);
            ++failures;
            return;
        }
    }
    ++colsRuns;
}

// LayerNorm forward then backward on views with leading dimension ld and `offset` elements of misalignment; blocks
// of `block` threads, `grid` blocks. The backward runs as LayerKernels chooses (fused where the row fits
// LN_BWD_GROUPS groups per thread, else the partial-sums and dx kernels), and also always as the two kernels
// (dx_two, dgamma_two, dbeta_two), so the test can check that the fused kernel gives the same bits.
template <class T>
void layerNorm(const char* name, long long rows, long long cols, long long ld, int offset, unsigned block,
               unsigned grid, int zeroCentered, unsigned long long seed) {
    rngState = seed;
    Mat<T> x(rows, cols, ld, offset), gamma(1, cols, cols, offset), beta(1, cols, cols, offset);
    Mat<T> y(rows, cols, ld, offset), dy(rows, cols, ld, offset), dx(rows, cols, ld, offset);
    Mat<T> dgamma(1, cols, cols, 0), dbeta(1, cols, cols, 0);
    fill(x, 3.f);
    for (long long r = 0; r < rows; ++r)  // a row offset, so the mean matters
        for (long long c = 0; c < cols; ++c)
            *x.at(r, c) = ubuf::Elem<T>::store(ubuf::Elem<T>::load(*x.at(r, c)) + 0.5f * (float)r);
    fill(gamma, 1.f);
    fill(beta, 1.f);
    fill(dy, 1.f);
    std::vector<float> mean((size_t)rows, NAN), rstd((size_t)rows, NAN);
    const float eps = 1e-5f;
    launch(grid, block, [&] {
        K<T>::lnFwd(rows, cols, x.base, ld, gamma.base, beta.base, eps, zeroCentered, y.base, ld, mean.data(),
                    rstd.data());
    });
    const long long groupsFwd = (cols + ubuf::ColGroups<T>::N - 1) / ubuf::ColGroups<T>::N;
    if (offset == 0 && cols % ubuf::ColGroups<T>::N == 0 && (ld * (long long)sizeof(T)) % 16 == 0
        && groupsFwd <= (long long)ubuf::LN_FWD_GROUPS * block) {
        // The forward without the scalar path where LayerKernels would launch it (whole aligned words): the same
        // bits as the kernel above, y, mean and rstd.
        Mat<T> yW(rows, cols, ld, offset);
        std::vector<float> meanW((size_t)rows, NAN), rstdW((size_t)rows, NAN);
        launch(grid, block, [&] {
            K<T>::lnFwdWords(rows, cols, x.base, ld, gamma.base, beta.base, eps, zeroCentered, yW.base, ld,
                             meanW.data(), rstdW.data());
        });
        checkGuards(name, yW);
        bool same = std::memcmp(meanW.data(), mean.data(), (size_t)rows * sizeof(float)) == 0
                    && std::memcmp(rstdW.data(), rstd.data(), (size_t)rows * sizeof(float)) == 0;
        for (long long r = 0; r < rows; ++r)
            same = same && std::memcmp(yW.at(r, 0), y.at(r, 0), (size_t)cols * sizeof(T)) == 0;
        if (!same) {
            printf("ln-words-mismatch %s\n", name);
            ++failures;
        }
        ++lnWordRuns;
        if (block % 64 == 0) {
            // Paired, as LayerKernels launches it where one wave of half-width blocks holds the rows: half the
            // threads, each for two of this block's; still the same bits.
            Mat<T> yP(rows, cols, ld, offset);
            std::vector<float> meanP((size_t)rows, NAN), rstdP((size_t)rows, NAN);
            launch(grid, block / 2, [&] {
                K<T>::lnFwdWords2(rows, cols, x.base, ld, gamma.base, beta.base, eps, zeroCentered, yP.base, ld,
                                  meanP.data(), rstdP.data());
            });
            checkGuards(name, yP);
            bool samePaired = std::memcmp(meanP.data(), mean.data(), (size_t)rows * sizeof(float)) == 0
                              && std::memcmp(rstdP.data(), rstd.data(), (size_t)rows * sizeof(float)) == 0;
            for (long long r = 0; r < rows; ++r)
                samePaired = samePaired && std::memcmp(yP.at(r, 0), y.at(r, 0), (size_t)cols * sizeof(T)) == 0;
            if (!samePaired) {
                printf("ln-paired-mismatch %s\n", name);
                ++failures;
            }
            ++lnPairedRuns;
        }
    }
    const long long rowsPerPart = 3;
    const long long parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const long long ldPart = cols + 5;
    const long long groups = (cols + ubuf::ColGroups<T>::N - 1) / ubuf::ColGroups<T>::N;
    const int fused = groups <= (long long)ubuf::LN_BWD_GROUPS * block ? 1 : 0;
    const int registers = groups <= (long long)ubuf::LN_FWD_GROUPS * block ? 1 : 0;
    Mat<T> dxTwo(rows, cols, ld, offset), dgammaTwo(1, cols, cols, 0), dbetaTwo(1, cols, cols, 0);
    auto twoKernels = [&](Mat<T>& dxOut, Mat<T>& dgOut, Mat<T>& dbOut) {
        std::vector<float> ws((size_t)(2 * parts * ldPart), NAN);
        launch(grid, block, [&] {
            K<T>::lnBwdParams(rows, cols, dy.base, ld, x.base, ld, mean.data(), rstd.data(), rowsPerPart, ws.data(),
                              ws.data() + parts * ldPart, ldPart);
        });
        launch(grid, block, [&] {
            K<T>::lnBwdDx(rows, cols, dy.base, ld, x.base, ld, mean.data(), rstd.data(), gamma.base, zeroCentered,
                          dxOut.base, ld);
        });
        launch(2, 64, [&] { K<T>::colSums(parts, cols, ws.data(), ldPart, dgOut.base, 0); });
        launch(2, 64, [&] { K<T>::colSums(parts, cols, ws.data() + parts * ldPart, ldPart, dbOut.base, 0); });
    };
    if (fused) {
        std::vector<float> ws((size_t)(2 * parts * ldPart), NAN);
        launch(grid, block, [&] {
            K<T>::lnBwd(rows, cols, dy.base, ld, x.base, ld, mean.data(), rstd.data(), gamma.base, zeroCentered,
                        dx.base, ld, rowsPerPart, ws.data(), ws.data() + parts * ldPart, ldPart);
        });
        launch(2, 64, [&] { K<T>::colSums(parts, cols, ws.data(), ldPart, dgamma.base, 0); });
        launch(2, 64, [&] { K<T>::colSums(parts, cols, ws.data() + parts * ldPart, ldPart, dbeta.base, 0); });
        if (offset == 0 && cols % ubuf::ColGroups<T>::N == 0 && (ld * (long long)sizeof(T)) % 16 == 0) {
            // The staged backward where LayerKernels would launch it (aligned rows), on two blocks, so each walks
            // several parts: the same bits as the register-only kernel above.
            if ((size_t)ubuf::LN_BWD_STAGES * 2 * groups * 16 > sizeof(emu_dynamic_shared)) {
                printf("staged-too-large %s\n", name);
                ++failures;
            }
            const long long ldPartS = (ldPart + 3) / 4 * 4;
            std::vector<float> ws((size_t)(2 * parts * ldPartS + 4), NAN);
            float* w = ws.data() + ((16 - (reinterpret_cast<uintptr_t>(ws.data()) & 15)) & 15) / sizeof(float);
            Mat<T> dxS(rows, cols, ld, offset), dgS(1, cols, cols, 0), dbS(1, cols, cols, 0);
            launch(2, block, [&] {
                K<T>::lnBwdStaged(rows, cols, dy.base, ld, x.base, ld, mean.data(), rstd.data(), gamma.base,
                                  zeroCentered, dxS.base, ld, rowsPerPart, w, w + parts * ldPartS, ldPartS);
            });
            // dgamma's and dbeta's sums in one launch, as LayerKernels finishes the staged kernel (3 blocks, so
            // the grid-stride crosses from the first set's tiles to the second's).
            launch(3, 64, [&] {
                K<T>::colSums2(parts, cols, w, w + parts * ldPartS, ldPartS, dgS.base, dbS.base, 0);
            });
            checkGuards(name, dxS);
            bool same = true;
            for (long long r = 0; r < rows; ++r)
                same = same && std::memcmp(dxS.at(r, 0), dx.at(r, 0), (size_t)cols * sizeof(T)) == 0;
            same = same && std::memcmp(dgS.base, dgamma.base, (size_t)cols * sizeof(T)) == 0
                   && std::memcmp(dbS.base, dbeta.base, (size_t)cols * sizeof(T)) == 0;
            if (!same) {
                printf("staged-mismatch %s\n", name);
                ++failures;
            }
            ++stagedRuns;
        }
    } else {
        twoKernels(dx, dgamma, dbeta);
    }
    twoKernels(dxTwo, dgammaTwo, dbetaTwo);
    checkGuards(name, dxTwo);
    checkGuards(name, y);
    checkGuards(name, dx);
    printf("case %s layernorm %s %lld %lld eps=%a zero_centered=%d ld=%lld offset=%d block=%u grid=%u fused=%d "
           "registers=%d\n", name, suffix<T>(), rows, cols, (double)eps, zeroCentered, ld, offset, block, grid, fused,
           registers);
    put("x", x);
    put("gamma", gamma);
    put("beta", beta);
    put("dy", dy);
    put("y", y);
    putF("mean", mean, rows);
    putF("rstd", rstd, rows);
    put("dx", dx);
    put("dgamma", dgamma);
    put("dbeta", dbeta);
    put("dx_two", dxTwo);
    put("dgamma_two", dgammaTwo);
    put("dbeta_two", dbetaTwo);
    printf("end\n");
}

// Bias gradient: partial column sums then the ordered finish, accumulating onto an initial value.
template <class T>
void biasGrad(const char* name, long long rows, long long cols, long long ld, int offset, unsigned grid,
              unsigned long long seed) {
    rngState = seed;
    Mat<T> dy(rows, cols, ld, offset), db(1, cols, cols, 0), db0(1, cols, cols, 0);
    fill(dy, 2.f);
    fill(db, 1.f);
    for (long long c = 0; c < cols; ++c) *db0.at(0, c) = *db.at(0, c);
    const long long rowsPerPart = 4;
    const long long parts = (rows + rowsPerPart - 1) / rowsPerPart;
    std::vector<float> ws((size_t)(parts * cols), NAN);
    launch(grid, 128, [&] { K<T>::colSumsPartial(rows, cols, dy.base, ld, rowsPerPart, ws.data(), cols); });
    launch(1, 64, [&] { K<T>::colSums(parts, cols, ws.data(), cols, db.base, 1); });
    printf("case %s bias_grad %s %lld %lld ld=%lld offset=%d grid=%u\n", name, suffix<T>(), rows, cols, ld, offset,
           grid);
    put("dy", dy);
    put("db_before", db0);
    put("db", db);
    printf("end\n");
}

// GELU forward, backward and bias + GELU (with the pre-activation) through the exported kernels.
template <class T>
void gelu(const char* name, long long rows, long long cols, long long ld, int offset, unsigned grid,
          unsigned long long seed) {
    const auto fwd = K<T>::geluFwd;
    const auto bwd = K<T>::geluBwd;
    const auto biasFwd = K<T>::biasGeluFwd;
    rngState = seed;
    Mat<T> x(rows, cols, ld, offset), y(rows, cols, ld, offset), dy(rows, cols, ld, offset), dx(rows, cols, ld, offset);
    Mat<T> bias(1, cols, cols, offset), by(rows, cols, ld, offset), pre(rows, cols, ld, offset);
    Mat<T> byNoPre(rows, cols, ld, offset);
    fill(x, 5.f);
    fill(dy, 1.f);
    fill(bias, 1.f);
    launch(grid, 256, [&] { fwd(rows, cols, x.base, ld, y.base, ld); });
    launch(grid, 256, [&] { bwd(rows, cols, dy.base, ld, x.base, ld, dx.base, ld); });
    launch(grid, 256, [&] { biasFwd(rows, cols, x.base, ld, bias.base, by.base, ld, pre.base, ld); });
    launch(grid, 256, [&] { biasFwd(rows, cols, x.base, ld, bias.base, byNoPre.base, ld, nullptr, 0); });
    checkGuards(name, y);
    checkGuards(name, dx);
    checkGuards(name, by);
    checkGuards(name, pre);
    biasGeluCols<T>(name, rows, cols, x, ld, bias, ld, offset, grid, byNoPre);
    if (ld == cols) {
        // The dense kernels where LayerKernels launches them (contiguous views), in place as well: the same bits
        // as the row/column kernels above, on whatever alignment the case gives (a misaligned base walks element
        // by element) and with a tail past the last whole word.
        Mat<T> yD(rows, cols, ld, offset), dxD(rows, cols, ld, offset), inPlace(rows, cols, ld, offset);
        const long long n = rows * cols;
        launch(grid, 256, [&] { K<T>::geluFwdDense(n, x.base, yD.base); });
        launch(grid, 256, [&] { K<T>::geluBwdDense(n, dy.base, x.base, dxD.base); });
        std::memcpy(inPlace.base, x.base, (size_t)n * sizeof(T));
        launch(grid, 256, [&] { K<T>::geluFwdDense(n, inPlace.base, inPlace.base); });
        checkGuards(name, yD);
        checkGuards(name, dxD);
        checkGuards(name, inPlace);
        if (std::memcmp(yD.base, y.base, (size_t)n * sizeof(T)) != 0
            || std::memcmp(dxD.base, dx.base, (size_t)n * sizeof(T)) != 0
            || std::memcmp(inPlace.base, y.base, (size_t)n * sizeof(T)) != 0) {
            printf("dense-mismatch %s\n", name);
            ++failures;
        }
        ++denseRuns;
    }
    printf("case %s gelu %s %lld %lld ld=%lld offset=%d grid=%u\n", name, suffix<T>(), rows, cols, ld, offset, grid);
    put("x", x);
    put("y", y);
    put("dy", dy);
    put("dx", dx);
    put("bias", bias);
    put("bias_y", by);
    put("bias_pre", pre);
    put("bias_y_no_pre", byNoPre);
    printf("end\n");
}

template <class T>
void swiglu(const char* name, long long rows, long long f, long long ldX, long long ldY, int offset, unsigned grid,
            unsigned long long seed) {
    const auto fwd = K<T>::swigluFwd;
    const auto bwd = K<T>::swigluBwd;
    rngState = seed;
    Mat<T> x(rows, 2 * f, ldX, offset), y(rows, f, ldY, offset), dy(rows, f, ldY, offset), dx(rows, 2 * f, ldX, offset);
    Mat<T> xInPlace(rows, 2 * f, ldX, offset);
    fill(x, 4.f);
    fill(dy, 1.f);
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < 2 * f; ++c) *xInPlace.at(r, c) = *x.at(r, c);
    launch(grid, 256, [&] { fwd(rows, f, x.base, ldX, y.base, ldY); });
    Mat<T> yWords(rows, f, ldY, offset);
    const bool words = swigluWords<T>(f, ldX, ldY, offset);
    if (words) {
        ++wordRuns;
        launch(grid, 128, [&] { K<T>::swigluFwdWords(rows, f, x.base, ldX, nullptr, yWords.base, ldY); });
        checkGuards(name, yWords);
    }
    launch(grid, 256, [&] { bwd(rows, f, dy.base, ldY, x.base, ldX, dx.base, ldX); });
    // In place: dx written over x, which the launcher allows.
    launch(grid, 256, [&] { bwd(rows, f, dy.base, ldY, xInPlace.base, ldX, xInPlace.base, ldX); });
    checkGuards(name, y);
    checkGuards(name, dx);
    printf("case %s swiglu %s %lld %lld ld_x=%lld ld_y=%lld offset=%d grid=%u\n", name, suffix<T>(), rows, f, ldX, ldY,
           offset, grid);
    put("x", x);
    put("y", y);
    if (words) put("y_words", yWords);
    put("dy", dy);
    put("dx", dx);
    put("dx_in_place", xInPlace);
    printf("end\n");
}

// fc1's bias fused into the activation (GELU: halves = 1, SwiGLU: 2), forward and backward with the bias
// gradient, beside the unfused kernels (bias add, activation, its backward, the column sums) on the same data: the
// test wants the same bits for y and dx, and the float64 reference for all three (the fused column sums add the
// rows in another fixed order). The fused backward also runs in place over a copy of x, as the layer runs it. x,
// bias and dx have halves * f columns.
template <class T>
void biasActivation(const char* name, int halves, long long rows, long long f, long long ldX, long long ldY,
                    int offset, unsigned grid, unsigned block, long long rowsPerPart, unsigned long long seed) {
    rngState = seed;
    const long long w = halves * f;
    Mat<T> x(rows, w, ldX, offset), bias(1, w, w, offset), dy(rows, f, ldY, offset);
    Mat<T> y(rows, f, ldY, offset), dx(rows, w, ldX, offset), inPlace(rows, w, ldX, offset);
    Mat<T> xTwo(rows, w, ldX, offset), yTwo(rows, f, ldY, offset), dxTwo(rows, w, ldX, offset);
    Mat<T> db(1, w, w, 0), db0(1, w, w, 0), dbTwo(1, w, w, 0);
    fill(x, 4.f);
    fill(bias, 1.f);
    fill(dy, 1.f);
    fill(db, 1.f);
    for (long long c = 0; c < w; ++c) *db0.at(0, c) = *dbTwo.at(0, c) = *db.at(0, c);
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < w; ++c) *xTwo.at(r, c) = *inPlace.at(r, c) = *x.at(r, c);
    const long long parts = (rows + rowsPerPart - 1) / rowsPerPart;
    const long long ldPart = w + 3;
    std::vector<float> ws((size_t)(parts * ldPart), NAN), wsTwo((size_t)(parts * ldPart), NAN);
    std::vector<float> wsInPlace((size_t)(parts * ldPart), NAN);
    // Unfused: the bias added in place, then the activation and its backward, then the column sums of dx.
    launch(grid, block, [&] { K<T>::addBias(xTwo.base, rows, w, ldX, bias.base); });
    if (halves == 1) {
        launch(grid, block, [&] { K<T>::geluFwd(rows, f, xTwo.base, ldX, yTwo.base, ldY); });
        launch(grid, block, [&] { K<T>::geluBwd(rows, f, dy.base, ldY, xTwo.base, ldX, dxTwo.base, ldX); });
    } else {
        launch(grid, block, [&] { K<T>::swigluFwd(rows, f, xTwo.base, ldX, yTwo.base, ldY); });
        launch(grid, block, [&] { K<T>::swigluBwd(rows, f, dy.base, ldY, xTwo.base, ldX, dxTwo.base, ldX); });
    }
    launch(grid, block, [&] { K<T>::colSumsPartial(rows, w, dxTwo.base, ldX, rowsPerPart, wsTwo.data(), ldPart); });
    launch(1, 64, [&] { K<T>::colSums(parts, w, wsTwo.data(), ldPart, dbTwo.base, 1); });
    // Fused.
    const auto bwd = halves == 1 ? K<T>::biasGeluBwdPartial : K<T>::biasSwigluBwdPartial;
    if (halves == 1) {
        launch(grid, block, [&] { K<T>::biasGeluFwd(rows, f, x.base, ldX, bias.base, y.base, ldY, nullptr, 0); });
    } else {
        launch(grid, block, [&] { K<T>::biasSwigluFwd(rows, f, x.base, ldX, bias.base, y.base, ldY, 3); });
    }
    if (halves == 1) biasGeluCols<T>(name, rows, f, x, ldX, bias, ldY, offset, grid, y);
    Mat<T> yWords(rows, f, ldY, offset);
    const bool words = halves == 2 && swigluWords<T>(f, ldX, ldY, offset);
    if (words) {
        ++wordRuns;
        launch(grid, 128, [&] { K<T>::swigluFwdWords(rows, f, x.base, ldX, bias.base, yWords.base, ldY); });
        checkGuards(name, yWords);
    }
    // The backward's blocks are ACT_BLOCK threads (its lanes' shared sums are sized for it).
    launch(grid, ubuf::ACT_BLOCK, [&] {
        bwd(rows, f, dy.base, ldY, x.base, ldX, bias.base, dx.base, ldX, rowsPerPart, ws.data(), ldPart);
    });
    launch(1, 64, [&] { K<T>::colSums(parts, w, ws.data(), ldPart, db.base, 1); });
    launch(grid, ubuf::ACT_BLOCK, [&] {
        bwd(rows, f, dy.base, ldY, inPlace.base, ldX, bias.base, inPlace.base, ldX, rowsPerPart, wsInPlace.data(),
            ldPart);
    });
    checkGuards(name, y);
    checkGuards(name, dx);
    checkGuards(name, inPlace);
    printf("case %s bias_activation %s %lld %lld halves=%d ld_x=%lld ld_y=%lld offset=%d grid=%u block=%u "
           "rows_per_part=%lld\n", name, suffix<T>(), rows, f, halves, ldX, ldY, offset, grid, block, rowsPerPart);
    put("x", x);
    put("bias", bias);
    put("dy", dy);
    put("y", y);
    if (words) put("y_words", yWords);
    put("dx", dx);
    put("dx_in_place", inPlace);
    put("db_before", db0);
    put("db", db);
    put("y_two", yTwo);
    put("dx_two", dxTwo);
    put("db_two", dbTwo);
    std::vector<float> partsFused((size_t)(parts * w)), partsInPlace((size_t)(parts * w));
    for (long long q = 0; q < parts; ++q)
        for (long long c = 0; c < w; ++c) {
            partsFused[(size_t)(q * w + c)] = ws[(size_t)(q * ldPart + c)];
            partsInPlace[(size_t)(q * w + c)] = wsInPlace[(size_t)(q * ldPart + c)];
        }
    putF("parts", partsFused, parts * w);
    putF("parts_in_place", partsInPlace, parts * w);
    printf("end\n");
}

// The SGD step with the gradient cleared: w = w - lr g (fp32 g), then g = 0, on w and g views of their own lds.
template <class T>
void sgd(const char* name, long long rows, long long cols, long long ldW, long long ldG, int offset, unsigned grid,
         unsigned long long seed) {
    rngState = seed;
    Mat<T> w(rows, cols, ldW, offset), w0(rows, cols, ldW, offset);
    Mat<float> g(rows, cols, ldG, offset), g0(rows, cols, ldG, offset);
    fill(w, 2.f);
    fill(g, 4.f);
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c) {
            *w0.at(r, c) = *w.at(r, c);
            *g0.at(r, c) = *g.at(r, c);
        }
    const float lr = 0.375f;
    launch(grid, 256, [&] { K<T>::sgd(rows, cols, w.base, ldW, g.base, ldG, lr, 1); });
    checkGuards(name, w);
    checkGuards(name, g);
    printf("case %s sgd %s %lld %lld ld_w=%lld ld_g=%lld offset=%d grid=%u lr=%a\n", name, suffix<T>(), rows, cols,
           ldW, ldG, offset, grid, (double)lr);
    put("w_before", w0);
    put("g_before", g0);
    put("w", w);
    put("g", g);
    printf("end\n");
}

// The byte transpose (FP8 codes): y [cols, rows] = x^T, x and y in buffers of their own with guard bytes around
// every view and `offset` bytes of misalignment; every byte of both comes back (x as read, y as written).
void transposeBytes(const char* name, long long rows, long long cols, long long ldX, long long ldY, int offset,
                    unsigned block, unsigned grid, unsigned long long seed) {
    rngState = seed;
    const unsigned char guard = 0xA5;
    auto alloc = [&](long long n) { return std::vector<unsigned char>((size_t)(n + offset + 32), guard); };
    std::vector<unsigned char> xb = alloc(rows * ldX), yb = alloc(cols * ldY);
    auto base = [&](std::vector<unsigned char>& b) {
        uintptr_t p = reinterpret_cast<uintptr_t>(b.data());
        return b.data() + ((16 - (p & 15)) & 15) + offset;
    };
    unsigned char* x = base(xb);
    unsigned char* y = base(yb);
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c) {
            rngState = rngState * 6364136223846793005ull + 1442695040888963407ull;
            x[r * ldX + c] = (unsigned char)(rngState >> 56);
        }
    launch(grid, block, [&] { ubuf::transpose_bytes(rows, cols, x, ldX, y, ldY); });
    // Nothing outside y's rows may change: the padding of every row and the bytes around the view.
    bool intact = true;
    for (size_t i = 0; i < yb.size(); ++i) {
        const long long at = (long long)(yb.data() + i - y);
        const bool inView = at >= 0 && at < cols * ldY && at % ldY < rows;
        if (!inView) intact = intact && yb[i] == guard;
    }
    if (!intact) {
        printf("guard-violation %s\n", name);
        ++failures;
    }
    printf("case %s transpose u8 %lld %lld ld_x=%lld ld_y=%lld offset=%d block=%u grid=%u\n", name, rows, cols, ldX,
           ldY, offset, block, grid);
    printf("array x %lld", rows * cols);
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c) printf(" %d", x[r * ldX + c]);
    printf("\narray y %lld", rows * cols);
    for (long long r = 0; r < cols; ++r)
        for (long long c = 0; c < rows; ++c) printf(" %d", y[r * ldY + c]);
    printf("\nend\n");
}

template <class T>
void all(unsigned long long seed) {
    const std::string s = suffix<T>();
    auto n = [&](const char* base) { return base + std::string("_") + s; };
    // Vector path (aligned, cols a multiple of every vector width), several groups per thread, fewer blocks than
    // rows; the same data on the scalar path (misaligned base): results must be bit-identical.
    layerNorm<T>(n("ln_vec").c_str(), 7, 4096, 4096 + 16, 0, 256, 3, 0, seed);
    layerNorm<T>(n("ln_scalar").c_str(), 7, 4096, 4096 + 16, 1, 256, 3, 0, seed);
    // Ragged: cols not a multiple of the vector width, ld padded, zero-centred gamma, small blocks, many blocks.
    layerNorm<T>(n("ln_ragged").c_str(), 10, 1003, 1010, 0, 64, 16, 1, seed + 1);
    // Blocks of 4 and 6 warps, so 2 and 3 warps paired (one row's groups over some of a thread's words only).
    layerNorm<T>(n("ln_words128").c_str(), 9, 2048, 2048, 0, 128, 4, 1, seed + 11);
    layerNorm<T>(n("ln_words192").c_str(), 5, 1536, 1544, 0, 192, 2, 0, seed + 12);
    // Rows of exactly 4 (8 paired) words a thread, the layer's case: the word kernels without bound checks (bf16
    // and fp16 at 4096 columns, fp32 at 2048).
    layerNorm<T>(n("ln_full4096").c_str(), 5, 4096, 4096, 0, 128, 3, 1, seed + 13);
    layerNorm<T>(n("ln_full2048").c_str(), 6, 2048, 2048, 0, 128, 2, 0, seed + 14);
    // One warp per block, one column group per thread, a single row.
    layerNorm<T>(n("ln_small").c_str(), 1, 24, 24, 0, 32, 1, 0, seed + 2);
    // Rows longer than the registers hold at one warp: the looped forward and the two-kernel backward.
    layerNorm<T>(n("ln_long").c_str(), 5, 2000, 2008, 0, 32, 2, 0, seed + 9);
    // Fused backward with a partial last part, more parts than blocks, a block of three warps.
    layerNorm<T>(n("ln_fused_parts").c_str(), 37, 520, 520, 0, 96, 3, 1, seed + 10);
    biasGrad<T>(n("bgrad_vec").c_str(), 37, 520, 520, 0, 3, seed + 3);
    biasGrad<T>(n("bgrad_strided").c_str(), 9, 130, 133, 1, 40, seed + 4);
    gelu<T>(n("gelu_vec").c_str(), 40, 512, 512, 0, 2, seed + 5);  // dense: both kernels, vectors
    gelu<T>(n("gelu_scalar").c_str(), 5, 77, 80, 1, 3, seed + 6);
    gelu<T>(n("gelu_dense_misaligned").c_str(), 5, 77, 77, 1, 3, seed + 22);  // dense, base off 16 bytes
    gelu<T>(n("gelu_dense_tail").c_str(), 1, 1003, 1003, 0, 1, seed + 23);    // whole words, then a tail
    swiglu<T>(n("swiglu_vec").c_str(), 4, 256, 512, 256, 0, 2, seed + 7);
    swiglu<T>(n("swiglu_scalar").c_str(), 3, 45, 93, 50, 0, 3, seed + 8);
    // Vectors, a partial last part, two column tiles a half (block 32); then misaligned, odd widths: scalar.
    biasActivation<T>(n("bias_swiglu_vec").c_str(), 2, 37, 512, 1024, 512, 0, 3, 32, 4, seed + 13);
    // Parts longer than a lane's rows ahead (37 rows, parts of 20: lanes walk 5 rows each), 600 columns a half:
    // several tiles of 64 groups, the last partial.
    biasActivation<T>(n("bias_swiglu_long").c_str(), 2, 37, 600, 1200, 600, 0, 2, 32, 20, seed + 17);
    biasActivation<T>(n("bias_swiglu_scalar").c_str(), 2, 7, 45, 93, 50, 1, 2, 32, 3, seed + 14);
    biasActivation<T>(n("bias_gelu_vec").c_str(), 1, 37, 512, 520, 512, 0, 3, 32, 4, seed + 15);
    biasActivation<T>(n("bias_gelu_scalar").c_str(), 1, 7, 45, 50, 50, 1, 2, 32, 3, seed + 16);
    sgd<T>(n("sgd_vec").c_str(), 6, 512, 520, 512, 0, 2, seed + 11);   // vectors, fewer threads than groups
    sgd<T>(n("sgd_scalar").c_str(), 5, 77, 80, 79, 1, 2, seed + 12);   // misaligned: the scalar loop
}

}  // namespace

int main() {
    all<float>(11);
    all<__half>(12);
    all<__nv_bfloat16>(13);
    // The vector path: two partial tiles of 64 in each direction, fewer blocks than tiles, padded rows.
    transposeBytes("fp8_transpose_vec", 80, 144, 160, 96, 0, 256, 3, 21);
    // The same shape misaligned by one byte, and an odd shape: the scalar path, 256-thread and 64-thread blocks.
    transposeBytes("fp8_transpose_scalar", 80, 144, 160, 96, 1, 256, 3, 21);
    transposeBytes("fp8_transpose_odd", 37, 53, 61, 40, 0, 64, 5, 22);
    printf("staged %d\n", stagedRuns);
    printf("ln-words %d\n", lnWordRuns);
    printf("ln-paired %d\n", lnPairedRuns);
    printf("dense %d\n", denseRuns);
    printf("words %d\n", wordRuns);
    printf("cols %d\n", colsRuns);
    printf("failures %d\n", failures);
    return failures == 0 ? 0 : 1;
}
