// The callback registry on its own (no Trainer): every built-in built by its name with its
// default args and what has no default, registration once however often it is asked for, a
// plugin's callback registered from its options, and an unknown name refused with the names there
// are.
#include "unitrain/engine/callback_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"

namespace unitrain {
namespace {

const std::vector<std::string> kBuiltins = {"early_stopping", "ema",        "generate",
                                            "grad_norm",      "lr_monitor", "model_summary",
                                            "throughput",     "timer"};

TEST(CallbackRegistry, EveryBuiltinIsBuiltByItsNameOnce) {
  register_builtins();
  register_builtins();  // again: nothing registered twice (that would be an error)
  register_builtin_callbacks();
  std::vector<std::string> listed;
  for (const ComponentInfo* info : catalog::of_kind("callback")) listed.push_back(info->name);
  for (const std::string& name : kBuiltins) {
    SCOPED_TRACE(name);
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end());
    // Each with its defaults, and what has none: the metric early_stopping watches, the prompts
    // generate writes after, the time timer allows.
    const std::map<std::string, std::string> required = {
        {"early_stopping", ", args: {metric: val/loss}"},
        {"timer", ", args: {budget: 1h}"},
        {"generate", ", args: {prompts: [hi]}"}};
    const std::string args = required.count(name) ? required.at(name) : "";
    const CallbackPtr built =
        callback_registry().create(Config::from_string("{type: " + name + args + "}"));
    ASSERT_NE(built, nullptr);
    EXPECT_EQ(built->name(), name);
  }
}

struct Counting : Callback {
  struct Options {
    int64_t every = 1;
    static void declare(unitrain::Options<Options>& o) {
      o.field("every", &Options::every).min(1).help("how often");
    }
  };
  explicit Counting(Options o) : every(o.every) {}
  std::string name() const override { return "test_counting"; }
  int64_t every;
};

TEST(CallbackRegistry, APluginRegistersItsCallbackFromItsOptions) {
  static std::once_flag once;  // (the test may run more than once in a process)
  std::call_once(once, [] {
    register_callback<Counting, Counting::Options>("test_counting", "counts (test)");
  });
  const CallbackPtr built =
      callback_registry().create(Config::from_string("{type: test_counting, args: {every: 3}}"));
  EXPECT_EQ(dynamic_cast<Counting&>(*built).every, 3);
  const CallbackPtr by_default =
      callback_registry().create(Config::from_string("{type: test_counting}"));
  EXPECT_EQ(dynamic_cast<Counting&>(*by_default).every, 1);
  // A second registration under the same name is refused.
  EXPECT_THROW((register_callback<Counting, Counting::Options>("test_counting", "again")),
               ConfigError);
}

TEST(CallbackRegistry, AnUnknownNameListsTheRegisteredOnes) {
  register_builtins();
  const std::string m =
      test::message_of([] { callback_registry().create(Config::from_string("{type: gradnorm}")); });
  EXPECT_TRUE(test::contains(m, "gradnorm")) << m;
  EXPECT_TRUE(test::contains(m, "grad_norm")) << m;  // what there is
}

}  // namespace
}  // namespace unitrain
