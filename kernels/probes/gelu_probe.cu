// Standalone probe (not part of the build): bf16 GELU forward over a dense [rows, cols] tensor, the product's
// kernels (ubuf_gelu_fwd_bf16 on grid-stride grids, ubuf_gelu_fwd_dense_bf16 on one-shot grids of several block
// sizes) beside variants that differ only in how a thread walks the elements, against a device-to-device copy of
// the same bytes; the backward's kernels likewise. Each output is compared bit for bit with the row/column kernel's.
// The twenty-fourth session added the backward one-shot as PyTorch walks it, with streaming cache hints and a
// tanh from the fast exponential (bench/results/2026-11-28-session24/call9-*). Build and run:
//   nvcc -arch=sm_90 -O3 -std=c++17 -I../src/main/cuda gelu_probe.cu -o gelu_probe && ./gelu_probe
#include "../src/main/cuda/ubuf_activation.cu"
#include "probe_common.cuh"

using bf = __nv_bfloat16;

__device__ __forceinline__ void unpack8(uint4 w, float (&f)[8]) {
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(u[i] << 16);
        f[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
    }
}
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    uint32_t u[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
        u[i] = *reinterpret_cast<uint32_t*>(&h);
    }
    return make_uint4(u[0], u[1], u[2], u[3]);
}
__device__ __forceinline__ uint4 gelu8(uint4 w) {
    float f[8];
    unpack8(w, f);
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = ubuf::gelu_tanh(f[i]);
    return pack8(f);
}

// One-shot, as PyTorch's vectorized element-wise kernel: V words a thread, loaded first, no loop.
template <int V>
__global__ void __launch_bounds__(128) oneshot(const uint4* x, uint4* y, long long words) {
    const long long base = (long long)blockIdx.x * 128 * V + threadIdx.x;
    uint4 w[V];
#pragma unroll
    for (int v = 0; v < V; ++v) if (base + v * 128 < words) w[v] = x[base + v * 128];
#pragma unroll
    for (int v = 0; v < V; ++v) if (base + v * 128 < words) y[base + v * 128] = gelu8(w[v]);
}

// Grid-stride with raw words, the next pair loaded before the current pair is computed.
__global__ void __launch_bounds__(256) prefetch(const uint4* x, uint4* y, long long words) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long a = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    uint4 wa, wb;
    if (a < words) wa = x[a];
    if (a + stride < words) wb = x[a + stride];
    for (; a < words; a += 2 * stride) {
        const long long b = a + stride, na = a + 2 * stride, nb = a + 3 * stride;
        uint4 xa = wa, xb = wb;
        if (na < words) wa = x[na];
        if (nb < words) wb = x[nb];
        y[a] = gelu8(xa);
        if (b < words) y[b] = gelu8(xb);
    }
}

// Grid-stride, raw words, two a thread, no prefetch (the row/column map's walk over dense views, as b090a01 had it,
// without float staging).
__global__ void __launch_bounds__(256) rawpair(const uint4* x, uint4* y, long long words) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long a = (long long)blockIdx.x * blockDim.x + threadIdx.x; a < words; a += 2 * stride) {
        const long long b = a + stride;
        uint4 xa = x[a], xb;
        if (b < words) xb = x[b];
        y[a] = gelu8(xa);
        if (b < words) y[b] = gelu8(xb);
    }
}

// The backward one-shot, as PyTorch's vectorized element-wise kernel walks it (24th session): a block takes 128 * V
// consecutive words, a thread V of them 128 apart, every load before any math. CS: loads and stores with the
// streaming cache hint (evict first). EXPT: tanh as 1 - 2 / (exp(2u) + 1) with the fast exponential (other bits).
constexpr float GELU_K0 = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float GELU_K1 = 0.044715f;
__device__ __forceinline__ float gelu_grad_expt(float x) {
    const float u = GELU_K0 * (x + GELU_K1 * x * x * x);
    const float t = 1.f - 2.f / (__expf(2.f * u) + 1.f);
    const float sech2 = 1.f - t * t;
    const float inner = sech2 == 0.f ? 0.f : 0.5f * x * sech2 * GELU_K0 * (1.f + 3.f * GELU_K1 * x * x);
    return 0.5f * (1.f + t) + inner;
}

