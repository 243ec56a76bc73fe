// Every rank starts from rank 0's model: broadcast_module and broadcast_buffers.
#include <torch/torch.h>

#include <sstream>

#include "unitrain/core/error.h"
#include "unitrain/core/unit_parts.h"
#include "unitrain/parallel/data_parallel.h"

namespace unitrain {
namespace {

/// "name shape dtype" per line: what every rank must agree on.
std::string model_signature(const torch::nn::Module& module) {
  std::ostringstream s;
  auto add = [&s](const char* kind, const std::string& name, const torch::Tensor& t) {
    s << kind << " " << name << " " << t.sizes() << " " << t.dtype() << "\n";
  };
  for (const auto& p : module.named_parameters(true)) add("parameter", p.key(), p.value());
  for (const auto& b : module.named_buffers(true)) add("buffer", b.key(), b.value());
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

void broadcast_module(ProcessGroup& group, torch::nn::Module& module) {
  const std::vector<std::string> all = group.all_gather(model_signature(module));
  const std::vector<std::string> want = split_lines(all[0]);
  for (int r = 1; r < group.world_size(); ++r) {
    const std::vector<std::string> got = split_lines(all[size_t(r)]);
    for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
      const std::string a = i < want.size() ? want[i] : "(nothing)";
      const std::string b = i < got.size() ? got[i] : "(nothing)";
      UT_CHECK(a == b, "the model differs between ranks: rank 0 has ", a, " where rank ", r,
               " has ", b, " (every rank must build the same model from the same config)");
    }
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (auto& p : module.parameters(true)) {
    // A model built in parts (core/unit_parts.h) is the same on every rank when its parts are
    // gathered: each rank's part is its own.
    if (!kept_in_parts(p)) tensors.push_back(p);
  }
  for (auto& b : module.buffers(true)) tensors.push_back(b);
  if (!tensors.empty()) group.broadcast(tensors, 0);
}

void broadcast_buffers(ProcessGroup& group, torch::nn::Module& module) {
  std::vector<torch::Tensor> buffers = module.buffers(true);
  if (buffers.empty()) return;
  torch::NoGradGuard no_grad;
  group.broadcast(buffers, 0);
}

}  // namespace unitrain
