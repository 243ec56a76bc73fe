// A process group's links beyond its collectives: the groups made inside it (tensor
// parallelism's), and point-to-point messages between two of its ranks (pipeline stages').
#include <torch/torch.h>

#include <algorithm>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "unitrain/core/error.h"
#include "unitrain/parallel/process_group.h"

namespace unitrain {

std::shared_ptr<ProcessGroup> ProcessGroup::subgroup(const std::string& name,
                                                     const std::vector<int>& members) const {
  const auto me = std::find(members.begin(), members.end(), rank_);
  UT_CHECK_TRAIN(me != members.end() && std::is_sorted(members.begin(), members.end()) &&
                     std::adjacent_find(members.begin(), members.end()) == members.end() &&
                     members.front() >= 0 && members.back() < world_size_,
                 "process group '", name, "': rank ", rank_,
                 " is not one of its members, or they are not distinct ranks in order");
  ProcessGroupOptions options = options_;
  const std::string json = ".json";
  if (options.flight_file.size() > json.size() &&
      options.flight_file.compare(options.flight_file.size() - json.size(), json.size(), json) ==
          0) {
    options.flight_file.insert(options.flight_file.size() - json.size(), "-" + name);
  }
  auto store = c10::make_intrusive<c10d::PrefixStore>("group/" + name, store_);
  return over_store(store, int(me - members.begin()), int(members.size()), options);
}

namespace {

/// `t`'s bytes as a flat uint8 tensor sharing its memory (what Gloo sends of any dtype).
torch::Tensor bytes_of(const torch::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.is_contiguous());
  return t.view({-1}).view(torch::kUInt8);
}

}  // namespace

void ProcessGroup::send(const torch::Tensor& tensor, int to, int tag) {
  const torch::Tensor contiguous = tensor.contiguous();
  std::vector<torch::Tensor> bytes{bytes_of(contiguous)};
  wait("send", 1, bytes[0].numel(), [&] { group_->send(bytes, to, tag)->wait(); });
}

std::function<void()> ProcessGroup::start_send(const torch::Tensor& tensor, int to, int tag) {
  torch::Tensor contiguous = tensor.contiguous();
  std::vector<torch::Tensor> bytes{bytes_of(contiguous)};
  const int64_t seq = flight_.begin("send", 1, bytes[0].numel());
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = group_->send(bytes, to, tag);
  } catch (const std::exception& e) {
    collective_failed(seq, e);
  }
  // The bytes live in the closure until the wait.
  return [this, seq, work, contiguous]() {
    try {
      work->wait();
    } catch (const std::exception& e) {
      collective_failed(seq, e);
    }
    flight_.end(seq);
  };
}

void ProcessGroup::recv(torch::Tensor& tensor, int from, int tag) {
  std::vector<torch::Tensor> bytes{bytes_of(tensor)};
  wait("recv", 1, bytes[0].numel(), [&] { group_->recv(bytes, from, tag)->wait(); });
}

}  // namespace unitrain
