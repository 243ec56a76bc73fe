// Schema::markdown: the tables of docs/config.md, from the declarations.
#include <sstream>

#include "unitrain/core/schema.h"

namespace unitrain {
namespace {

std::string escape_cell(const std::string& s) {
  std::string r;
  for (char c : s) r += (c == '|') ? std::string("\\|") : std::string(1, c);
  return r;
}

std::string markdown_key(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string default_cell(const Field& f) {
  if (f.default_yaml()) return "`" + *f.default_yaml() + "`";
  if (f.is_nullable()) return "`null`";
  return f.type() == Type::Section || f.type() == Type::SectionList ? "" : "required";
}

// One table row; `resume` is the key's effective class, or nothing without that column.
std::string row(const std::string& key, const std::string& type, const std::string& def,
                const std::string& allowed, const std::optional<ResumeRule>& resume,
                const std::string& help) {
  std::string out = "| `" + key + "` | " + type + " | " + def + " | " + escape_cell(allowed);
  if (resume) out += std::string(" | ") + on_resume_name(resume->on);
  return out + " | " + escape_cell(help) + " |\n";
}

}  // namespace

std::string Schema::markdown(const std::string& prefix, std::optional<ResumeRule> resume) const {
  std::ostringstream out;
  for (const auto& f : fields_) {
    const std::string key = markdown_key(prefix, f.name());
    std::optional<ResumeRule> mine = resume;
    if (resume && f.resume_rule()) mine = f.resume_rule();
    std::string type = f.type_text();
    if (!f.component_kind().empty()) {
      type = f.type() == Type::SectionList ? "list of " + f.component_kind() + " sections"
                                           : f.component_kind() + " section";
    }
    out << row(key, type, default_cell(f), f.allowed(), mine, f.help_text());
    const std::string sub_prefix = f.type() == Type::SectionList ? key + "[]" : key;
    if (!f.component_kind().empty()) {
      std::optional<ResumeRule> type_rule = mine;
      if (mine && f.type_resume_rule()) type_rule = f.type_resume_rule();
      const std::string& kind = f.component_kind();
      out << row(sub_prefix + ".type", "string",
                 f.default_type().empty() ? "required" : "`" + f.default_type() + "`",
                 "a registered " + kind, type_rule, "which " + kind + " (see its own table below)");
      out << row(sub_prefix + ".args", "section", "", "", mine, "arguments of the chosen " + kind);
    }
    if (f.section_schema()) out << f.section_schema()->markdown(sub_prefix, mine);
  }
  return out.str();
}

}  // namespace unitrain
