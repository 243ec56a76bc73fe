#include "unitrain/parallel/process_group.h"

// Debian's LibTorch is built with Gloo; its header declares ProcessGroupGloo only with this.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "unitrain/compat/tcp_store_options.h"
#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/core/host_name.h"
#include "unitrain/parallel/arrival_board.h"
#include "unitrain/parallel/collective_error.h"
#include "unitrain/parallel/listen_address.h"
#include "unitrain/parallel/roll_call.h"
#ifdef UNITRAIN_CUDA
#include "unitrain/parallel/nccl_group.h"
#endif

namespace unitrain {
namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const ProcessGroupOptions& options) {
  std::string name = options.interface;
  if (name.empty()) {
    if (const char* env = std::getenv("GLOO_SOCKET_IFNAME")) name = env;
  }
  try {
    if (!name.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(name);
    // Every rank on this machine: Gloo's connections on loopback, nothing open to the network.
    if (options.loopback) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    // Gloo's default: the address the host name resolves to, which may be loopback.
    if (const std::string lo = loopback_only(host_name()); !lo.empty()) {
      spdlog::warn(
          "the host name {} resolves to {}, this machine's loopback, so Gloo would connect "
          "this rank over it, which the ranks on other machines cannot reach: set "
          "distributed.interface (or GLOO_SOCKET_IFNAME) to the network interface they reach "
          "(`ip -brief address` lists them)",
          host_name(), lo);
    }
    return c10d::ProcessGroupGloo::createDefaultDevice();
  } catch (const std::exception& e) {
    throw ConfigError("distributed.interface: cannot use network interface '" + name +
                      "': " + first_line(e.what()) +
                      " (list them with `ip -brief address`; GLOO_SOCKET_IFNAME sets it too)");
  }
}

/// roll_call with the run's log for its note.
void call_the_roll(c10d::Store& store, const DistEnv& env, const ProcessGroupOptions& options) {
  roll_call(store, env, host_name(), options.timeout,
            [](const std::string& note) { spdlog::info("{}", note); });
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::join(const DistEnv& env,
                                                 const ProcessGroupOptions& options) {
  ProcessGroupOptions group_options = options;
  group_options.loopback = env.one_machine();
  if (env.world_size == 1) {  // a group of one meets no one: a store in this process
    c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::HashStore>();
    store->setTimeout(options.timeout);
    return over_store(store, 0, 1, group_options);
  }
  if (!env.store_file.empty()) {  // a file, no socket (unitrain launch on one machine)
    c10::intrusive_ptr<c10d::Store> store;
    try {
      store = c10::make_intrusive<c10d::FileStore>(env.store_file, env.world_size);
      store->setTimeout(options.timeout);
    } catch (const std::exception& e) {
      throw TrainError("rank " + std::to_string(env.rank) + " cannot use the rendezvous file " +
                       env.store_file + " (UNITRAIN_STORE_FILE): " + first_line(e.what()));
    }
    call_the_roll(*store, env, group_options);
    return over_store(store, env.rank, env.world_size, group_options);
  }
  c10d::TCPStoreOptions store_options = tcp_store_options();
  store_options.port = static_cast<uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0 && !env.agent_store;
  store_options.numWorkers = env.world_size;
  store_options.waitWorkers = false;
  store_options.timeout = options.timeout;
  group_options.store_host =
      env.agent_store ? "the launcher (torchrun's agent, or unitrain launch on machine 0)"
                      : "rank 0";
  group_options.hosts_store = store_options.isServer;
  c10::intrusive_ptr<c10d::Store> store;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  // Several machines meeting at a loopback address: the others never reach it.
  const std::string loopback = env.one_machine() ? "" : loopback_only(env.master_addr);
  const std::string loopback_hint =
      loopback.empty()
          ? ""
          : fmt::format(
                "MASTER_ADDR {} is {}, this machine's loopback, but the job's {} processes run "
                "on several machines ({} on this one): those on the others cannot reach it. Give "
                "the launcher an address they reach (unitrain launch --master-addr; torchrun "
                "--master_addr with its static rendezvous). torchrun's c10d rendezvous names "
                "rank 0's machine by its host name, which /etc/hosts maps to a loopback address "
                "here (Debian maps it to 127.0.1.1): map it to the machine's address on every "
                "machine (docs/distributed.md, \"Several machines\")",
                env.master_addr, loopback, env.world_size, env.local_world_size);
  if (!loopback_hint.empty()) spdlog::warn("{}", loopback_hint);
  // Rank 0's store listens on MASTER_ADDR only where LibTorch lets it (2.x), else on every
  // interface, as torchrun's does, saying so.
  std::optional<ListenSocket> listen;
  if (store_options.isServer) listen.emplace(env.master_addr, "MASTER_ADDR");
  try {
    if (listen && !listen->hand_to(store_options)) {
      spdlog::info("{}", listen->every_interface_note(env.master_port, "MASTER_ADDR"));
    }
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string what = first_line(e.what());
    if (store_options.isServer) {
      throw TrainError("rank 0 cannot host the rendezvous at " + where + ": " + what +
                       " (is the port in use? choose another with MASTER_PORT or --master-port)");
    }
    throw TrainError("rank " + std::to_string(env.rank) + " cannot reach the rendezvous at " +
                     where + " within " + std::to_string(options.timeout.count() / 1000) +
                     " s: " + what +
                     (loopback_hint.empty() ? " (is rank 0 running, and MASTER_ADDR its address?)"
                                            : ". " + loopback_hint));
  }
  if (env.agent_store) {
    // The agent's store outlives the workers: each start of them meets under its own prefix
    // (torchrun's, as PyTorch's env:// rendezvous spells it), never on an earlier start's keys.
    store = c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + std::to_string(env.restart_count), store);
  }
  call_the_roll(*store, env, group_options);
  return over_store(store, env.rank, env.world_size, group_options);
}

std::shared_ptr<ProcessGroup> ProcessGroup::over_store(const c10::intrusive_ptr<c10d::Store>& store,
                                                       int rank, int world_size,
                                                       const ProcessGroupOptions& options) {
#ifdef UNITRAIN_CUDA
  UT_CHECK(options.backend == "gloo" || options.backend == "nccl", "distributed.backend: '",
           options.backend, "' is not one of gloo, nccl");
#else
  UT_CHECK(options.backend == "gloo", "distributed.backend: '", options.backend,
           "' is not available in this build (LibTorch without CUDA); use gloo");
#endif
  std::shared_ptr<ProcessGroup> pg(new ProcessGroup());
  pg->rank_ = rank;
  pg->who_ = std::getenv("UNITRAIN_LAUNCH_PREFIXES_LINES") != nullptr
                 ? ""
                 : fmt::format("rank {}: ", rank);
  pg->world_size_ = world_size;
  pg->timeout_ = options.timeout;
  pg->device_ = options.device;
  pg->store_ = store;
  pg->options_ = options;
  pg->flight_file_ = options.flight_file;
  pg->exit_after_failure_ = options.exit_after_failure;
  pg->store_host_ = options.store_host;
  pg->hosts_store_ = options.hosts_store;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("unitrain", store);
  try {
#ifdef UNITRAIN_CUDA
    if (options.backend == "nccl") {
      UT_CHECK(options.device.is_cuda() && options.device.has_index(),
               "distributed.backend: nccl needs the run on a GPU (train.device), not on ",
               options.device.str());
      pg->group_ =
          make_nccl_group(prefixed, rank, world_size, options.timeout, options.device.index());
      pg->start_board();
      return pg;
    }
#endif
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    gloo_options->devices.push_back(gloo_device(options));
    pg->group_ =
        c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, world_size, gloo_options);
    pg->start_board();
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw TrainError(detail::concat("rank ", rank, " could not connect to the other ",
                                    world_size - 1, " rank(s): ", first_line(e.what())));
  }
  return pg;
}

