#include "unitrain/parallel/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "unitrain/compat/tcp_store_options.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

std::string numeric_host(const sockaddr* a, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(a, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

void set_port(sockaddr_storage& a, uint16_t port) {
  if (a.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(a).sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6&>(a).sin6_port = htons(port);
  }
}

uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(a).sin_port
                                      : reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  }
  return a->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

}  // namespace

std::string loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return "";
  std::string addresses;
  bool all = found != nullptr;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (!is_loopback(a->ai_addr)) all = false;
    const std::string n = numeric_host(a->ai_addr, a->ai_addrlen);
    if (addresses.find(n) == std::string::npos) addresses += (addresses.empty() ? "" : ", ") + n;
  }
  ::freeaddrinfo(found);
  return all ? addresses : "";
}

bool ListenSocket::store_takes_socket() { return store_takes_listen_socket(); }

ListenSocket::ListenSocket(const std::string& host, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    throw ConfigError(
        detail::concat(what, "='", host, "' does not resolve to an address: ", ::gai_strerror(rc)));
  }
  // The first address of this machine it resolves to, IPv4 first (what the other ranks'
  // connections to it usually use): one a socket can be bound to (port 0, closed at once).
  std::string tried;
  for (int family : {AF_INET, AF_INET6}) {
    for (addrinfo* a = found; a != nullptr && sockaddr_.empty(); a = a->ai_next) {
      if (a->ai_family != family) continue;
      tried += (tried.empty() ? "" : ", ") + numeric_host(a->ai_addr, a->ai_addrlen);
      const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      const bool local = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
      ::close(fd);
      if (!local) continue;
      sockaddr_.assign(reinterpret_cast<const char*>(a->ai_addr), a->ai_addrlen);
      address_ = numeric_host(a->ai_addr, a->ai_addrlen);
    }
  }
  ::freeaddrinfo(found);
  UT_CHECK(!sockaddr_.empty(), what, "='", host, "' (", tried.empty() ? "no TCP address" : tried,
           ") is not an address of this machine, but the rendezvous is hosted here: set ", what,
           " to this machine's address as the other machines reach it");
}

ListenSocket::~ListenSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool ListenSocket::hand_to(c10d::TCPStoreOptions& options) {
  if (!store_takes_socket()) return false;
  sockaddr_storage a{};
  std::memcpy(&a, sockaddr_.data(), sockaddr_.size());
  set_port(a, options.port);
  const auto socklen = static_cast<socklen_t>(sockaddr_.size());
  const std::string where = address_ + ":" + std::to_string(options.port);
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("cannot make a socket: " + std::string(strerror(errno)));
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as c10d's own server does
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&a), socklen) != 0 ||
      ::listen(fd_, SOMAXCONN) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("cannot listen on " + where + ": " + std::strerror(error));
  }
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  options.port = port_of(a);
  give_listen_socket(options, fd_);
  fd_ = -1;  // the store's now: it closes it
  return true;
}

std::string ListenSocket::every_interface_note(int port, const std::string& what) const {
  return detail::concat("the rendezvous store listens on every interface at port ", port,
                        ", as torchrun's does (this LibTorch's TCPStore takes no address; from "
                        "LibTorch 2.2 it listens on ",
                        what, " ", address_, " only)");
}

}  // namespace unitrain
