#include "unitrain/engine/config/component_list.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/core/registry.h"

namespace unitrain {

TEST(ComponentList, EveryKindWithOneLinePerComponent) {
  const std::string all = component_list();
  for (const char* line : {"model:\n", "dataset:\n", "optimizer:\n", "\n  mlp  ", "\n  csv  "}) {
    EXPECT_NE(all.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(all.find("\n      "), std::string::npos);  // no argument lines without a kind
}

TEST(ComponentList, OneKindWithEachArgumentsTypeDefaultAndHelp) {
  const std::string models = component_list("model");
  EXPECT_EQ(models, component_list("models"));
  EXPECT_EQ(models.rfind("model:\n", 0), 0u) << models;
  EXPECT_EQ(models.find("dataset:"), std::string::npos);
  EXPECT_NE(models.find("\n  transformer_lm "), std::string::npos) << models;
  // name, type, default, help of one argument, on one line
  const size_t at = models.find("\n      dropout ", models.find("\n  transformer_lm "));
  ASSERT_NE(at, std::string::npos) << models;
  const std::string line = models.substr(at + 1, models.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find("float"), std::string::npos) << line;
  EXPECT_NE(line.find(" 0.1 "), std::string::npos) << line;  // as written, not 0.10000000000000001
  EXPECT_NE(line.find("dropout on embeddings"), std::string::npos) << line;
  EXPECT_NE(models.find("required"), std::string::npos);  // mlp sizes, transformer_lm vocab
  EXPECT_NE(component_list("losses").find("(no arguments)"), std::string::npos);  // mse
}

TEST(ComponentList, UnknownKindListsTheKnownKinds) {
  std::string msg = test::error_of<ConfigError>([] { component_list("modle"); });
  EXPECT_NE(msg.find("unknown kind 'modle' (did you mean 'model'?)"), std::string::npos) << msg;
  for (const auto& kind : catalog::kinds()) EXPECT_NE(msg.find(kind), std::string::npos) << kind;
}

}  // namespace unitrain
