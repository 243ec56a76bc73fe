// Collate functions of data.collate: stack (same shapes), pad (variable lengths, with an
// attention mask) and mlm (BERT's masked language modelling on top of pad).
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "unitrain/core/error.h"
#include "unitrain/core/options.h"
#include "unitrain/data/transform.h"

namespace unitrain {
namespace {

struct StackArgs {
  static void declare(Options<StackArgs>&) {}
};

class StackCollate : public Collate {
 public:
  Batch collate(std::vector<Batch>& examples, std::vector<SampleRng>&) const override {
    return unitrain::collate(examples);
  }
};

struct PadArgs {
  double pad_value = 0;
  bool pad_value_auto = true;  ///< build_data sets the tokenizer's pad id (else 0)
  std::vector<std::string> label_keys{"y"};
  int64_t ignore_index = -100;
  std::string mask_key = "attention_mask";
  std::string lengths_of = "x";
  int64_t multiple_of = 1;
  static void declare(Options<PadArgs>& o) {
    using A = PadArgs;
    o.field_or_auto("pad_value", &A::pad_value, &A::pad_value_auto)
        .def("auto")
        .help(
            "what sequences other than labels are padded with; auto = the pad id of the text "
            "dataset's tokenizer (a tokenizer.json's, or a SentencePiece model's), else 0");
    o.field("label_keys", &A::label_keys)
        .help("sequences padded with ignore_index instead (the loss skips those positions)");
    o.field("ignore_index", &A::ignore_index).help("the loss's ignore index (cross_entropy: -100)");
    o.field("mask_key", &A::mask_key)
        .help("an added int64 [B, T] key, 1 on real elements and 0 on padding; '' = none");
    o.field("lengths_of", &A::lengths_of).help("the key whose lengths the mask follows");
    o.field("multiple_of", &A::multiple_of).gt(0).help("pad lengths up to a multiple of this");
  }
};

/// Pads the first dimension of every key with at least one dimension to the batch's longest
/// (rounded up to multiple_of); scalars are stacked. The other dimensions must agree.
Batch pad_batch(const std::vector<Batch>& examples, const PadArgs& a, const char* who) {
  UT_CHECK(!examples.empty(), who, ": no examples to collate");
  const std::set<std::string> labels(a.label_keys.begin(), a.label_keys.end());
  Batch out;
  const auto b = static_cast<int64_t>(examples.size());
  for (const auto& [name, first] : examples.front()) {
    if (first.dim() == 0) {
      std::vector<torch::Tensor> parts;
      for (const auto& e : examples) parts.push_back(e.at(name));
      out.set(name, torch::stack(parts));
      continue;
    }
    int64_t longest = 0;
    for (const auto& e : examples) {
      const torch::Tensor& t = e.at(name);
      UT_CHECK(t.dim() == first.dim() && t.sizes().slice(1) == first.sizes().slice(1), who,
               ": examples of '", name, "' differ in more than their length: ", t.sizes(), " vs ",
               first.sizes());
      longest = std::max(longest, t.size(0));
    }
    longest = (longest + a.multiple_of - 1) / a.multiple_of * a.multiple_of;
    std::vector<int64_t> shape{b, longest};
    for (int64_t d = 1; d < first.dim(); ++d) shape.push_back(first.size(d));
    const double fill = labels.count(name) ? static_cast<double>(a.ignore_index) : a.pad_value;
    torch::Tensor padded = torch::full(shape, fill, first.options());
    for (int64_t i = 0; i < b; ++i) {
      const torch::Tensor& t = examples[static_cast<size_t>(i)].at(name);
      padded[i].narrow(0, 0, t.size(0)).copy_(t);
    }
    out.set(name, padded);
  }
  if (!a.mask_key.empty()) {
    UT_CHECK(out.has(a.lengths_of) && out.at(a.lengths_of).dim() >= 2, who, ": lengths_of '",
             a.lengths_of, "' is not a sequence of the examples (they hold ",
             examples.front().names().size(), " keys)");
    torch::Tensor mask = torch::zeros({b, out.at(a.lengths_of).size(1)}, torch::kInt64);
    for (int64_t i = 0; i < b; ++i) {
      mask[i].narrow(0, 0, examples[static_cast<size_t>(i)].at(a.lengths_of).size(0)).fill_(1);
    }
    out.set(a.mask_key, mask);
  }
  return out;
}

class PadCollate : public Collate {
 public:
  explicit PadCollate(const PadArgs& a) : a_(a) {}
  Batch collate(std::vector<Batch>& examples, std::vector<SampleRng>&) const override {
    return pad_batch(examples, a_, "pad");
  }

