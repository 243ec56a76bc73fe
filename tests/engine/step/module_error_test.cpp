// Errors from the module's own code, named with where the run stood; a lost process is not the
// module's error.
#include "unitrain/engine/step/module_error.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "unitrain/core/error.h"
#include "unitrain/parallel/collective_error.h"

namespace unitrain {
namespace {

std::string rethrown(const std::exception_ptr& thrown, const std::string& hint) {
  try {
    try {
      std::rethrow_exception(thrown);
    } catch (...) {
      rethrow_module_error("the backward of the loss training_step returned at step 7", hint);
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "nothing";
}

TEST(ModuleError, NamesWhereAndTheHint) {
  // A TrainError that only reads like a collective's failure is still the module's.
  EXPECT_EQ(rethrown(std::make_exception_ptr(TrainError("rank 1: x across 3 processes failed "
                                                        "after 1 s")),
                     ""),
            "the backward of the loss training_step returned at step 7 failed: rank 1: x across 3 "
            "processes failed after 1 s");
  const std::string m = rethrown(std::make_exception_ptr(std::runtime_error("boom")),
                                 "(a loss computed from detached tensors)");
  EXPECT_EQ(m,
            "the backward of the loss training_step returned at step 7 (a loss computed from "
            "detached tensors) failed: boom");
}

TEST(ModuleError, ACollectiveThatFailedInsideTheModuleSaysAProcessWasLost) {
  const std::string collective =
      "rank 1: reduce_scatter #1880 (step 144, backward) across 3 processes failed after 0.1 s "
      "(distributed.timeout 5 s): did not arrive: rank 2: last seen in all_gather #1858";
  const std::string m = rethrown(std::make_exception_ptr(CollectiveError(collective)),
                                 "(a loss computed from detached tensors)");
  EXPECT_EQ(m, "lost a process in the backward of the loss training_step returned at step 7: " +
                   collective);
}

}  // namespace
}  // namespace unitrain
