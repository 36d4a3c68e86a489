/** AllGather-GEMM overlap: the AG overlap methods, registered as {@link dev.ubuf.op.OverlapMethod} services. */
module dev.ubuf.ag {
    requires transitive dev.ubuf.core;

    exports dev.ubuf.ag;

    provides dev.ubuf.op.OverlapMethod with
            dev.ubuf.ag.RingAllGatherGemm,
            dev.ubuf.ag.BidirectionalRingAllGatherGemm,
            dev.ubuf.ag.AggregateAllGatherGemm,
            dev.ubuf.ag.OneShotAllGatherGemm,
            dev.ubuf.ag.FanOutAllGatherGemm,
            dev.ubuf.ag.BulkAllGather;
}
