#pragma once
// c10d's TCPStore serves through libuv by default from LibTorch 2.4 (TCPStoreOptions::useLibUV),
// which a LibTorch built without libuv (Debian 13's) refuses at start; 1.x has no such option.
// tcp_store_options() gives options with the classic socket server, which every build has.
// From LibTorch 2.2 the server can take over a listening socket made for it
// (TCPStoreOptions::masterListenFd, used by ListenSocket, parallel/listen_address.h); 1.x's
// listens on every interface.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <type_traits>
#include <utility>

namespace unitrain {
namespace compat_detail {

template <typename Options>
auto without_libuv(Options& o, int) -> decltype(void(o.useLibUV = false)) {
  o.useLibUV = false;
}
template <typename Options>
void without_libuv(Options&, long) {}  // LibTorch without the option

template <typename Options, typename = void>
struct takes_listen_fd : std::false_type {};
template <typename Options>
struct takes_listen_fd<Options, std::void_t<decltype(std::declval<Options&>().masterListenFd = 0)>>
    : std::true_type {};

}  // namespace compat_detail

inline c10d::TCPStoreOptions tcp_store_options() {
  c10d::TCPStoreOptions o;
  compat_detail::without_libuv(o, 0);
  return o;
}

/// True when a TCPStore server can take over a listening socket (give_listen_socket).
constexpr bool store_takes_listen_socket() {
  return compat_detail::takes_listen_fd<c10d::TCPStoreOptions>::value;
}

/// `fd` (bound, listening) for the server of `o`, where store_takes_listen_socket().
template <typename Options>
void give_listen_socket(Options& o, int fd) {
  if constexpr (compat_detail::takes_listen_fd<Options>::value) o.masterListenFd = fd;
}

}  // namespace unitrain
