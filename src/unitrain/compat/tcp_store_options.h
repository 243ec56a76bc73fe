#pragma once
// c10d's TCPStore serves through libuv by default from LibTorch 2.4 (TCPStoreOptions::useLibUV),
// which a LibTorch built without libuv (Debian 13's) refuses at start; 1.x has no such option.
// tcp_store_options() gives options with the classic socket server, which every build has and
// ListenAddressScope (parallel/listen_address.h) was made for.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <utility>

namespace unitrain {
namespace compat_detail {

template <typename Options>
auto without_libuv(Options& o, int) -> decltype(void(o.useLibUV = false)) {
  o.useLibUV = false;
}
template <typename Options>
void without_libuv(Options&, long) {}  // LibTorch without the option

}  // namespace compat_detail

inline c10d::TCPStoreOptions tcp_store_options() {
  c10d::TCPStoreOptions o;
  compat_detail::without_libuv(o, 0);
  return o;
}

}  // namespace unitrain