ProcessGroup::~ProcessGroup() {
  if (board_) board_->stop();  // it reads flight_
}

void ProcessGroup::start_board() {
  board_ = std::make_shared<ArrivalBoard>(store_, rank_, world_size_, flight_,
                                          ArrivalBoard::interval_for(timeout_), store_host_);
}

void ProcessGroup::follow(const RunPosition* position) {
  flight_.follow(position);
  if (board_) board_->follow(position);
}

void ProcessGroup::wait(const char* op, int32_t tensors, int64_t bytes,
                        const std::function<void()>& run) {
  const int64_t seq = flight_.begin(op, tensors, bytes);
  try {
    run();
  } catch (const std::exception& e) {
    collective_failed(seq, e);
  }
  flight_.end(seq);
}

void ProcessGroup::collective_failed(int64_t seq, const std::exception& error) {
  flight_.fail(seq);
  CollectiveRecord record = flight_.find(seq);
  if (record.seq < 0) {  // overwritten by the collectives launched after it
    record.seq = seq;
    record.op = "collective";
    record.start = unix_seconds() - timeout_.count() / 1000.0;
  }
  const std::string what = first_line(error_text(error));
  if (failed_.exchange(true)) {  // a later one: the first was reported
    throw CollectiveError(detail::concat(who_, record.describe(), " failed too: ", what));
  }
  const double waited = unix_seconds() - record.start;
  // The record first (a launcher may stop this process while the others' notices are read),
  // then again with what they say.
  if (!flight_file_.empty()) flight_.write(flight_file_, rank_, what, {});
  ArrivalReport arrivals;
  if (board_) arrivals = board_->report_failure(seq, std::chrono::seconds(5));
  const std::vector<std::string>& missing = arrivals.missing;
  std::string message =
      detail::concat(who_, record.describe(), " across ", world_size_, " processes failed after ",
                     fmt::format("{:.1f}", waited), " s (distributed.timeout ",
                     timeout_.count() / 1000.0, " s): ");
  if (!missing.empty()) {
    message += fmt::format("did not arrive: {}. ", fmt::join(missing, "; "));
    if (!arrivals.store_note.empty()) message += "(" + arrivals.store_note + ") ";
    message += "(" + what + ")";
  } else if (!arrivals.store_note.empty()) {
    message += arrivals.store_note + "; " + what;
  } else {
    message += "every rank had arrived; " + what;
  }
  if (!flight_file_.empty()) {
    flight_.write(flight_file_, rank_, message, missing);
    message += "; this rank's last collectives: " + flight_file_;
  }
  // The others read who arrived from the store this process hosts: keep it up for them.
  if (board_ && hosts_store_) std::this_thread::sleep_for(board_->linger());
  if (exit_after_failure_.count() >= 0) {
    // Unwinding waits for the collectives still queued, each until its own timeout (Gloo on
    // LibTorch 1.13 cannot abort them): the process ends after a grace period regardless.
    const auto grace = exit_after_failure_;
    std::thread([grace, message] {
      std::this_thread::sleep_for(grace);
      spdlog::error("{}", message);
      spdlog::error("exiting: the collectives still queued would each wait for their timeout");
      spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->flush(); });
      std::_Exit(1);
    }).detach();
  }
  throw CollectiveError(message);
}

