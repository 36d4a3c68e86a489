/* A stand-in for libcublasLt with cublasLt.h's signatures, for CPU tests of plan choice and tuning: the heuristic
 * proposes four algorithms whose first word is 100..103, and cublasLtMatmul records which one it was given and where
 * it wrote. Descriptors are counted, so a test can see that every one created was destroyed. Matmul descriptors keep
 * the attributes set on them (with cuBLASLt's value sizes enforced) and layouts their type, so the matmul record also
 * shows the types, transposes and FP8 scale pointers cuBLASLt would have seen; the heuristic records the same.
 * FP8 GEMMs are refused (CUBLAS_STATUS_NOT_SUPPORTED, 15) where the real library refuses them, so a CPU test sees
 * what the GPU would say: cuBLAS's documented FP8 requirements for cublasLtMatmul (the "TN" layout, compute type
 * 32F, scale type 32F, not both inputs E5M2, 16-byte aligned matrices) in the heuristic and the matmul, and scale
 * pointers off 16 bytes in the matmul only, as cuBLASLt 13.1 did on H100 (Fp8ScalePointerGpuTest). The bias
 * epilogue (EPILOGUE = BIAS, its pointer and type) is recorded, and refused as cuBLAS documents it: a bias of another
 * type than D (an FP8 GEMM writing fp32 or fp8 takes a 16-bit bias instead). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "heuristic result");

static char last[1024];
static char last_heuristic[1024];
static int live;
const char* fake_last_call(void) { return last; }
const char* fake_last_heuristic(void) { return last_heuristic; }
int fake_live_objects(void) { return live; }

typedef struct { int compute, scale, transa, transb, fastAccum, epilogue, biasType; const void* ptr[32]; } Desc;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } Layout;

static int create_sized(void** out, size_t size) { *out = calloc(1, size); live++; return 0; }
static int create(void** out) { return create_sized(out, 16); }
static int destroy(void* p) { free(p); live--; return 0; }

/* types=A/B/C/D compute=.. scale=.. trans=A/B fastacc=.. scales=A/B/D/amaxD epilogue=.. bias=ptr/type, as cuBLASLt
 * would see them. */
static int describe(char* out, size_t size, const Desc* d, const Layout* a, const Layout* b, const Layout* c,
                    const Layout* dd) {
  return snprintf(out, size, "types=%d/%d/%d/%d compute=%d scale=%d trans=%d/%d fastacc=%d scales=%p/%p/%p/%p"
                  " epilogue=%d bias=%p/%d",
                  a->type, b->type, c->type, dd->type, d->compute, d->scale, d->transa, d->transb, d->fastAccum,
                  d->ptr[17], d->ptr[18], d->ptr[20], d->ptr[21], d->epilogue, d->ptr[8], d->biasType);
}

static int is_fp8(int type);

/* 15 when the bias epilogue's type does not fit D (CUDA_R_16F 2, CUDA_R_16BF 14, CUDA_R_32F 0); 0 otherwise. */
static int bias_refused(const Desc* d, const Layout* a, const Layout* dd) {
  if (d->epilogue != 4) return 0;
  int type = d->biasType < 0 ? dd->type : d->biasType; /* unset: D's type, cuBLAS's default */
  if (is_fp8(a->type) && (dd->type == 0 || is_fp8(dd->type))) return type == 2 || type == 14 ? 0 : 15;
  return type == dd->type ? 0 : 15;
}

static int is_fp8(int type) { return type == 28 || type == 29; }

/* 15 when cuBLASLt would refuse this FP8 GEMM whatever its pointers; 0 otherwise (and for other GEMMs). */
static int fp8_layout_refused(const Desc* d, const Layout* a, const Layout* b) {
  if (!is_fp8(a->type) && !is_fp8(b->type)) return 0;
  if (d->transa != 1 || d->transb != 0) return 15;          /* only A transposed, B not */
  if (d->compute != 68 || d->scale != 0) return 15;         /* CUBLAS_COMPUTE_32F, CUDA_R_32F */
  if (a->type == 29 && b->type == 29) return 15;            /* E5M2 x E5M2 */
  return 0;
}

static int misaligned16(const void* p) { return ((uintptr_t)p & 15u) != 0; }

