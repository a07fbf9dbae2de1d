// Our FLOP counts of a collected trace (issue 38 §3): every convolution and matrix product,
// whatever aten entry point recorded it, from its recorded inputs (common/trace/flop_formulas.h),
// counted once per FLOP-bearing chain. Torch-free: both CPU collectors (op_collector.h,
// torch_profiler.h) fill CollectedEvent::flop_args for the ops of the formula table, and this
// pass turns them into CollectedEvent::flops.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_FLOP_ATTRIBUTION_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_FLOP_ATTRIBUTION_H_

#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

// Per thread, the CPU ops nest by time (a child starts at or after its parent and ends by its
// end). Walking each thread's ops outermost first:
//   - an op inside a counted FLOP-bearing op (conv2d > convolution > _convolution >
//     mkldnn_convolution, matmul > mm, sdpa > its kernel) loses any count: the outer op is the
//     computation, counted once;
//   - a formula op (ClassifyFlopOp) outside one gets our count; where its inputs cannot be read
//     it keeps the collector's own count (LibTorch's) if it has one, else none, and the ops it
//     dispatches to are tried in turn;
//   - any other op keeps what the collector counted (LibTorch's add and mul).
// flop_args are dropped afterwards. What stays uncounted is named by the analyser
// (Profile::flops_uncounted_ops), which reads the same table.
void AttributeFlops(CollectedTrace& trace);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_FLOP_ATTRIBUTION_H_
