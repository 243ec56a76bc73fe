// The library's open lists: an entry per key, found by key or by asking each in turn, and never
// moved as the list grows.
#include "unitrain/core/registered_list.h"

#include <gtest/gtest.h>

#include <thread>

namespace unitrain {
namespace {

struct Entry {
  std::string name;
  int size = 0;
};

TEST(RegisteredList, AKeyIsRegisteredOnceAndFoundByKeyOrByQuestion) {
  RegisteredList<Entry> list(&Entry::name);
  EXPECT_TRUE(list.add({"small", 1}));
  EXPECT_TRUE(list.add({"large", 9}));
  EXPECT_FALSE(list.add({"small", 5}));  // the first stays
  ASSERT_NE(list.find("small"), nullptr);
  EXPECT_EQ(list.find("small")->size, 1);
  EXPECT_EQ(list.find("medium"), nullptr);
  // The first in registration order that answers yes.
  const Entry* over = list.find_if([](const Entry& e) { return e.size > 0; });
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->name, "small");
  EXPECT_EQ(list.find_if([](const Entry& e) { return e.size > 10; }), nullptr);
  EXPECT_EQ(list.keys(), (std::vector<std::string>{"small", "large"}));
}

TEST(RegisteredList, WhatFindReturnedStaysValidWhileOthersRegister) {
  RegisteredList<Entry> list(&Entry::name);
  list.add({"first", 1});
  const Entry* first = list.find("first");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&list, t] {
      for (int i = 0; i < 250; ++i) list.add({std::to_string(t) + "." + std::to_string(i), i});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(list.keys().size(), 1001u);
  EXPECT_EQ(list.find("first"), first);
  EXPECT_EQ(first->name, "first");
}

TEST(JoinedNames, AListAsASentenceSaysIt) {
  EXPECT_EQ(joined_names({}), "none");
  EXPECT_EQ(joined_names({"gpt2"}), "gpt2");
  EXPECT_EQ(joined_names({"gpt2", "llama", "qwen2"}), "gpt2, llama and qwen2");
  EXPECT_EQ(joined_names({"gpt2", "llama"}, " or "), "gpt2 or llama");
}

}  // namespace
}  // namespace unitrain