void ProcessGroup::write_flight(const std::string& error) const {
  if (!flight_file_.empty()) flight_.write(flight_file_, rank_, error, {});
}

// c10d's tensor lists are one logical tensor per device; each of ours is its own: one
// collective per tensor, all launched before any is waited for.
void ProcessGroup::each(
    const char* op, std::vector<torch::Tensor>& tensors,
    const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<torch::Tensor>&)>& launch) {
  int64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  wait(op, static_cast<int32_t>(tensors.size()), bytes, [&] {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    // (tensor, stand-in): a float32 copy (bfloat16 on Gloo), or a copy on the group's device
    // (a tensor made on the host, on an NCCL group).
    std::vector<std::pair<torch::Tensor, torch::Tensor>> stand_ins;
    for (auto& t : tensors) {
      std::vector<torch::Tensor> one{t};
      const bool widen = needs_widening(t.scalar_type());
      if (widen || t.device() != device_) {
        one[0] = t.to(device_, widen ? torch::kFloat32 : t.scalar_type());
        stand_ins.emplace_back(t, one[0]);
      }
      works.push_back(launch(one));
    }
    for (auto& w : works) w->wait();
    torch::NoGradGuard no_grad;
    for (auto& [t, stand_in] : stand_ins) t.copy_(stand_in);
  });
}