template <int V, bool CS, bool EXPT>
__global__ void __launch_bounds__(128) oneshot_bwd(const uint4* dy, const uint4* x, uint4* dx, long long words) {
    const long long base = (long long)blockIdx.x * 128 * V + threadIdx.x;
    uint4 wd[V], wx[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
        const long long i = base + v * 128;
        if (i < words) {
            wd[v] = CS ? __ldcs(dy + i) : dy[i];
            wx[v] = CS ? __ldcs(x + i) : x[i];
        }
    }
#pragma unroll
    for (int v = 0; v < V; ++v) {
        const long long i = base + v * 128;
        if (i < words) {
            float d[8], f[8];
            unpack8(wd[v], d);
            unpack8(wx[v], f);
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = d[e] * (EXPT ? gelu_grad_expt(f[e]) : ubuf::gelu_tanh_grad(f[e]));
            const uint4 o = pack8(f);
            if (CS) __stcs(dx + i, o); else dx[i] = o;
        }
    }
}

// dx = dy * gelu'(x), raw words, two a thread (the backward's twin of rawpair).
__global__ void __launch_bounds__(256) rawpair_bwd(const uint4* dy, const uint4* x, uint4* dx, long long words) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long a = (long long)blockIdx.x * blockDim.x + threadIdx.x; a < words; a += 2 * stride) {
        const long long b = a + stride;
        uint4 da = dy[a], xa = x[a], db, xb;
        if (b < words) { db = dy[b]; xb = x[b]; }
        float d[8], v[8];
        unpack8(da, d); unpack8(xa, v);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = d[i] * ubuf::gelu_tanh_grad(v[i]);
        dx[a] = pack8(v);
        if (b < words) {
            unpack8(db, d); unpack8(xb, v);
#pragma unroll
            for (int i = 0; i < 8; ++i) v[i] = d[i] * ubuf::gelu_tanh_grad(v[i]);
            dx[b] = pack8(v);
        }
    }
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const long long shapes[][2] = {{8192, 3584}, {8192, 7168}, {8192, 14336}};
    for (auto& s : shapes) {
        const long long rows = s[0], cols = s[1], n = rows * cols, words = n / 8, bytes = n * 2;
        bf *x, *y;
        CK(cudaMalloc(&x, bytes));
        CK(cudaMalloc(&y, bytes));
        bf *ref, *dy, *dx;
        unsigned long long* diff;
        CK(cudaMalloc(&ref, bytes));
        CK(cudaMalloc(&dy, bytes));
        CK(cudaMalloc(&dx, bytes));
        CK(cudaMalloc(&diff, 8));
        probe_fill<<<sms * 4, 256>>>(x, n, 1u, 10.f);
        probe_fill<<<sms * 4, 256>>>(dy, n, 7u, 10.f);
        ubuf_gelu_fwd_bf16<<<sms * 4, 256>>>(rows, cols, x, cols, ref, cols);
        CK(cudaDeviceSynchronize());
        // GB/s counts the forward's bytes (one tensor read, one written) for every case, the backward's too.
        const ProbeTimer timer{rows, cols, n, 2 * bytes, 100, sms, 28, ref, diff};
        auto time = [&](const char* name, auto launch) { timer.time(name, y, launch); };
        auto timeBwd = [&](const char* name, auto launch) { timer.time(name, dx, launch); };
        time("memcpy d2d", [&] { cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
        for (int per : {4, 8, 16}) {
            char name[64];
            snprintf(name, sizeof name, "product map, %d blocks/SM", per);
            long long grid = (n + 256 * 8 - 1) / (256 * 8);
            if (grid > (long long)sms * per) grid = (long long)sms * per;
            time(name, [&] { ubuf_gelu_fwd_bf16<<<(int)grid, 256>>>(rows, cols, x, cols, y, cols); });
        }
        for (int block : {128, 256, 512}) {
            char name[64];
            snprintf(name, sizeof name, "product dense, block %d", block);
            const long long grid = (words + block - 1) / block;
            time(name, [&] { ubuf_gelu_fwd_dense_bf16<<<(int)grid, block>>>(n, x, y); });
        }
        time("oneshot V=1", [&] { oneshot<1><<<(int)((words + 127) / 128), 128>>>((uint4*)x, (uint4*)y, words); });
        time("oneshot V=2", [&] { oneshot<2><<<(int)((words + 255) / 256), 128>>>((uint4*)x, (uint4*)y, words); });
        time("oneshot V=4", [&] { oneshot<4><<<(int)((words + 511) / 512), 128>>>((uint4*)x, (uint4*)y, words); });
        for (int per : {4, 8}) {
            char name[64];
            snprintf(name, sizeof name, "rawpair, %d blocks/SM", per);
            time(name, [&] { rawpair<<<sms * per, 256>>>((uint4*)x, (uint4*)y, words); });
            snprintf(name, sizeof name, "prefetch, %d blocks/SM", per);
            time(name, [&] { prefetch<<<sms * per, 256>>>((uint4*)x, (uint4*)y, words); });
        }
        // The backward (3 tensors of bytes): the product's kernel, then rawpair's twin; ref = the product's dx.
        {
            long long grid = (n + 256 * 8 - 1) / (256 * 8);
            if (grid > (long long)sms * 4) grid = (long long)sms * 4;
            ubuf_gelu_bwd_bf16<<<(int)grid, 256>>>(rows, cols, dy, cols, x, cols, ref, cols);
            timeBwd("bwd: product map, 4/SM (2 in)", [&] {
                ubuf_gelu_bwd_bf16<<<(int)grid, 256>>>(rows, cols, dy, cols, x, cols, dx, cols);
            });
            for (int block : {128, 256}) {
                char name[64];
                snprintf(name, sizeof name, "bwd: product dense, block %d", block);
                const long long g = (words + block - 1) / block;
                timeBwd(name, [&] { ubuf_gelu_bwd_dense_bf16<<<(int)g, block>>>(n, dy, x, dx); });
            }
            timeBwd("bwd: product dense as launched (a thread per 2 words, block 128)", [&] {
                ubuf_gelu_bwd_dense_bf16<<<(int)((words + 255) / 256), 128>>>(n, dy, x, dx);
            });
            auto ob = [&](const char* name, auto k, int v) {
                timeBwd(name, [&] {
                    k<<<(int)((words + 128LL * v - 1) / (128LL * v)), 128>>>((uint4*)dy, (uint4*)x, (uint4*)dx, words);
                });
            };
            ob("bwd: oneshot V=1", oneshot_bwd<1, false, false>, 1);
            ob("bwd: oneshot V=2", oneshot_bwd<2, false, false>, 2);
            ob("bwd: oneshot V=4", oneshot_bwd<4, false, false>, 4);
            ob("bwd: oneshot V=2 streaming", oneshot_bwd<2, true, false>, 2);
            ob("bwd: oneshot V=4 streaming", oneshot_bwd<4, true, false>, 4);
            ob("bwd: oneshot V=2 exp tanh", oneshot_bwd<2, false, true>, 2);
            ob("bwd: oneshot V=2 streaming exp tanh", oneshot_bwd<2, true, true>, 2);
            timeBwd("bwd: rawpair, 4/SM (2 in)", [&] {
                rawpair_bwd<<<sms * 4, 256>>>((uint4*)dy, (uint4*)x, (uint4*)dx, words);
            });
            timeBwd("bwd: rawpair, 8/SM (2 in)", [&] {
                rawpair_bwd<<<sms * 8, 256>>>((uint4*)dy, (uint4*)x, (uint4*)dx, words);
            });
        }
        cudaFree(x);
        cudaFree(y);
        cudaFree(ref);
        cudaFree(dy);
        cudaFree(dx);
        cudaFree(diff);
    }
    return 0;
}
