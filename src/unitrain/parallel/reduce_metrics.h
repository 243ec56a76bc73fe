#pragma once
// Metrics of a data-parallel run: each rank accumulates over its own samples; reducing sums
// (value x count, count) over ranks gives the mean over all samples, each counted once.
#include "unitrain/metrics/metric_accumulator.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

/// Replaces `sums` by the sums over every rank (names any rank has; a name only some ranks
/// saw counts with weight 0 elsewhere). Every rank must call it at the same point.
void all_reduce_metrics(ProcessGroup& group, MetricAccumulator& sums);

}  // namespace unitrain
