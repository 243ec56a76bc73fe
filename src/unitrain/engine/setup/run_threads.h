#pragma once
// The thread count of a fit: train.threads, OMP_NUM_THREADS or auto; a resume's recorded count;
// one count for the job's ranks.
#include <cstdint>
#include <memory>

#include "unitrain/threads/thread_governor.h"

namespace unitrain {

struct ResumePoint;
class ProcessGroup;

/// choose_thread_count for this process: `configured` is train.threads (0 = auto), the
/// environment's OMP_NUM_THREADS and the CPUs this process may use are read here; a resume
/// keeps the checkpoint's count when it trained with as many processes as this run has. In a
/// data-parallel run (`group`) the ranks whose count auto chose agree on the smallest, so every
/// rank computes alike (a collective every rank reaches, whatever it chose).
ThreadCount run_thread_count(int64_t configured, int64_t local_workers, const ResumePoint& resume,
                             ProcessGroup* group);

/// The governor of a fit's threads, on the thread that trains: run_thread_count's count (its
/// warning logged), placed as the load says.
std::unique_ptr<ThreadGovernor> govern_threads(int64_t configured, int64_t local_workers,
                                               const ResumePoint& resume, ProcessGroup* group);

}  // namespace unitrain
