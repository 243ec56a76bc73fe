// Schema::resume_rule: what the declarations say of a key when a run resumes.
#include <cctype>

#include "unitrain/core/schema.h"

namespace unitrain {
namespace {

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(key.substr(start, dot - start));
  }
  parts.push_back(key.substr(start));
  return parts;
}

bool is_list_index(const std::string& part) {
  if (part.empty()) return false;
  for (char c : part) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

ResumeRule Schema::resume_rule(const std::string& key) const {
  const std::vector<std::string> parts = split_dotted(key);
  ResumeRule rule;  // the root's class: free
  const Schema* schema = this;
  for (size_t i = 0; schema != nullptr && i < parts.size();) {
    const Field* f = schema->find(parts[i++]);
    if (f == nullptr) break;  // a key the schema does not know: its section's class
    if (f->resume_rule()) rule = *f->resume_rule();
    if (f->type() == Type::SectionList && i < parts.size() && is_list_index(parts[i])) ++i;
    if (f->type() != Type::Section && f->type() != Type::SectionList) break;
    if (!f->component_kind().empty() && i < parts.size()) {
      if (parts[i] == "type" && f->type_resume_rule()) rule = *f->type_resume_rule();
      if (parts[i] == "type" || parts[i] == "args") break;
    }
    schema = f->section_schema().get();
  }
  return rule;
}

}  // namespace unitrain
