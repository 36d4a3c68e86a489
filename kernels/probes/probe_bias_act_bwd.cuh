// What the fused bias-activation backward probes share (bias_gelu_bwd_ahead_probe.cu, bias_swiglu_bwd_ahead_probe.cu;
// include after ubuf_activation.cu, ubuf_colsum.cu and probe_common.cuh): the buffers of one shape (dy rows x f; x,
// dx, the bias and the partial rows H f wide, H the activation's halves), variants that launch a partial kernel at
// LayerKernels.biasActivationRowsPerPart's parts for their blocks an SM and then the column sums, and the timing of
// every variant twice beside a copy of the same bytes, dx compared bit for bit with the first variant's (the
// product's) and the bias gradient column by column where the parts are the product's.
#pragma once

#include <cstring>
#include <functional>
#include <vector>

struct BiasActBwdVariant {
    const char* name;
    int blocks;                              // resident blocks an SM: the variant's parts
    std::function<void(__nv_bfloat16*, float*)> run;  // dx, dbias
};

struct BiasActBwdProbe {
    using bf = __nv_bfloat16;
    long long rows, f;
    int halves, sms, productBlocks;
    bf *dy = nullptr, *x = nullptr, *bias = nullptr, *dx = nullptr, *refDx = nullptr;
    float *part = nullptr, *db = nullptr, *refDb = nullptr;
    char *cpySrc = nullptr, *cpyDst = nullptr;
    unsigned long long* diff = nullptr;

    long long n() const { return rows * f; }
    long long width() const { return halves * f; }
    long long tiles() const { return (f / 8 + 63) / 64; }
    int maxBlocks() const { return sms * 8; }
    long long rowsPerPart(int blocks) const { return probe_bias_act_rows_per_part(rows, f, blocks, sms); }
    long long copyBytes() const { return (1 + 2 * halves) * n(); }  // dy, x and dx: a copy reads and writes them

    // Allocates and fills the inputs: dy uniform in +-0.01, x in +-xScale / 2, the bias in +-0.5.
    int alloc(float xScale) {
        CK(cudaMalloc(&dy, n() * 2));
        CK(cudaMalloc(&x, halves * n() * 2));
        CK(cudaMalloc(&dx, halves * n() * 2));
        CK(cudaMalloc(&refDx, halves * n() * 2));
        CK(cudaMalloc(&bias, width() * 2));
        CK(cudaMalloc(&part, (rows / 32 + 1) * width() * 4));
        CK(cudaMalloc(&db, width() * 4));
        CK(cudaMalloc(&refDb, width() * 4));
        CK(cudaMalloc(&diff, 8));
        CK(cudaMalloc(&cpySrc, copyBytes()));
        CK(cudaMalloc(&cpyDst, copyBytes()));
        probe_fill<<<sms * 4, 256>>>(dy, n(), 7u, 0.02f);
        probe_fill<<<sms * 4, 256>>>(x, halves * n(), 1u, xScale);
        probe_fill<<<sms, 256>>>(bias, width(), 3u, 1.f);
        return 0;
    }

    void release() {
        cudaFree(dy); cudaFree(x); cudaFree(dx); cudaFree(refDx); cudaFree(bias); cudaFree(part); cudaFree(db);
        cudaFree(refDb); cudaFree(diff); cudaFree(cpySrc); cudaFree(cpyDst);
    }

    int grid(long long parts) const {
        const long long items = parts * tiles();
        return (int)(items < maxBlocks() ? items : maxBlocks());
    }

    // The column sums of `parts` partial rows into dbias.
    void sums(long long parts, float* dbias) const {
        const int sumGrid = (int)(width() / 32 < maxBlocks() ? width() / 32 : maxBlocks());
        ubuf_col_sums_f32_to_f32<<<sumGrid, 512>>>(parts, width(), part, width(), dbias, 0);
    }

    // A variant of kernel(rows, f, dy, x, bias, dx, rowsPerPart, part) at `blocks` resident blocks an SM.
    template <class Kernel>
    BiasActBwdVariant variant(const char* name, Kernel kernel, int blocks) const {
        const BiasActBwdProbe p = *this;
        return {name, blocks, [p, kernel, blocks](bf* out, float* dbias) {
            const long long rpp = p.rowsPerPart(blocks);
            const long long parts = (p.rows + rpp - 1) / rpp;
            kernel<<<p.grid(parts), 256>>>(p.rows, p.f, p.dy, p.x, p.bias, out, rpp, p.part);
            p.sums(parts, dbias);
        }};
    }

    // Runs variants[0] (the product) into the references, then times every variant twice.
    int run(const std::vector<BiasActBwdVariant>& variants, int nameWidth) {
        variants[0].run(refDx, refDb);
        CK(cudaDeviceSynchronize());
        const long long elements = halves * n();
        const ProbeTimer timer{rows, width(), elements, copyBytes() * 2, 100, sms, nameWidth, refDx, diff};
        char name[128];
        for (int pass = 0; pass < 2; ++pass) {
            timer.time("memcpy d2d (same bytes)", refDx, [&] {
                cudaMemcpyAsync(cpyDst, cpySrc, copyBytes(), cudaMemcpyDeviceToDevice);
            });
            for (const BiasActBwdVariant& v : variants) {
                const long long rpp = rowsPerPart(v.blocks);
                snprintf(name, sizeof name, "%s (%lld-row parts)", v.name, rpp);
                cudaMemset(dx, 0xff, elements * 2);
                cudaMemset(db, 0xff, width() * 4);
                timer.time(name, dx, [&] { v.run(dx, db); });
                if (rpp == rowsPerPart(productBlocks) && strstr(v.name, "alone") == nullptr) {
                    std::vector<float> a(width()), b(width());
                    cudaMemcpy(a.data(), db, width() * 4, cudaMemcpyDeviceToHost);
                    cudaMemcpy(b.data(), refDb, width() * 4, cudaMemcpyDeviceToHost);
                    long long differ = 0;
                    for (long long c = 0; c < width(); ++c) differ += a[c] != b[c];
                    if (differ) printf("    bias gradient columns differing from the product's: %lld\n", differ);
                }
            }
        }
        return 0;
    }
};
