/**
 * The op model: one op type for every overlapped GEMM, and the seam through which modules add methods.
 *
 * <ul>
 *   <li>{@link dev.ubuf.op.OverlapMethod}: a method (ring exchange, pipelined split, bulk, one-shot, ...). Modules
 *       register theirs for {@link java.util.ServiceLoader}; {@link dev.ubuf.op.MethodRegistry} finds them.</li>
 *   <li>{@link dev.ubuf.op.Schedule}: a method compiled for one {@link dev.ubuf.op.OverlapShape} and one set of
 *       options: the plans of every rank, pure data, run by the CUDA executor and by the host executor alike.</li>
 *   <li>{@link dev.ubuf.op.OverlapOp}: the op a caller holds, either a {@link dev.ubuf.op.PlanOp} running a schedule
 *       or the {@link dev.ubuf.op.NcclReferenceOp}; forward, await, trace and close are written once.</li>
 *   <li>{@link dev.ubuf.op.Planner}: chooses among every registered candidate and the NCCL reference by measuring
 *       them on the GPU once per shape (rank 0 decides), and remembers the choice per device.</li>
 * </ul>
 *
 * <h2>Adding a method</h2>
 * A method is one class in the module that owns it, implementing {@link dev.ubuf.op.OverlapMethod} (name,
 * collective, option keys, {@code schedule(shape, options)} returning the {@link dev.ubuf.op.Schedule} of each rank's
 * {@link dev.ubuf.plan.Plan}, and the option sets worth measuring in {@code tuningSpace}); in overlap-ag and
 * overlap-rs it implements that family's {@code AgOverlapMethod} or {@code RsOverlapMethod}, which write the rest
 * once. The files it touches, all in its module:
 * <ol>
 *   <li>the class;</li>
 *   <li>one line naming it in {@code src/main/resources/META-INF/services/dev.ubuf.op.OverlapMethod} (class path);</li>
 *   <li>one entry in {@code module-info.java}'s {@code provides dev.ubuf.op.OverlapMethod with ...} (module path).</li>
 * </ol>
 * Nothing else names it: the planner measures it against the other candidates, the benchmark and the GPU scenario
 * run it by name ({@code --methods name:key=value}), and the host-executor tests of its family, which iterate
 * {@link dev.ubuf.op.MethodRegistry}, check its plans in CPU tests ({@code HostPlanExecutor}).
 */
package dev.ubuf.op;
