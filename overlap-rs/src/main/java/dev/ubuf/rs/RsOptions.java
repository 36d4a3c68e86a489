package dev.ubuf.rs;

import dev.ubuf.tensor.DType;

import java.util.Objects;

/**
 * Tuning knobs of the RS methods; each method reads the ones it names. Immutable: derive variants with the
 * {@code with...} methods. Shape-dependent limits (splits dividing n, sub-chunks fitting m/tp) are checked when a
 * schedule is made.
 *
 * @param computeStreams   GEMM streams, 1..3; consecutive GEMMs go round-robin over them (RING, PIPELINE)
 * @param numSplits        PIPELINE: column blocks of the GEMM, each reduce-scattered while the next computes;
 *                         must divide n
 * @param gemmSmMargin     PIPELINE: SMs the executor keeps free of the GEMMs (cuBLASLt SM_COUNT_TARGET =
 *                         device SMs - margin) so the pull-reduce kernel of block j runs beside GEMM j+1;
 *                         0 = no budget
 * @param ringSubChunks    RING: row sub-chunks per ring step, at least 1 and at most m/tp. With 2 or more, the copy
 *                         of sub-chunk j to the neighbour runs while sub-chunk j+1 computes; with 1 every step
 *                         waits for the previous step's copy (a serial chain of GEMM + copy)
 * @param ringSlots        RING: receive slots (each [m/tp, n]) in the user buffer, at least 2, clamped to tp-1.
 *                         A slot is freed by sending its sum onward, which needs a free slot at the neighbour:
 *                         with one slot that is a cycle round the ring; with 2 the neighbour fills step i+1
 *                         while step i is still being read; more slots add slack against jitter
 * @param ringPartialDtype RING: type of the partial sums on the wire and in the slots. FP32 (default) keeps every
 *                         accumulation in fp32 and rounds once into the output; the output dtype halves the NVLink
 *                         bytes at the price of one rounding per ring step
 * @param ringBidirectional RING: the first half of each chunk's rows goes round the ring one way and the second half
 *                         the other way, each ring with its own copy stream, flags and half of every slot, so each
 *                         rank sends to both neighbours at once; every half holds {@code ringSubChunks} sub-chunks
 * @param bulkStaged       BULK: the copy engines first pull this rank's rows of every peer's partial into a local
 *                         scratch, then a local kernel sums them; the SMs then only run a short local reduction
 *                         instead of a kernel that reads over NVLink for as long as the transfer takes
 * @param pushCtas         SCATTER: 0 = the pushes to the peers run on the copy engines; C &gt; 0 = each push is an
 *                         SM copy kernel of C blocks and the GEMMs leave C SMs per peer free for them. Tried for
 *                         shapes where the transfer outlasts the GEMMs (NCCL's kernels outrun the copy engines
 *                         there): slower than the copy engines at every shape measured on 4 H100s, so named only
 * @param serialPushes     SCATTER: every push on one copy stream, in step order, instead of a stream per peer. Each
 *                         rank then sends to one peer at a time, and with the ranks at the same step the sends form
 *                         a permutation: on 4 H100s one push per GPU ran at 287-357 GB/s (16-64 MB) where pushes to
 *                         three peers at once shared 217-227 GB/s (`bench pushes`, 2026-11-27); inside scatter,
 *                         beside its GEMMs, that gained nothing (tp 4 sweep: 0.998x, median), so named only. BULK
 *                         with {@code bulkStaged}: the pulls from the peers likewise, on one stream
 * @param ringFusedTail    RING with partial sums in the op's dtype: the last step's GEMM waits for the received sum
 *                         and reads it as its C operand, writing own partial + received sum into the output rounded
 *                         once, instead of rounding its own partial into the output and then adding the received sum
 *                         in a pass of its own (on the GEMMs' stream, so in the op's critical path). SCATTER likewise
 *                         with the partial that arrives first (from rank r-1, sent at the first step): the own GEMM
 *                         adds it as its C operand, so the reduction after it reads one source fewer (at tp 2 none)
 * @param ringDirect       RING with partial sums in the op's dtype: each step's GEMM writes its running sum straight
 *                         into the next rank's receive slot (D at a peer's address, the received sum read as C), so
 *                         no copy, no scratch and no reduction pass; the last step's GEMM adds the received sum as
 *                         with {@code ringFusedTail}. The sums cross NVLink as the GEMM's epilogue stores them,
 *                         which on 2 H200s slowed that GEMM by more than the copy costs: named only
 * @param freeSms          RING, SCATTER: SMs the GEMMs leave free (cuBLASLt SM_COUNT_TARGET = device SMs - freeSms).
 *                         Under CUDA graphs the signals and waits are one-thread kernels; beside a GEMM that holds
 *                         every SM until its last tile they start only when it ends (traced: a data signal 91 us
 *                         late, a fused tail's GEMM waiting for it). 0 = the whole GPU
 * @param ownPieces        SCATTER: row pieces of the own step (its GEMM and the reduction after it), independent of
 *                         the {@code ringSubChunks} the pushes are cut into; 0 = as many as {@code ringSubChunks}.
 *                         What stays exposed after the last GEMM is one piece's reduction, so more pieces shorten
 *                         the tail, and only the own step's GEMM pays for being cut, not the tp-1 steps before it
 */
