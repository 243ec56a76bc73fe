// bench/tokenizer: bytes/s of encoding text, per thread, with a Hugging Face tokenizer.json or a
// SentencePiece .model (what the text dataset's loader threads do).
//   build/bench/bench_tokenizer TOKENIZER TEXT [THREADS...]   (default threads: 1 2)
// Each thread encodes every non-blank line of TEXT twice, all threads at once: the first pass
// starts with an empty word cache (the loader's first epoch), the second finds its words there.
// Prints one line a thread count:
//   threads N  first_pass_MB_per_s_per_thread X  second_pass_MB_per_s_per_thread Y  tokens T
#include "unitrain/text/tokenizer.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER TEXT [THREADS...]\n", argv[0]);
    return 2;
  }
  const auto tokenizer = unitrain::load_tokenizer(argv[1]);
  std::vector<std::string> lines;
  size_t bytes = 0;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bytes += line.size();
    lines.push_back(std::move(line));
  }
  std::vector<int> thread_counts;
  for (int i = 3; i < argc; ++i) thread_counts.push_back(std::stoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1, 2};
  for (int threads : thread_counts) {
    std::vector<double> first(threads), second(threads);
    std::vector<size_t> tokens(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int pass = 0; pass < 2; ++pass) {
          const auto start = Clock::now();
          size_t n = 0;
          for (const std::string& line : lines) n += tokenizer->encode(line).size();
          (pass == 0 ? first : second)[t] = seconds_since(start);
          tokens[t] = n;
        }
      });
    }
    for (auto& w : workers) w.join();
    double slowest_first = 0, slowest_second = 0;
    for (int t = 0; t < threads; ++t) {
      slowest_first = std::max(slowest_first, first[t]);
      slowest_second = std::max(slowest_second, second[t]);
    }
    std::printf(
        "threads %d  first_pass_MB_per_s_per_thread %.2f  second_pass_MB_per_s_per_thread %.2f  "
        "tokens %zu\n",
        threads, bytes / slowest_first / 1e6, bytes / slowest_second / 1e6, tokens[0]);
  }
  return 0;
}