 private:
  PadArgs a_;
};

struct MlmArgs : PadArgs {
  std::string key = "x";
  std::string labels = "y";
  int64_t mask_token_id = -1;
  int64_t vocab_size = 0;
  double probability = 0.15;
  std::vector<int64_t> special_ids;
  static void declare(Options<MlmArgs>& o) {
    using A = MlmArgs;
    o.field("key", &A::key).help("the int64 token sequence to mask");
    o.field("labels", &A::labels)
        .help("the added key of targets: the original ids where masked, ignore_index elsewhere");
    o.field("mask_token_id", &A::mask_token_id).required().min(0).help("the [MASK] token's id");
    o.field("vocab_size", &A::vocab_size).required().gt(0).help("random replacements are below it");
    o.field("probability", &A::probability).gt(0).lt(1).help("share of tokens selected");
    o.field("special_ids", &A::special_ids).help("ids never selected (padding, [CLS], [SEP], ...)");
    o.field("pad_value", &A::pad_value).help("the padding id (never selected)");
    o.field("ignore_index", &A::ignore_index).help("the label of unselected positions");
    o.field("mask_key", &A::mask_key).help("an added int64 [B, T] mask of real tokens; '' = none");
    o.field("multiple_of", &A::multiple_of).gt(0).help("pad lengths up to a multiple of this");
  }
};

/// BERT's masking, as Hugging Face's DataCollatorForLanguageModeling does it: each real,
/// non-special token is selected with `probability`; a selected token becomes [MASK] (80%), a
/// random id (10%) or stays (10%), and its label is the original id. Drawn from each
/// example's own stream, so a batch is a function of (seed, epoch, indices).
class MlmCollate : public Collate {
 public:
  explicit MlmCollate(MlmArgs a) : a_(std::move(a)) {
    a_.label_keys = {};
    a_.lengths_of = a_.key;
    special_.insert(a_.special_ids.begin(), a_.special_ids.end());
  }
  Batch collate(std::vector<Batch>& examples, std::vector<SampleRng>& rngs) const override {
    Batch out = pad_batch(examples, a_, "mlm");
    torch::Tensor ids = out.at(a_.key);
    UT_CHECK(ids.dim() == 2 && ids.scalar_type() == torch::kInt64, "mlm: '", a_.key,
             "' must be a sequence of int64 token ids, got ", ids.sizes(), " ", ids.scalar_type());
    ids = ids.clone();
    torch::Tensor labels = torch::full_like(ids, a_.ignore_index);
    int64_t* x = ids.data_ptr<int64_t>();
    int64_t* y = labels.data_ptr<int64_t>();
    const int64_t t = ids.size(1);
    for (size_t i = 0; i < examples.size(); ++i) {
      const int64_t n = examples[i].at(a_.key).size(0);
      SampleRng& rng = rngs[i];
      for (int64_t j = 0; j < n; ++j) {
        int64_t& id = x[static_cast<int64_t>(i) * t + j];
        if (special_.count(id) || id == static_cast<int64_t>(a_.pad_value)) continue;
        if (!rng.chance(a_.probability)) continue;
        y[static_cast<int64_t>(i) * t + j] = id;
        const double r = rng.uniform();
        if (r < 0.8) {
          id = a_.mask_token_id;
        } else if (r < 0.9) {
          id = rng.integer(0, a_.vocab_size - 1);
        }
      }
    }
    out.set(a_.key, ids);
    out.set(a_.labels, labels);
    return out;
  }

 private:
  MlmArgs a_;
  std::set<int64_t> special_;
};

}  // namespace

namespace detail {

void register_collates() {
  auto& r = collate_registry();
  r.add<StackArgs>("stack", "stacks examples of equal shapes (the default)",
                   [](const StackArgs&) -> CollatePtr { return std::make_shared<StackCollate>(); });
  r.add<PadArgs>("pad",
                 "pads sequences to the batch's longest (labels with ignore_index) and adds an "
                 "attention mask",
                 [](const PadArgs& a) -> CollatePtr { return std::make_shared<PadCollate>(a); });
  r.add<MlmArgs>("mlm",
                 "pad, then BERT's masking: 15% of tokens selected, 80/10/10 mask/random/keep, "
                 "labels on the selected",
                 [](const MlmArgs& a) -> CollatePtr { return std::make_shared<MlmCollate>(a); });
}

}  // namespace detail
}  // namespace unitrain
