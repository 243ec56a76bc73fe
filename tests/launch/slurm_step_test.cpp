#include "unitrain/launch/slurm_step.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<SlurmStepMachines> machines(const Env& env) {
  return slurm_step_machines([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

const Env kStep = {{"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_NUM_TASKS", "2"},
                   {"SLURM_PROCID", "1"},         {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                   {"SLURM_JOB_ID", "123456"},    {"SLURM_NODEID", "1"}};

TEST(SlurmStepMachines, OneTaskPerNodeGivesTheMachines) {
  const auto m = machines(kStep);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->nnodes, 2);
  EXPECT_EQ(m->node_rank, 1);
  EXPECT_EQ(m->master_addr, "gpu07");
  EXPECT_EQ(m->master_port, 15000 + 3456);
}

TEST(SlurmStepMachines, NotASlurmStepGivesNothing) {
  EXPECT_FALSE(machines({}));
  // A batch script's own shell: the job's variables, no step's.
  EXPECT_FALSE(machines({{"SLURM_JOB_ID", "5"}, {"SLURM_NODEID", "0"}, {"SLURM_PROCID", "0"},
                         {"SLURM_JOB_NODELIST", "n[1-2]"}}));
}

TEST(SlurmStepMachines, MoreTasksThanNodesIsRefused) {
  Env env = kStep;
  env["SLURM_STEP_NUM_TASKS"] = "8";
  try {
    machines(env);
    FAIL() << "accepted 8 tasks on 2 nodes";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("srun started 8 tasks on 2 node(s)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("srun --ntasks-per-node=1 unitrain launch"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace unitrain
