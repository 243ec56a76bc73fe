#pragma once
// How the process keeps freed memory: LibTorch frees and allocates megabytes every step
// (gradients, optimizer temporaries, activations); glibc's defaults hand such blocks back to the
// kernel and map them again, zeroed, on the next step. See docs/performance.md ("Memory").
#include <cstddef>
#include <string>

namespace unitrain {

/// Tells glibc's malloc to keep freed memory in the process (mallopt: blocks up to 32 MB come
/// from the heap instead of fresh mmaps, and the heap is never trimmed), so a training step reuses
/// the previous step's memory. Process-wide; call it once, early (the `unitrain` command does,
/// first thing). The environment variable UNITRAIN_MALLOC=system leaves glibc's defaults alone.
/// Returns what was done, for the log ("" when left alone). Costs memory: the peak of a step
/// stays mapped (see docs/performance.md).
std::string keep_freed_memory();

/// Undoes keep_freed_memory for a run whose memory is its limit (distributed.zero: 3, chosen to
/// fit a model in less memory): glibc's own thresholds again, fixed at their 128 KB start (a
/// freed block above is unmapped at once; the heap's free top is trimmed), so that a step's
/// freed gathers and gradients do not stay mapped — measured: a 2-worker ZeRO 3 step's peak
/// 573 MB against 868-1029 MB kept (docs/performance.md, "Memory"). Process-wide, as
/// keep_freed_memory. Returns what was done for the log; "" under UNITRAIN_MALLOC=system.
std::string give_back_freed_memory();

/// Hands the memory malloc holds free back to the kernel now (glibc's malloc_trim over every
/// arena; nothing elsewhere): after a phase that freed more than the steps will reuse — a whole
/// model cut into ZeRO 3's parts, checkpoint files read to resume — so that it does not stay in
/// the process (keep_freed_memory keeps it otherwise). Changes no setting. Returns the bytes
/// malloc held free before (0 where unknown).
size_t release_freed_memory();

}  // namespace unitrain
