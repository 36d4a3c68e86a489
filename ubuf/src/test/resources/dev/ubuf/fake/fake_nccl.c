/* A stand-in for libnccl.so.2 with nccl.h's (v2.28.3) signatures, for ABI tests on machines without NCCL.
 * Each call records its arguments as text (fake_last_call) so the Java side can check what crossed the boundary. */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int nranks; int rank; } fakeComm;
typedef void* stream_t;

static char last[512];
const char* fake_last_call(void) { return last; }

int ncclGetVersion(int* v) { *v = 22803; snprintf(last, sizeof last, "ncclGetVersion"); return 0; }

int ncclGetUniqueId(ncclUniqueId* id) {
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(255 - i);
  snprintf(last, sizeof last, "ncclGetUniqueId");
  return 0;
}

/* The id arrives by value: accept it only if byte i == (i * 7 + 3) & 0xff, as the test sends it. */
int ncclCommInitRank(fakeComm** comm, int nranks, ncclUniqueId id, int rank) {
  for (int i = 0; i < 128; i++) {
    if ((unsigned char)id.internal[i] != ((i * 7 + 3) & 0xff)) {
      snprintf(last, sizeof last, "ncclCommInitRank bad id byte %d", i);
      return 4;
    }
  }
  fakeComm* c = malloc(sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  *comm = c;
  snprintf(last, sizeof last, "ncclCommInitRank nranks=%d rank=%d", nranks, rank);
  return 0;
}

int ncclCommInitAll(fakeComm** comms, int ndev, const int* devlist) {
  int n = snprintf(last, sizeof last, "ncclCommInitAll ndev=%d devs=", ndev);
  for (int i = 0; i < ndev; i++) {
    fakeComm* c = malloc(sizeof *c);
    c->nranks = ndev;
    c->rank = i;
    comms[i] = c;
    n += snprintf(last + n, sizeof last - n, "%d,", devlist[i]);
  }
  return 0;
}

int ncclCommDestroy(fakeComm* c) { snprintf(last, sizeof last, "ncclCommDestroy rank=%d", c->rank); free(c); return 0; }
int ncclCommAbort(fakeComm* c) { snprintf(last, sizeof last, "ncclCommAbort rank=%d", c->rank); free(c); return 0; }
int ncclCommGetAsyncError(fakeComm* c, int* e) { *e = c->rank == 3 ? 6 : 0; return 0; }
int ncclCommCount(const fakeComm* c, int* n) { *n = c->nranks; return 0; }
int ncclCommUserRank(const fakeComm* c, int* r) { *r = c->rank; return 0; }

int ncclAllGather(const void* s, void* r, size_t count, int dt, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclAllGather %p %p %zu %d rank=%d %p", s, r, count, dt, c->rank, st);
  return 0;
}
int ncclReduceScatter(const void* s, void* r, size_t count, int dt, int op, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclReduceScatter %p %p %zu %d %d rank=%d %p", s, r, count, dt, op, c->rank, st);
  return 0;
}
int ncclAllReduce(const void* s, void* r, size_t count, int dt, int op, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclAllReduce %p %p %zu %d %d rank=%d %p", s, r, count, dt, op, c->rank, st);
  return count == 13 ? 5 : 0; /* 13 elements: fail with ncclInvalidUsage */
}
int ncclBroadcast(const void* s, void* r, size_t count, int dt, int root, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclBroadcast %p %p %zu %d root=%d rank=%d %p", s, r, count, dt, root, c->rank, st);
  return 0;
}
int ncclSend(const void* b, size_t count, int dt, int peer, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclSend %p %zu %d peer=%d rank=%d %p", b, count, dt, peer, c->rank, st);
  return 0;
}
int ncclRecv(void* b, size_t count, int dt, int peer, fakeComm* c, stream_t st) {
  snprintf(last, sizeof last, "ncclRecv %p %zu %d peer=%d rank=%d %p", b, count, dt, peer, c->rank, st);
  return 0;
}
int ncclGroupStart(void) { snprintf(last, sizeof last, "ncclGroupStart"); return 0; }
int ncclGroupEnd(void) { snprintf(last, sizeof last, "ncclGroupEnd"); return 0; }

const char* ncclGetErrorString(int rc) { return rc == 5 ? "invalid usage (run with NCCL_DEBUG=WARN for details)" : "some error"; }
const char* ncclGetLastError(fakeComm* c) { (void)c; return "fake: count 13 is unlucky"; }
