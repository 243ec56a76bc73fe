#include "unitrain/launch/launch_rounds.h"

#include <optional>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "unitrain/compat/tcp_store_options.h"
#include "unitrain/core/error.h"
#include "unitrain/launch/launcher.h"
#include "unitrain/log/console.h"
#include "unitrain/parallel/listen_address.h"

namespace unitrain {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

c10::intrusive_ptr<c10d::Store> LaunchRounds::connect(const LaunchOptions& o) {
  c10d::TCPStoreOptions store_options = tcp_store_options();
  store_options.port = static_cast<uint16_t>(o.master_port);
  store_options.isServer = o.node_rank == 0;
  store_options.waitWorkers = false;
  store_options.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.rendezvous_seconds * 1000));
  const std::string where = o.master_addr + ":" + std::to_string(o.master_port);
  // Machine 0's store listens on --master-addr only where LibTorch lets it (2.x), else on
  // every interface, as torchrun's does, saying so.
  std::optional<ListenSocket> listen;
  if (store_options.isServer) listen.emplace(o.master_addr, "--master-addr");
  try {
    if (listen && !listen->hand_to(store_options)) {
      const std::string note = listen->every_interface_note(o.master_port, "--master-addr");
      if (o.output) {
        o.output("[launch] " + note, false);
      } else {
        log::info("launch: " + note);
      }
    }
    return c10::make_intrusive<c10d::TCPStore>(o.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string what = first_line(e.what());
    if (store_options.isServer) {
      throw TrainError("launch: cannot host the rendezvous at " + where + ": " + what +
                       " (is the port in use? choose another with --master-port)");
    }
    throw TrainError(detail::concat(
        "launch: cannot reach machine 0's launcher at ", where, " within ", o.rendezvous_seconds,
        " s: ", what, " (is `unitrain launch --node-rank 0` running there, and --master-addr ",
        "its address?)"));
  }
}

LaunchRounds::LaunchRounds(c10::intrusive_ptr<c10d::Store> store, int node_rank, int nnodes,
                           std::string shape)
    : store_(std::move(store)), node_rank_(node_rank), nnodes_(nnodes), shape_(std::move(shape)) {}

std::string LaunchRounds::key(int round, const std::string& what) const {
  return "unitrain-launch/round-" + std::to_string(round) + "/" + what;
}

std::optional<std::string> LaunchRounds::read(const std::string& key) {
  if (!store_->check({key})) return std::nullopt;
  const std::vector<uint8_t> v = store_->get(key);
  return std::string(v.begin(), v.end());
}

void LaunchRounds::arrive(int round) {
  store_->set(key(round, "machine-" + std::to_string(node_rank_)), bytes(shape_));
}

std::vector<int> LaunchRounds::missing(int round) {
  std::vector<int> out;
  for (int r = 0; r < nnodes_; ++r) {
    const std::optional<std::string> shape = read(key(round, "machine-" + std::to_string(r)));
    if (!shape) {
      out.push_back(r);
      continue;
    }
    UT_CHECK(*shape == shape_, "launch: machine ", r, "'s launcher runs ", *shape,
             ", this one (machine ", node_rank_, ") ", shape_,
             ": start every machine's launcher with the same --nnodes, --nproc-per-node and "
             "--max-restarts");
  }
  return out;
}

std::string LaunchRounds::end(int round, const std::string& cause) {
  // Set only where no machine has ended the round yet; what the store holds after is the cause.
  const std::vector<uint8_t> stands = store_->compareSet(key(round, "ended"), {}, bytes(cause));
  return {stands.begin(), stands.end()};
}

std::optional<std::string> LaunchRounds::ended(int round) { return read(key(round, "ended")); }

void LaunchRounds::leave(const std::string& why) {
  store_->set("unitrain-launch/left/machine-" + std::to_string(node_rank_), bytes(why));
}

std::vector<std::string> LaunchRounds::left() {
  std::vector<std::string> out;
  for (int r = 0; r < nnodes_; ++r) {
    if (auto why = read("unitrain-launch/left/machine-" + std::to_string(r))) {
      out.push_back(detail::concat("machine ", r, ": ", *why));
    }
  }
  return out;
}

}  // namespace unitrain
