/** GEMM-ReduceScatter overlap: the RS overlap methods, registered as {@link dev.ubuf.op.OverlapMethod} services. */
module dev.ubuf.rs {
    requires transitive dev.ubuf.core;

    exports dev.ubuf.rs;

    provides dev.ubuf.op.OverlapMethod with
            dev.ubuf.rs.RingExchangeGemmReduceScatter,
            dev.ubuf.rs.PipelinedGemmReduceScatter,
            dev.ubuf.rs.OneShotGemmReduceScatter,
            dev.ubuf.rs.ScatterGemmReduceScatter,
            dev.ubuf.rs.BulkReduceScatter;
}
