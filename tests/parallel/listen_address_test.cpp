#include "unitrain/parallel/listen_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "test_util.h"
#include "unitrain/compat/tcp_store_options.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;

/// The address a socket of `family` bound to the wildcard address (port 0) gets.
std::string bound_address(int family) {
  const int fd = ::socket(family, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_storage any{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&any);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&any);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    len = sizeof(sockaddr_in6);
  }
  std::string out = "bind failed";
  if (::bind(fd, reinterpret_cast<sockaddr*>(&any), len) == 0) {
    sockaddr_storage got{};
    socklen_t got_len = sizeof got;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &got_len);
    char text[INET6_ADDRSTRLEN] = {};
    if (got.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(got).sin_addr, text, sizeof text);
    } else {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6&>(got).sin6_addr, text, sizeof text);
    }
    out = text;
  }
  ::close(fd);
  return out;
}

/// The local address (hex, as /proc/net/tcp writes it) of the socket listening on `port`.
std::string listening_on(int port) {
  char hex_port[8];
  std::snprintf(hex_port, sizeof hex_port, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.substr(local.find(':') + 1) == hex_port) {
        return local.substr(0, local.find(':'));
      }
    }
  }
  return "";
}

/// A TCPStore server for one worker on any free port, its socket from `listen` where it takes
/// one.
c10d::TCPStoreOptions server_options(ListenSocket& listen, bool* handed) {
  c10d::TCPStoreOptions o = tcp_store_options();
  o.port = 0;  // any free port
  o.isServer = true;
  o.numWorkers = 1;
  o.waitWorkers = false;
  *handed = listen.hand_to(o);
  return o;
}

TEST(ListenSocket, TheRendezvousStoreListensOnlyThereWhereLibTorchTakesASocket) {
  ListenSocket listen("localhost", "MASTER_ADDR");
  EXPECT_EQ(listen.address(), "127.0.0.1");
  bool handed = false;
  const c10d::TCPStoreOptions o = server_options(listen, &handed);
  EXPECT_EQ(handed, ListenSocket::store_takes_socket());
  c10d::TCPStore store("127.0.0.1", o);
  const std::string local = listening_on(store.getPort());
  if (handed) {
    EXPECT_NE(o.port, 0);  // the port bound, as the store expects it
    EXPECT_EQ(store.getPort(), o.port);
    EXPECT_EQ(local, "0100007F");  // 127.0.0.1 as /proc/net/tcp writes it
  } else {                         // LibTorch 1.x: every interface, as torchrun's store
    EXPECT_TRUE(local == "00000000" || local == std::string(32, '0')) << local;
  }
  store.set("k", std::vector<uint8_t>{1, 2});
  EXPECT_EQ(store.get("k"), (std::vector<uint8_t>{1, 2}));
}

TEST(ListenSocket, APortInUseIsNamedWhenTheSocketIsMadeHere) {
  ListenSocket taken("127.0.0.1", "MASTER_ADDR");
  bool handed = false;
  c10d::TCPStoreOptions first = server_options(taken, &handed);
  if (!handed) {  // LibTorch 1.x: the store binds its own socket; nothing is bound here
    EXPECT_EQ(first.port, 0);
    return;
  }
  c10d::TCPStore store("127.0.0.1", first);
  ListenSocket again("127.0.0.1", "MASTER_ADDR");
  c10d::TCPStoreOptions second = tcp_store_options();
  second.port = first.port;
  const std::string m = test::error_of<std::runtime_error>([&] { again.hand_to(second); });
  EXPECT_TRUE(contains(m, "cannot listen on 127.0.0.1:" + std::to_string(first.port))) << m;
  EXPECT_TRUE(contains(m, "in use")) << m;
}

TEST(ListenSocket, NothingOfTheProcessChanges) {
  // Other sockets of the process, on this thread or another, bind where they ask.
  ListenSocket listen("127.0.0.1", "MASTER_ADDR");
  EXPECT_EQ(bound_address(AF_INET), "0.0.0.0");
  std::string other_thread;
  std::thread([&] { other_thread = bound_address(AF_INET); }).join();
  EXPECT_EQ(other_thread, "0.0.0.0");
}

TEST(ListenSocket, AnAddressOfAnotherMachineOrNoneIsAClearError) {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
  std::string m = test::error_of<ConfigError>([] { ListenSocket s("192.0.2.1", "MASTER_ADDR"); });
  EXPECT_TRUE(contains(m, "MASTER_ADDR='192.0.2.1' (192.0.2.1) is not an address of this machine"))
      << m;
  EXPECT_TRUE(contains(m, "set MASTER_ADDR to this machine's address")) << m;
  m = test::error_of<ConfigError>([] { ListenSocket s("no-such-host.invalid", "MASTER_ADDR"); });
  EXPECT_TRUE(contains(m, "MASTER_ADDR='no-such-host.invalid' does not resolve")) << m;
}

TEST(LoopbackOnly, NamesTheAddressesOfAHostOnlyThisMachineReaches) {
  EXPECT_EQ(loopback_only("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(loopback_only("127.0.1.1"), "127.0.1.1");
  EXPECT_EQ(loopback_only("::1"), "::1");
  EXPECT_TRUE(contains(loopback_only("localhost"), "127.0.0.1"));
  EXPECT_EQ(loopback_only("192.0.2.1"), "");  // another machine's
  EXPECT_EQ(loopback_only("no-such-host.invalid"), "");
}

}  // namespace
}  // namespace unitrain
