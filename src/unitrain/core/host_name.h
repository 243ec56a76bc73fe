#pragma once
// This machine's name, as messages, lock records and file names give it.
#include <unistd.h>

#include <string>

namespace unitrain {

/// gethostname(), or "localhost" when it fails.
inline std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

}  // namespace unitrain
