// Graph-safe signalling. A captured CUDA graph replays the same values every time, so stream memory operations
// with host-computed sequence numbers cannot be captured. In this mode the sequence numbers derive from a device
// epoch word (calls started so far) that a one-thread kernel advances at the start of each call; signals and waits
// are one-thread kernels that read it. Flags stay monotonic and are compared wrap-safe, as in the memop mode.
#include "ubuf_common.cuh"

namespace ubuf {

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

}  // namespace ubuf

// epoch[0] += 1: the call that starts now has number epoch[0] - 1.
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS) ubuf_epoch_advance(int* epoch) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        epoch[0] += 1;
    }
}

// *flag = (epoch - 1) * perCall + k, after everything earlier on this stream (e.g. the copy into the peer).
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_signal(int* flag, const int* epoch, int perCall, int k) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int value = (*(volatile const int*) epoch - 1) * perCall + k;
        __threadfence_system();
        atomicExch(flag, value);
    }
}

// Spins until (int)(*flag - ((epoch - 1) * perCall + count)) >= 0. Past timeoutNs it traps: the context fails and
// the host's wait reports an error instead of hanging (graph mode has no host in the loop to time out).
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_wait(const int* flag, const int* epoch, int perCall, int count, unsigned long long timeoutNs) {
    if (blockIdx.x != 0 || threadIdx.x != 0) {
        return;
    }
    const int target = (*(volatile const int*) epoch - 1) * perCall + count;
    const unsigned long long start = ubuf::global_timer_ns();
    while ((int) (*(volatile const int*) flag - target) < 0) {
        __nanosleep(200);
        if (ubuf::global_timer_ns() - start > timeoutNs) {
            printf("ubuf_wait: flag %p stayed at %d, needed %d, for %llu ns: trapping\n", flag,
                   *(volatile const int*) flag, target, timeoutNs);
            __trap();
        }
    }
    __threadfence_system();
}

// Up to 8 signals or waits that one stream issues in a row, as one kernel instead of one launch each (a reduce-
// scatter's tail waits for every peer, then credits every peer). Passed by value: flag[i] with perCall = pc[i].x and
// k or count = pc[i].y; entries past n are ignored.
struct UbufFlagRun {
    int* flag[8];
    int2 pc[8];
};

// Thread i < n: *flag[i] = (epoch - 1) * perCall[i] + k[i], each after a system fence, as ubuf_signal.
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_signal_run(UbufFlagRun run, int n, const int* epoch) {
    const int i = threadIdx.x;
    if (blockIdx.x == 0 && i < n && i < 8) {
        int value = (*(volatile const int*) epoch - 1) * run.pc[i].x + run.pc[i].y;
        __threadfence_system();
        atomicExch(run.flag[i], value);
    }
}

// Thread i < n spins as ubuf_wait does on flag[i] for count[i]; the kernel ends when every flag has its value.
extern "C" __global__ void __launch_bounds__(UBUF_MAX_THREADS)
ubuf_wait_run(UbufFlagRun run, int n, const int* epoch, unsigned long long timeoutNs) {
    const int i = threadIdx.x;
    if (blockIdx.x == 0 && i < n && i < 8) {
        const int* flag = run.flag[i];
        const int target = (*(volatile const int*) epoch - 1) * run.pc[i].x + run.pc[i].y;
        const unsigned long long start = ubuf::global_timer_ns();
        while ((int) (*(volatile const int*) flag - target) < 0) {
            __nanosleep(200);
            if (ubuf::global_timer_ns() - start > timeoutNs) {
                printf("ubuf_wait_run: flag %p stayed at %d, needed %d, for %llu ns: trapping\n", flag,
                       *(volatile const int*) flag, target, timeoutNs);
                __trap();
            }
        }
        __threadfence_system();
    }
}
