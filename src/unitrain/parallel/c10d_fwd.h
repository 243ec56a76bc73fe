#pragma once
// Forward declarations of c10d's classes, so that headers need not include c10d's.
#include <c10/util/intrusive_ptr.h>

namespace c10d {
class ProcessGroup;
class Store;
class Work;
}  // namespace c10d