public record RsOptions(int computeStreams, int numSplits, int gemmSmMargin, int ringSubChunks, int ringSlots,
                        DType ringPartialDtype, boolean ringBidirectional, boolean bulkStaged, int pushCtas,
                        boolean serialPushes, boolean ringFusedTail, boolean ringDirect, int freeSms,
                        int ownPieces) {

    /** Transformer Engine's pipeline defaults (4 splits, 16 SMs for communication) and a 2-sub-chunk fp32 ring. */
    public static final RsOptions DEFAULTS = new RsOptions(3, 4, 16, 2, 2, DType.FP32, false, false, 0, false, false,
            false, 0, 0);

    public RsOptions {
        Objects.requireNonNull(ringPartialDtype, "ringPartialDtype");
        if (computeStreams < 1 || computeStreams > 3) {
            throw new IllegalArgumentException("computeStreams must be 1..3, got " + computeStreams);
        }
        if (numSplits < 1) {
            throw new IllegalArgumentException("numSplits must be >= 1, got " + numSplits);
        }
        if (gemmSmMargin < 0) {
            throw new IllegalArgumentException("gemmSmMargin must be >= 0, got " + gemmSmMargin);
        }
        if (ringSubChunks < 1) {
            throw new IllegalArgumentException("ringSubChunks must be >= 1, got " + ringSubChunks);
        }
        if (ringSlots < 2) {
            throw new IllegalArgumentException("ringSlots must be >= 2, got " + ringSlots + ": with one slot each"
                    + " rank's send waits for its neighbour to free its slot by its own send, a cycle round the ring");
        }
        if (freeSms < 0) {
            throw new IllegalArgumentException("freeSms must be >= 0, got " + freeSms);
        }
        if (ownPieces < 0) {
            throw new IllegalArgumentException("ownPieces must be >= 0 (0 = as many as ringSubChunks), got " + ownPieces);
        }
        if (pushCtas < 0) {
            throw new IllegalArgumentException("pushCtas must be >= 0, got " + pushCtas);
        }
        if (ringPartialDtype.isReserved()) {
            throw new IllegalArgumentException("ringPartialDtype " + ringPartialDtype + " is reserved");
        }
    }

    public RsOptions withComputeStreams(int v) {
        return new RsOptions(v, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withNumSplits(int v) {
        return new RsOptions(computeStreams, v, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withGemmSmMargin(int v) {
        return new RsOptions(computeStreams, numSplits, v, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingSubChunks(int v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, v, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingSlots(int v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, v, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingPartialDtype(DType v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, v,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingBidirectional(boolean v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                v, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withBulkStaged(boolean v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, v, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withPushCtas(int v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, v, serialPushes, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingFusedTail(boolean v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, v, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withSerialPushes(boolean v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, v, ringFusedTail, ringDirect, freeSms, ownPieces);
    }

    public RsOptions withRingDirect(boolean v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, v, freeSms, ownPieces);
    }

    public RsOptions withFreeSms(int v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, v, ownPieces);
    }

    public RsOptions withOwnPieces(int v) {
        return new RsOptions(computeStreams, numSplits, gemmSmMargin, ringSubChunks, ringSlots, ringPartialDtype,
                ringBidirectional, bulkStaged, pushCtas, serialPushes, ringFusedTail, ringDirect, freeSms, v);
    }

    /** SCATTER: the row pieces of the own step, {@link #ownPieces} or, where that is 0, {@link #ringSubChunks}. */
    public int ownStepPieces() {
        return ownPieces == 0 ? ringSubChunks : ownPieces;
    }
}
