#pragma once
// ListenAddressScope: where rank 0's rendezvous store listens. c10d's TCPStore (LibTorch 1.13)
// binds its server socket to the wildcard address, every interface, and has no option for
// another. While a scope is alive on a thread, a socket that thread binds to the wildcard
// address is bound to the scope's address instead (libunitrain defines `bind` for this; any
// other bind passes through unchanged).
#include <string>

namespace unitrain {

/// Example:
///   ListenAddressScope listen("10.0.0.1", "MASTER_ADDR");  // ConfigError if not this machine's
///   auto store = c10::make_intrusive<c10d::TCPStore>(...);  // listens on 10.0.0.1 only
class ListenAddressScope {
 public:
  /// `host`: a numeric address or a host name; `what` names where it came from, for errors.
  /// ConfigError when it does not resolve, or resolves to no address of this machine.
  ListenAddressScope(const std::string& host, const std::string& what);
  ~ListenAddressScope();
  ListenAddressScope(const ListenAddressScope&) = delete;
  ListenAddressScope& operator=(const ListenAddressScope&) = delete;

  /// The numeric address binds go to, e.g. "127.0.0.1".
  const std::string& address() const { return address_; }
  /// How many wildcard binds this scope redirected. 0 after the server started means the
  /// redirection was not in effect (another `bind` came first in the process's symbol order).
  int redirected() const;

  struct Slot;  ///< the redirection, as the bind function reads it (listen_address.cpp)

 private:
  std::string address_;
  Slot* slot_;
};

}  // namespace unitrain
