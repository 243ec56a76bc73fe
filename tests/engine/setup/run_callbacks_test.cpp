// build_callbacks on its own: the callbacks a config asks for, early_stopping first, by name.
#include "unitrain/engine/setup/run_callbacks.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/builtins.h"
#include "unitrain/engine/config/load_config.h"

namespace unitrain {
namespace {

TEST(RunCallbacks, EarlyStoppingComesFirstThenTheListInOrder) {
  register_builtins();
  const Config config = resolve_run_config(
      Config::from_string("early_stopping: {metric: val/loss, patience: 2}\n"
                          "callbacks: [{type: lr_monitor}, {type: grad_norm}]\n"));
  const std::vector<CallbackPtr> built = build_callbacks(config);
  ASSERT_EQ(built.size(), 3u);
  EXPECT_EQ(built[0]->name(), "early_stopping");
  EXPECT_EQ(built[1]->name(), "lr_monitor");
  EXPECT_EQ(built[2]->name(), "grad_norm");
  EXPECT_TRUE(build_callbacks(resolve_run_config(Config())).empty());  // none asked for
}

TEST(RunCallbacks, AnUnknownCallbackIsNamedWithTheKnownOnes) {
  register_builtins();
  const std::string message = test::config_error_of([] {
    build_callbacks(resolve_run_config(Config::from_string("callbacks: [{type: lr_monitr}]\n")));
  });
  EXPECT_TRUE(test::contains(message, "lr_monitr")) << message;
  EXPECT_TRUE(test::contains(message, "lr_monitor")) << message;
}

}  // namespace
}  // namespace unitrain
