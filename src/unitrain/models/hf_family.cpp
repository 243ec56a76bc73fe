#include "unitrain/models/hf_family.h"

#include "unitrain/core/error.h"
#include "unitrain/core/registered_list.h"

namespace unitrain::models {
namespace {

RegisteredList<HfFamily>& families() {
  static RegisteredList<HfFamily> all(&HfFamily::model_type);
  return all;
}

}  // namespace

void register_hf_family(HfFamily family) {
  UT_CHECK(family.model_name != nullptr, "the Hugging Face family '", family.model_type,
           "' has no model_name");
  const std::string type = family.model_type;
  UT_CHECK(families().add(std::move(family)), "the Hugging Face family '", type,
           "' is registered twice");
}

const HfFamily* find_hf_family(const std::string& model_type) {
  return families().find(model_type);
}

std::vector<std::string> hf_family_types() { return families().keys(); }

std::string hf_family_list(const char* conjunction) {
  return joined_names(hf_family_types(), conjunction);
}

}  // namespace unitrain::models
