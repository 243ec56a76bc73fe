// Time per new token of greedy decoding with and without the KV cache, at several lengths, and
// against the batch size (generate --batch-size: prompts padded on the left).
//
//   build/bench/bench_kv_cache [--layers 4] [--hidden 256] [--lengths 64,256,1024] [--reps 16]
//                              [--batches 1,2,4,8,16] [--batch-length 128]
//
// A fresh llama (config.json written here: hidden 256, 8 heads, 4 kv heads, 4 layers, vocab
// 4096, 2048 positions, float32) on the CPU, one thread. For each length L: with the cache, the
// mean time of forward_cached on one new token after L cached ones (reps tokens, after a
// warm-up); without it, the mean time of forward on the whole L + 1 tokens (what generating the
// token after L costs then). Prints one line per length. Then for each batch size B: B prompts
// of about --batch-length tokens (row b shorter by 3 b: padded on the left, KvCache::pads), the
// mean time of one cached step of B new tokens, and that over B (the time per new token).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "unitrain/models/hf_causal_lm.h"
#include "unitrain/models/hf_config.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string config_json(int64_t layers, int64_t hidden) {
  std::ostringstream s;
  s << R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": )" << hidden
    << R"(, "intermediate_size": )" << 4 * hidden << R"(, "num_attention_heads": 8, )"
    << R"("num_key_value_heads": 4, "num_hidden_layers": )" << layers
    << R"(, "vocab_size": 4096, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, )"
    << R"("rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "float32"})";
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t layers = 4, hidden = 256, reps = 16;
  std::vector<int64_t> lengths{64, 256, 1024}, batches;
  int64_t batch_length = 128;
  auto list_of = [](const std::string& v) {
    std::vector<int64_t> out;
    std::stringstream list(v);
    for (std::string item; std::getline(list, item, ',');) out.push_back(std::stoll(item));
    return out;
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--layers") layers = std::stoll(v);
    if (a == "--hidden") hidden = std::stoll(v);
    if (a == "--reps") reps = std::stoll(v);
    if (a == "--lengths") lengths = list_of(v);
    if (a == "--batches") batches = list_of(v);
    if (a == "--batch-length") batch_length = std::stoll(v);
  }
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const std::string path = "/tmp/bench_kv_cache_config.json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(config_json(layers, hidden).c_str(), f);
  std::fclose(f);
  unitrain::models::HfModelOptions options;
  options.config = path;
  unitrain::models::LlamaImpl model(options);
  model.eval();
  torch::NoGradGuard no_grad;
  std::printf("llama hidden %lld, %lld layers, 1 thread: ms per new token\n", (long long)hidden,
              (long long)layers);
  std::printf("%8s %12s %12s\n", "length", "cache", "no cache");
  for (int64_t length : lengths) {
    const auto ids = torch::randint(4096, {1, length + reps + 1}, torch::kLong);
    unitrain::models::KvCache cache;
    model.forward_cached(ids.narrow(1, 0, length), cache);
    model.forward_cached(ids.narrow(1, length, 1), cache);  // warm-up
    auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r)
      model.forward_cached(ids.narrow(1, length + 1 + r, 1), cache);
    const double cached = seconds_since(start) / double(reps);
    model.forward(ids.narrow(1, 0, length + 1));  // warm-up
    start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r) model.forward(ids.narrow(1, 0, length + 1));
    const double whole = seconds_since(start) / double(reps);
    std::printf("%8lld %12.3f %12.3f\n", (long long)length, cached * 1e3, whole * 1e3);
  }
  if (!batches.empty()) {
    std::printf("\nbatches of prompts of about %lld tokens: ms per step, ms per new token\n",
                (long long)batch_length);
    std::printf("%8s %12s %12s\n", "batch", "per step", "per token");
  }
  for (int64_t b : batches) {
    unitrain::models::KvCache cache;
    for (int64_t r = 0; r < b; ++r) cache.pads.push_back(std::min(3 * r, batch_length - 1));
    const auto ids = torch::randint(4096, {b, batch_length + reps + 1}, torch::kLong);
    model.forward_cached(ids.narrow(1, 0, batch_length), cache);
    model.forward_cached(ids.narrow(1, batch_length, 1), cache);  // warm-up
    const auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < reps; ++r)
      model.forward_cached(ids.narrow(1, batch_length + 1 + r, 1), cache);
    const double step = seconds_since(start) / double(reps);
    std::printf("%8lld %12.3f %12.3f\n", (long long)b, step * 1e3, step * 1e3 / double(b));
  }
  return 0;
}