bool ProcessGroup::needs_widening(c10::ScalarType dtype) const {
  return dtype == torch::kBFloat16 && group_->getBackendName() == "gloo";
}

bool ProcessGroup::is_nccl() const { return group_->getBackendName() == "nccl"; }

const char* ProcessGroup::backend() const { return is_nccl() ? "nccl" : "gloo"; }

double ProcessGroup::sum_of(double local) {
  std::vector<torch::Tensor> t{torch::full({1}, local, torch::kFloat64)};
  all_reduce_sum(t);
  return t[0].item<double>();
}

void ProcessGroup::all_reduce_sum(std::vector<torch::Tensor>& tensors) {
  each("all_reduce", tensors,
       [this](std::vector<torch::Tensor>& one) { return group_->allreduce(one); });
}

void ProcessGroup::all_reduce_max(std::vector<torch::Tensor>& tensors) {
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::MAX;
  each("all_reduce", tensors,
       [this, &o](std::vector<torch::Tensor>& one) { return group_->allreduce(one, o); });
}

void ProcessGroup::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  c10d::BroadcastOptions o;
  o.rootRank = root;
  each("broadcast", tensors,
       [this, &o](std::vector<torch::Tensor>& one) { return group_->broadcast(one, o); });
}

void ProcessGroup::broadcast_from(std::vector<torch::Tensor>& tensors,
                                  const std::vector<int>& roots) {
  TORCH_INTERNAL_ASSERT(tensors.size() == roots.size());
  size_t next = 0;  // `each` launches in order: the i-th launch is tensors[i]'s
  each("broadcast", tensors, [this, &roots, &next](std::vector<torch::Tensor>& one) {
    c10d::BroadcastOptions o;
    o.rootRank = roots[next++];
    return group_->broadcast(one, o);
  });
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) {
  // Made on the host, gathered on the group's device, read on the host (no copy on the CPU).
  const auto on_group = torch::TensorOptions().device(device_);
  std::vector<torch::Tensor> size{torch::tensor({static_cast<int64_t>(text.size())}).to(device_)};
  std::vector<std::vector<torch::Tensor>> sizes(1);
  for (int r = 0; r < world_size_; ++r) {
    sizes[0].push_back(torch::zeros({1}, on_group.dtype(torch::kInt64)));
  }
  wait("all_gather", 1, 8, [&] { group_->allgather(sizes, size)->wait(); });
  std::vector<int64_t> lengths;
  for (const auto& s : sizes[0]) lengths.push_back(s.item<int64_t>());
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  if (longest == 0) return std::vector<std::string>(static_cast<size_t>(world_size_));  // Gloo
  // cannot gather empty tensors (it divides by their size)
  torch::Tensor host = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(host.data_ptr(), text.data(), text.size());
  std::vector<torch::Tensor> mine{host.to(device_)};
  std::vector<std::vector<torch::Tensor>> all(1);
  for (int r = 0; r < world_size_; ++r) {
    all[0].push_back(torch::zeros({longest}, on_group.dtype(torch::kUInt8)));
  }
  wait("all_gather", 1, longest, [&] { group_->allgather(all, mine)->wait(); });
  std::vector<std::string> out;
  for (int r = 0; r < world_size_; ++r) {
    const torch::Tensor got = all[0][r].cpu();
    out.emplace_back(static_cast<const char*>(got.data_ptr()), static_cast<size_t>(lengths[r]));
  }
  return out;
}

void ProcessGroup::barrier() {
  wait("barrier", 0, 0, [&] { group_->barrier()->wait(); });
}

}  // namespace unitrain
