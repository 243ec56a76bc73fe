#include "unitrain/data/class_names.h"

#include <algorithm>
#include <map>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"

namespace unitrain {

IndexedClasses index_class_names(const std::vector<std::string>& names,
                                 const std::vector<std::string>& given,
                                 const std::function<std::string(size_t)>& where) {
  IndexedClasses out;
  out.classes = given;
  if (out.classes.empty()) {
    out.classes = names;
    std::sort(out.classes.begin(), out.classes.end());
    out.classes.erase(std::unique(out.classes.begin(), out.classes.end()), out.classes.end());
  }
  std::map<std::string, int64_t> index;
  for (size_t k = 0; k < out.classes.size(); ++k) {
    index.emplace(out.classes[k], static_cast<int64_t>(k));
  }
  out.indices.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    UT_CHECK(!names[i].empty(), where(i), ": the class is empty");
    const auto it = index.find(names[i]);
    UT_CHECK(it != index.end(), where(i), ": class '", names[i], "' is not one of the ",
             out.classes.size(), " classes (", some_names(out.classes),
             "); add it to `classes`, or to the training data when the classes come from there");
    out.indices.push_back(it->second);
  }
  return out;
}

}  // namespace unitrain
