/* A stand-in for libcublasLt with cublasLt.h's signatures, for CPU tests of plan choice and tuning: the heuristic
 * proposes four algorithms whose first word is 100..103, and cublasLtMatmul records which one it was given and where
 * it wrote. Descriptors are counted, so a test can see that every one created was destroyed. */
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

static char last[512];
static int live;
const char* fake_last_call(void) { return last; }
int fake_live_objects(void) { return live; }

static int create(void** out) { *out = malloc(16); live++; return 0; }
static int destroy(void* p) { free(p); live--; return 0; }

int cublasLtCreate(void** h) { return create(h); }
int cublasLtDestroy(void* h) { return destroy(h); }
size_t cublasLtGetVersion(void) { return 130101; }
const char* cublasLtGetStatusName(int s) { return s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : "CUBLAS_STATUS_OTHER"; }
const char* cublasLtGetStatusString(int s) { (void)s; return "fake status"; }
int cublasLtMatmulDescCreate(void** d, int compute, int scale) { (void)compute; (void)scale; return create(d); }
int cublasLtMatmulDescDestroy(void* d) { return destroy(d); }
int cublasLtMatmulDescSetAttribute(void* d, int a, const void* v, size_t n) { (void)d; (void)a; (void)v; (void)n; return 0; }
int cublasLtMatrixLayoutCreate(void** l, int t, uint64_t r, uint64_t c, int64_t ld) {
  (void)t; (void)r; (void)c; (void)ld;
  return create(l);
}
int cublasLtMatrixLayoutDestroy(void* l) { return destroy(l); }
int cublasLtMatrixLayoutSetAttribute(void* l, int a, const void* v, size_t n) { (void)l; (void)a; (void)v; (void)n; return 0; }
int cublasLtMatmulPreferenceCreate(void** p) { return create(p); }
int cublasLtMatmulPreferenceDestroy(void* p) { return destroy(p); }
int cublasLtMatmulPreferenceSetAttribute(void* p, int a, const void* v, size_t n) { (void)p; (void)a; (void)v; (void)n; return 0; }

int cublasLtMatmulAlgoGetHeuristic(void* h, void* desc, void* a, void* b, void* c, void* d, void* pref, int requested,
                                   cublasLtMatmulHeuristicResult_t* results, int* returned) {
  (void)h; (void)desc; (void)a; (void)b; (void)c; (void)d; (void)pref;
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

int cublasLtMatmul(void* h, void* desc, const float* alpha, const void* a, void* ad, const void* b, void* bd,
                   const float* beta, const void* c, void* cd, void* d, void* dd, const cublasLtMatmulAlgo_t* algo,
                   void* ws, size_t wsSize, void* stream) {
  (void)h; (void)desc; (void)ad; (void)bd; (void)cd; (void)dd;
  snprintf(last, sizeof last, "matmul algo=%llu a=%p b=%p c=%p d=%p ws=%p/%zu stream=%p alpha=%g beta=%g",
           (unsigned long long)algo->data[0], a, b, c, d, ws, wsSize, stream, *alpha, *beta);
  return 0;
}
