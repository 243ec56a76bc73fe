// Sequence transforms of data.transforms: truncation and a random window of the first
// dimension of one or more keys of each example (a token sequence and its labels together).
#include <torch/torch.h>

#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

struct SequenceArgs {
  std::vector<std::string> keys{"x"};
  int64_t length = 0;
  static void declare(Options<SequenceArgs>& o) {
    o.field("keys", &SequenceArgs::keys)
        .help("the sequences, cut alike (e.g. [x, y]); their first dimensions must be equal");
    o.field("length", &SequenceArgs::length).required().gt(0).help("the most elements kept");
  }
};

/// Elements [start, start + length) of the first dimension of every key (shorter sequences
/// are left whole); `random` draws start uniformly, else it is 0.
class SequenceWindow : public Transform {
 public:
  SequenceWindow(const SequenceArgs& a, bool random) : a_(a), random_(random) {
    UT_CHECK(!a.keys.empty(), random ? "random_window" : "truncate", ": keys is empty");
  }
  void apply(Batch& e, SampleRng& rng) const override {
    const char* who = random_ ? "random_window" : "truncate";
    const int64_t n = e.at(a_.keys[0]).dim() == 0 ? 0 : e.at(a_.keys[0]).size(0);
    for (const auto& k : a_.keys) {
      const torch::Tensor& t = e.at(k);
      UT_CHECK(t.dim() >= 1 && t.size(0) == n, who, ": '", k, "' has ",
               t.dim() == 0 ? 0 : t.size(0), " elements and '", a_.keys[0], "' ", n,
               "; the keys must be sequences of one length");
    }
    if (n <= a_.length) return;
    const int64_t start = random_ ? rng.integer(0, n - a_.length) : 0;
    for (const auto& k : a_.keys) e.set(k, e.at(k).narrow(0, start, a_.length));
  }

 private:
  SequenceArgs a_;
  bool random_;
};

}  // namespace

namespace detail {

void register_sequence_transforms() {
  auto& r = transform_registry();
  r.add<SequenceArgs>("truncate", "the first `length` elements of sequences (longer ones cut)",
                      [](const SequenceArgs& a) -> TransformPtr {
                        return std::make_shared<SequenceWindow>(a, false);
                      });
  r.add<SequenceArgs>("random_window",
                      "a random window of `length` elements of sequences (the same for all keys)",
                      [](const SequenceArgs& a) -> TransformPtr {
                        return std::make_shared<SequenceWindow>(a, true);
                      });
}

}  // namespace detail
}  // namespace unitrain
