#pragma once
// ListenSocket: where a rendezvous store's server listens. LibTorch 2.x's TCPStore takes over a
// socket made for it (TCPStoreOptions::masterListenFd): one bound to MASTER_ADDR's address only,
// not to every interface. LibTorch 1.x's TCPStore cannot be given a socket or an address and
// listens on every interface, as torchrun's store does; the caller says so. Nothing of the
// process's own (libc's `bind`, other threads' sockets) is touched.
#include <cstdint>
#include <string>

namespace c10d {
struct TCPStoreOptions;
}

namespace unitrain {

/// The addresses `host` resolves to ("127.0.1.1" or "127.0.0.1, ::1") when every one is a
/// loopback address (127.0.0.0/8, ::1): only processes on the same machine reach it. "" when it
/// resolves to another address, or does not resolve.
std::string loopback_only(const std::string& host);

/// Example:
///   ListenSocket listen("10.0.0.1", "MASTER_ADDR");  // ConfigError if not this machine's
///   c10d::TCPStoreOptions o = tcp_store_options();
///   o.port = 29500;
///   o.isServer = true;
///   if (!listen.hand_to(o)) log("listens on every interface");
///   auto store = c10::make_intrusive<c10d::TCPStore>("10.0.0.1", o);
class ListenSocket {
 public:
  /// True when this LibTorch's TCPStore can take a socket (2.x), so that it listens on one
  /// address only.
  static bool store_takes_socket();

  /// `host`: a numeric address or a host name; `what` names where it came from, for errors.
  /// ConfigError when it does not resolve, or resolves to no address of this machine.
  ListenSocket(const std::string& host, const std::string& what);
  ~ListenSocket();  ///< closes a socket made and not handed over
  ListenSocket(const ListenSocket&) = delete;
  ListenSocket& operator=(const ListenSocket&) = delete;

  /// The numeric address it listens on, e.g. "127.0.0.1".
  const std::string& address() const { return address_; }

  /// Where store_takes_socket(): a socket bound to address() and `options.port` (0: any free
  /// port, written back into `options.port`), listening, given to `options` (the store closes
  /// it); std::runtime_error naming the address when it cannot be bound (the port in use).
  /// Else false, and `options` unchanged: the store will listen on every interface.
  bool hand_to(c10d::TCPStoreOptions& options);
  /// What the host says when hand_to() was false: the store listens on every interface at
  /// `port`, as torchrun's, and where it would listen with LibTorch 2.2+ (`what`: MASTER_ADDR).
  std::string every_interface_note(int port, const std::string& what) const;

 private:
  std::string address_;
  std::string sockaddr_;  ///< the address's sockaddr bytes, port 0
  int fd_ = -1;
};

}  // namespace unitrain
