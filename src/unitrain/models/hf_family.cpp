#include "unitrain/models/hf_family.h"

#include <deque>
#include <mutex>

#include "unitrain/core/error.h"

namespace unitrain::models {
namespace {

struct Families {
  std::mutex mu;
  std::deque<HfFamily> list;  // never shrinks: find_hf_family's pointers stay valid
};

Families& families() {
  static Families all;
  return all;
}

}  // namespace

void register_hf_family(HfFamily family) {
  Families& all = families();
  std::lock_guard<std::mutex> lock(all.mu);
  for (const HfFamily& f : all.list) {
    UT_CHECK(f.model_type != family.model_type, "the Hugging Face family '", family.model_type,
             "' is registered twice");
  }
  UT_CHECK(family.model_name != nullptr, "the Hugging Face family '", family.model_type,
           "' has no model_name");
  all.list.push_back(std::move(family));
}

const HfFamily* find_hf_family(const std::string& model_type) {
  Families& all = families();
  std::lock_guard<std::mutex> lock(all.mu);
  for (const HfFamily& f : all.list) {
    if (f.model_type == model_type) return &f;
  }
  return nullptr;
}

std::vector<std::string> hf_family_types() {
  Families& all = families();
  std::lock_guard<std::mutex> lock(all.mu);
  std::vector<std::string> out;
  for (const HfFamily& f : all.list) out.push_back(f.model_type);
  return out;
}

std::string hf_family_list(const char* conjunction) {
  const std::vector<std::string> types = hf_family_types();
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += i + 1 == types.size() ? conjunction : ", ";
    out += types[i];
  }
  return out.empty() ? "none" : out;
}

}  // namespace unitrain::models
