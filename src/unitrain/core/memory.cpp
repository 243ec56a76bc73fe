#include "unitrain/core/memory.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace unitrain {

std::string keep_freed_memory() {
  const char* choice = std::getenv("UNITRAIN_MALLOC");
  if (choice != nullptr && std::strcmp(choice, "system") == 0) return "";
  // 32 MB is the largest threshold glibc accepts (half its per-thread heap size on 64-bit);
  // larger blocks are still mapped per allocation, which for them costs little per byte.
  constexpr int kMmapThreshold = 32 << 20;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;  // >= 1 GB free at the top
  if (!mmap_ok || !trim_ok) return "";
  return "malloc keeps freed memory (mmap threshold 32 MB, no trimming below 1 GB; "
         "UNITRAIN_MALLOC=system turns this off)";
}

std::string give_back_freed_memory() {
  const char* choice = std::getenv("UNITRAIN_MALLOC");
  if (choice != nullptr && std::strcmp(choice, "system") == 0) return "";
  constexpr int kGlibcStart = 128 * 1024;  // glibc's initial mmap and trim thresholds
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kGlibcStart) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kGlibcStart) == 1;
  if (!mmap_ok || !trim_ok) return "";
  release_freed_memory();  // what was kept until now
  return "malloc gives freed memory back (mmap and trim thresholds 128 KB): the run's memory "
         "is its limit";
}

size_t release_freed_memory() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const size_t free_bytes = mallinfo2().fordblks;
  malloc_trim(0);
  return free_bytes;
#elif defined(__GLIBC__)
  malloc_trim(0);
  return 0;
#else
  return 0;
#endif
}

}  // namespace unitrain
