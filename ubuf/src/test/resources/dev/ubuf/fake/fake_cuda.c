/* A stand-in for libcuda.so.1 with cuda.h's (CUDA 13.0) VMM signatures and structs, for ABI tests on machines
 * without a GPU. Calls record what they received (fake_last_call); the structs are read field by field. */
#include <stdio.h>
#include <stddef.h>
#include <string.h>

typedef struct { int type; int id; } CUmemLocation;
typedef struct {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct { unsigned char compressionType; unsigned char gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef unsigned long long u64;

_Static_assert(sizeof(CUmemAllocationProp) == 32, "prop");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "desc");

static char last[512];
const char* fake_last_call(void) { return last; }

static int propText(char* out, size_t n, const CUmemAllocationProp* p) {
  int zero = p->win32HandleMetaData == NULL && p->allocFlags.compressionType == 0 && p->allocFlags.gpuDirectRDMACapable == 0
      && p->allocFlags.usage == 0 && memcmp(p->allocFlags.reserved, "\0\0\0\0", 4) == 0;
  return snprintf(out, n, "type=%d handles=%d loc=%d/%d rest=%s", p->type, p->requestedHandleTypes, p->location.type,
                  p->location.id, zero ? "zero" : "NONZERO");
}

int cuInit(unsigned int flags) { snprintf(last, sizeof last, "cuInit %u", flags); return 0; }
int cuGetErrorName(int e, const char** s) {
  if (e == 1) { *s = "CUDA_ERROR_INVALID_VALUE"; return 0; }
  if (e == 2) { *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0; }
  if (e == 700) { *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0; }
  *s = NULL;
  return 1;
}
int cuGetErrorString(int e, const char** s) { if (e == 1) { *s = "invalid argument"; return 0; } *s = NULL; return 1; }
int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal < 2 ? 0 : 101; }
int cuDeviceGetAttribute(int* v, int attr, int dev) { *v = (attr == 102 || attr == 103) ? dev + 1 : 0; return 0; }

int cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* p, int option) {
  int n = snprintf(last, sizeof last, "granularity option=%d ", option);
  propText(last + n, sizeof last - n, p);
  *g = option == 1 ? (4u << 20) : (2u << 20);
  return 0;
}
int cuMemCreate(u64* h, size_t size, const CUmemAllocationProp* p, u64 flags) {
  int n = snprintf(last, sizeof last, "cuMemCreate size=%zu flags=%llu ", size, flags);
  propText(last + n, sizeof last - n, p);
  if (size % (2u << 20) != 0) return 1;
  *h = 0xABC000 + size / (2u << 20);
  return 0;
}
/* Handles below 1000 are CUresults to return: lets a test see how each kind of failure is classified. */
int cuMemRelease(u64 h) { snprintf(last, sizeof last, "cuMemRelease 0x%llx", h); return h < 1000 ? (int)h : 0; }
int cuMemExportToShareableHandle(void* out, u64 h, int type, u64 flags) {
  snprintf(last, sizeof last, "cuMemExport 0x%llx type=%d flags=%llu", h, type, flags);
  *(int*)out = 77;
  return 0;
}
int cuMemImportFromShareableHandle(u64* h, void* os, int type) {
  snprintf(last, sizeof last, "cuMemImport fd=%ld type=%d", (long)(size_t)os, type);
  *h = 0xDEF000;
  return 0;
}
int cuMemAddressReserve(u64* p, size_t size, size_t align, u64 addr, u64 flags) {
  snprintf(last, sizeof last, "cuMemAddressReserve size=%zu align=%zu addr=%llu flags=%llu", size, align, addr, flags);
  *p = 0x7f0000000000ull;
  return 0;
}
int cuMemAddressFree(u64 p, size_t size) { snprintf(last, sizeof last, "cuMemAddressFree 0x%llx %zu", p, size); return 0; }
int cuMemMap(u64 p, size_t size, size_t off, u64 h, u64 flags) {
  snprintf(last, sizeof last, "cuMemMap 0x%llx %zu off=%zu 0x%llx flags=%llu", p, size, off, h, flags);
  return 0;
}
int cuMemUnmap(u64 p, size_t size) {
  snprintf(last, sizeof last, "cuMemUnmap 0x%llx %zu", p, size);
  return p < 0x7f0000000000ull ? 1 : 0; /* nothing is mapped below the fake reservation */
}
int cuMemSetAccess(u64 p, size_t size, const CUmemAccessDesc* d, size_t count) {
  int n = snprintf(last, sizeof last, "cuMemSetAccess 0x%llx %zu", p, size);
  for (size_t i = 0; i < count; i++)
    n += snprintf(last + n, sizeof last - n, " [%d/%d:%d]", d[i].location.type, d[i].location.id, d[i].flags);
  return 0;
}
