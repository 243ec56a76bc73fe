#include "unitrain/parallel/listen_address.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "unitrain/core/error.h"

namespace unitrain {

struct ListenAddressScope::Slot {
  sockaddr_storage addr{};  ///< port 0; the bind's own port is kept
  socklen_t len = 0;
  int redirected = 0;
  Slot* outer = nullptr;
};

namespace {

thread_local ListenAddressScope::Slot* g_scope = nullptr;

using BindFn = int (*)(int, const sockaddr*, socklen_t);

int real_bind(int fd, const sockaddr* addr, socklen_t len) {
  static const BindFn next = reinterpret_cast<BindFn>(::dlsym(RTLD_NEXT, "bind"));
  if (next != nullptr && next != &::bind) return next(fd, addr, len);
  return static_cast<int>(::syscall(SYS_bind, fd, addr, len));
}

bool is_wildcard_bind(const sockaddr* a, socklen_t len) {
  if (a->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (a->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  }
  return false;
}

uint16_t bind_port_of(const sockaddr* a) {
  return a->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(a)->sin_port
                                 : reinterpret_cast<const sockaddr_in6*>(a)->sin6_port;
}

/// `to` with the port of `from`, in the family of `from`: an IPv4 address becomes ::ffff:a.b.c.d
/// for an IPv6 socket. False when it cannot be said in that family.
bool redirected_address(const ListenAddressScope::Slot& to, const sockaddr* from,
                        sockaddr_storage& out, socklen_t& out_len) {
  std::memset(&out, 0, sizeof out);
  const auto& target = to.addr;
  if (from->sa_family == AF_INET && target.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
    *v4 = reinterpret_cast<const sockaddr_in&>(target);
    v4->sin_port = bind_port_of(from);
    out_len = sizeof(sockaddr_in);
    return true;
  }
  if (from->sa_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = bind_port_of(from);
    if (target.ss_family == AF_INET6) {
      v6->sin6_addr = reinterpret_cast<const sockaddr_in6&>(target).sin6_addr;
      v6->sin6_scope_id = reinterpret_cast<const sockaddr_in6&>(target).sin6_scope_id;
    } else {
      const in_addr a = reinterpret_cast<const sockaddr_in&>(target).sin_addr;
      uint8_t* b = v6->sin6_addr.s6_addr;
      b[10] = b[11] = 0xff;
      std::memcpy(b + 12, &a, 4);
    }
    out_len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

std::string numeric_host(const sockaddr* a, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(a, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

}  // namespace

ListenAddressScope::ListenAddressScope(const std::string& host, const std::string& what)
    : slot_(new Slot()) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    delete slot_;
    throw ConfigError(
        detail::concat(what, "='", host, "' does not resolve to an address: ", ::gai_strerror(rc)));
  }
  // The first address of this machine it resolves to, IPv4 first (what the other ranks'
  // connections to it usually use).
  std::string tried;
  for (int family : {AF_INET, AF_INET6}) {
    for (addrinfo* a = found; a != nullptr && slot_->len == 0; a = a->ai_next) {
      if (a->ai_family != family) continue;
      tried += (tried.empty() ? "" : ", ") + numeric_host(a->ai_addr, a->ai_addrlen);
      const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      const bool local = real_bind(fd, a->ai_addr, a->ai_addrlen) == 0;  // port 0: any
      ::close(fd);
      if (!local) continue;
      std::memcpy(&slot_->addr, a->ai_addr, a->ai_addrlen);
      slot_->len = a->ai_addrlen;
      address_ = numeric_host(a->ai_addr, a->ai_addrlen);
    }
  }
  ::freeaddrinfo(found);
  if (slot_->len == 0) {
    delete slot_;
    throw ConfigError(detail::concat(
        what, "='", host, "' (", tried.empty() ? "no TCP address" : tried,
        ") is not an address of this machine, but rank 0 runs here and hosts the rendezvous "
        "there: set ",
        what, " to this machine's address as the other machines reach it"));
  }
  slot_->outer = g_scope;
  g_scope = slot_;
}

ListenAddressScope::~ListenAddressScope() {
  g_scope = slot_->outer;
  delete slot_;
}

int ListenAddressScope::redirected() const { return slot_->redirected; }

}  // namespace unitrain

/// Every bind of the process comes here (libunitrain comes before libc in the symbol order of
/// the programs that link it). Unchanged but for a wildcard bind on a thread inside a
/// ListenAddressScope.
extern "C" __attribute__((visibility("default"))) int bind(int fd, const sockaddr* addr,
                                                           socklen_t len) {
  using namespace unitrain;
  ListenAddressScope::Slot* scope = g_scope;
  if (scope == nullptr || addr == nullptr || !is_wildcard_bind(addr, len)) {
    return real_bind(fd, addr, len);
  }
  sockaddr_storage to;
  socklen_t to_len = 0;
  if (!redirected_address(*scope, addr, to, to_len)) {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  ++scope->redirected;
  return real_bind(fd, reinterpret_cast<const sockaddr*>(&to), to_len);
}
