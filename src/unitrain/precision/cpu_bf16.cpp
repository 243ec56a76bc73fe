#include "unitrain/precision/cpu_bf16.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>

#include "unitrain/log/console.h"

namespace unitrain {

std::string cpu_bf16_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w, out;
    while (words >> w) {
      if (w == "avx512_bf16" || w == "amx_bf16") out += (out.empty() ? "" : ", ") + w;
    }
    return out;
  }
  return "";
}

std::string cpu_bf16_note(const std::string& flags, double fp32_seconds, double bf16_seconds,
                          bool* slower) {
  const double ratio = bf16_seconds / std::max(fp32_seconds, 1e-9);
  *slower = ratio > 1.5;
  const std::string cpu =
      flags.empty() ? "this CPU has no bfloat16 instructions (no avx512_bf16 or amx_bf16 in "
                      "/proc/cpuinfo): its bfloat16 products are emulated"
                    : "this CPU has " + flags;
  if (*slower) {
    return fmt::format(
        "train.precision bf16: a bfloat16 matrix product takes {:.1f}x the time of a "
        "float32 one here ({}); training is likely several times slower than with fp32, which "
        "is also more exact: train.precision: fp32",
        ratio, cpu);
  }
  return fmt::format(
      "bf16 on the CPU: a bfloat16 matrix product takes {:.2f}x the time of "
      "a float32 one here ({})",
      ratio, cpu);
}

std::string measure_cpu_bf16(bool* slower) {
  torch::NoGradGuard no_grad;
  // Not torch::rand: the run's random stream stays untouched.
  const torch::Tensor a = torch::full({256, 256}, 0.5), b = torch::full({256, 256}, 0.25);
  auto fastest = [](const torch::Tensor& x, const torch::Tensor& y) {
    (void)torch::mm(x, y);  // warm-up: kernels chosen, memory mapped
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)torch::mm(x, y);
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double fp32 = fastest(a, b);
  const double bf16 = fastest(a.to(torch::kBFloat16), b.to(torch::kBFloat16));
  return cpu_bf16_note(cpu_bf16_flags(), fp32, bf16, slower);
}

void say_cpu_bf16_cost(PrecisionMode mode, c10::DeviceType device) {
  if (device != c10::DeviceType::CPU ||
      (mode != PrecisionMode::Bf16Mixed && mode != PrecisionMode::Bf16True)) {
    return;
  }
  bool slower = false;
  const std::string note = measure_cpu_bf16(&slower);
  slower ? log::warn(note) : log::info(note);
}

}  // namespace unitrain
