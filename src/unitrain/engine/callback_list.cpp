#include "unitrain/engine/callback_list.h"

#include <cxxabi.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <typeinfo>

#include "unitrain/core/error.h"
#include "unitrain/core/error_text.h"
#include "unitrain/log/console.h"

namespace unitrain {

std::string Callback::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && readable ? readable : mangled;
  std::free(readable);
  return out;
}

bool CallbackList::reads_step_values() const {
  for (const auto& c : list_) {
    if (c->reads_step_values()) return true;
  }
  return false;
}

const Callback* CallbackList::hooking_inside_step() const {
  for (const auto& c : list_) {
    if (c->hooks_inside_step()) return c.get();
  }
  return nullptr;
}

double monitored(const MetricMap& metrics, const std::string& key, const std::string& who) {
  auto it = metrics.find(key);
  if (it != metrics.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& kv : metrics) names.push_back(kv.first);
  throw ConfigError(
      fmt::format("{} monitors '{}' but validation reports: {}", who, key, fmt::join(names, ", ")));
}

void CallbackList::add(std::shared_ptr<Callback> callback) {
  UT_CHECK(callback != nullptr, "add_callback: the callback is null");
  UT_CHECK(trainer_ != nullptr, "callback '", callback->name(),
           "': this callback list belongs to no Trainer, whose hooks it would call");
  list_.push_back(std::move(callback));
}

void CallbackList::rethrow_named(const Callback& c, const char* hook) {
  failed_ = &c;
  const std::string where = "callback '" + c.name() + "' failed in " + hook + ": ";
  try {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.what());
  } catch (const std::exception& e) {
    throw TrainError(where + error_text(e));
  } catch (...) {
    throw TrainError(where + "an exception that is not a std::exception");
  }
}

void CallbackList::on_exception(const std::exception& error) noexcept {
  for (const auto& c : list_) {
    if (c.get() == failed_) continue;
    try {
      c->on_exception(*trainer_, error);
    } catch (const std::exception& e) {
      log::warn("callback '" + c->name() + "' failed in on_exception (ignored): " + error_text(e));
    } catch (...) {
      log::warn("callback '" + c->name() + "' failed in on_exception (ignored)");
    }
  }
  failed_ = nullptr;
}

}  // namespace unitrain