int cublasLtCreate(void** h) { return create(h); }
int cublasLtDestroy(void* h) { return destroy(h); }
size_t cublasLtGetVersion(void) { return 130101; }
const char* cublasLtGetStatusName(int s) { return s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : "CUBLAS_STATUS_OTHER"; }
const char* cublasLtGetStatusString(int s) { (void)s; return "fake status"; }
int cublasLtMatmulDescCreate(void** d, int compute, int scale) {
  create_sized(d, sizeof(Desc));
  Desc* desc = (Desc*)*d;
  desc->compute = compute;
  desc->scale = scale;
  desc->fastAccum = -1; /* never set */
  desc->epilogue = 1;   /* CUBLASLT_EPILOGUE_DEFAULT */
  desc->biasType = -1;  /* never set */
  return 0;
}
int cublasLtMatmulDescDestroy(void* d) { return destroy(d); }
int cublasLtMatmulDescSetAttribute(void* d, int a, const void* v, size_t n) {
  Desc* desc = (Desc*)d;
  if (a == 3 || a == 4 || a == 15) { /* TRANSA, TRANSB, SM_COUNT_TARGET: int32_t */
    if (n != 4) return 7;
    if (a == 3) desc->transa = *(const int*)v;
    if (a == 4) desc->transb = *(const int*)v;
    return 0;
  }
  if (a == 7 || a == 26) { /* EPILOGUE: uint32_t; BIAS_DATA_TYPE: int32_t */
    if (n != 4) return 7;
    if (a == 7) desc->epilogue = *(const int*)v;
    if (a == 26) desc->biasType = *(const int*)v;
    return 0;
  }
  if (a == 8 || (a >= 17 && a <= 21)) { /* the bias pointer; scale and amax pointers */
    if (n != sizeof(void*)) return 7;
    desc->ptr[a] = *(const void* const*)v;
    return 0;
  }
  if (a == 25) { /* FAST_ACCUM: int8_t */
    if (n != 1) return 7;
    desc->fastAccum = *(const signed char*)v;
    return 0;
  }
  return 15; /* an attribute this fake does not know: make the test see it */
}
int cublasLtMatrixLayoutCreate(void** l, int t, uint64_t r, uint64_t c, int64_t ld) {
  create_sized(l, sizeof(Layout));
  Layout* layout = (Layout*)*l;
  layout->type = t;
  layout->rows = r;
  layout->cols = c;
  layout->ld = ld;
  return 0;
}
int cublasLtMatrixLayoutDestroy(void* l) { return destroy(l); }
int cublasLtMatrixLayoutSetAttribute(void* l, int a, const void* v, size_t n) { (void)l; (void)a; (void)v; (void)n; return 0; }
int cublasLtMatmulPreferenceCreate(void** p) { return create(p); }
int cublasLtMatmulPreferenceDestroy(void* p) { return destroy(p); }
int cublasLtMatmulPreferenceSetAttribute(void* p, int a, const void* v, size_t n) { (void)p; (void)a; (void)v; (void)n; return 0; }

int cublasLtMatmulAlgoGetHeuristic(void* h, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                                   cublasLtMatmulHeuristicResult_t* results, int* returned) {
  (void)h; (void)pref;
  describe(last_heuristic, sizeof last_heuristic, (const Desc*)desc, (const Layout*)a, (const Layout*)b,
           (const Layout*)c, (const Layout*)d);
  if (fp8_layout_refused((const Desc*)desc, (const Layout*)a, (const Layout*)b)
      || bias_refused((const Desc*)desc, (const Layout*)a, (const Layout*)d)) { *returned = 0; return 15; }
  int n = requested < 4 ? requested : 4;
  memset(results, 0, sizeof(*results) * (size_t)requested);
  for (int i = 0; i < n; i++) {
    results[i].algo.data[0] = 100 + (uint64_t)i;
    results[i].workspaceSize = (size_t)i * 1024;
    results[i].wavesCount = 1.0f;
  }
  *returned = n;
  return 0;
}

// The real library checks the algorithm against this GEMM; the fake knows only the four it proposes (100..103).
int cublasLtMatmulAlgoCheck(void* h, void* desc, void* a, void* b, void* c, void* d, const cublasLtMatmulAlgo_t* algo,
                            cublasLtMatmulHeuristicResult_t* result) {
  (void)h; (void)c;
  if (fp8_layout_refused((const Desc*)desc, (const Layout*)a, (const Layout*)b)
      || bias_refused((const Desc*)desc, (const Layout*)a, (const Layout*)d)) return 15;
  if (algo->data[0] < 100 || algo->data[0] > 103) return 15;
  memset(result, 0, sizeof(*result));
  result->algo = *algo;
  result->workspaceSize = (size_t)(algo->data[0] - 100) * 1024;
  result->wavesCount = 1.0f;
  return 0;
}

int cublasLtMatmul(void* h, void* desc, const float* alpha, const void* a, void* ad, const void* b, void* bd,
                   const float* beta, const void* c, void* cd, void* d, void* dd, const cublasLtMatmulAlgo_t* algo,
                   void* ws, size_t wsSize, void* stream) {
  (void)h;
  char seen[512];
  describe(seen, sizeof seen, (const Desc*)desc, (const Layout*)ad, (const Layout*)bd, (const Layout*)cd,
           (const Layout*)dd);
  const Desc* desc_ = (const Desc*)desc;
  const Layout* al = (const Layout*)ad;
  const Layout* bl = (const Layout*)bd;
  if (fp8_layout_refused(desc_, al, bl) || bias_refused(desc_, al, (const Layout*)dd)) return 15;
  if (is_fp8(al->type) && (misaligned16(a) || misaligned16(b) || misaligned16(d) || misaligned16(desc_->ptr[17])
                           || misaligned16(desc_->ptr[18]) || misaligned16(desc_->ptr[20])
                           || misaligned16(desc_->ptr[21]))) {
    return 15;
  }
  snprintf(last, sizeof last, "matmul algo=%llu %s a=%p b=%p c=%p d=%p ws=%p/%zu stream=%p alpha=%g beta=%g",
           (unsigned long long)algo->data[0], seen, a, b, c, d, ws, wsSize, stream, *alpha, *beta);
  return 0;
}
