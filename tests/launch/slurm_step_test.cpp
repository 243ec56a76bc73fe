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
  EXPECT_FALSE(machines({{"SLURM_JOB_ID", "5"},
                         {"SLURM_NODEID", "0"},
                         {"SLURM_PROCID", "0"},
                         {"SLURM_JOB_NODELIST", "n[1-2]"}}));
}

std::string slurm_step_refusal(const Env& env) {
  try {
    machines(env);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SlurmStepMachines, MoreTasksThanNodesIsRefused) {
  Env env = kStep;
  env["SLURM_STEP_NUM_TASKS"] = "8";
  const std::string what = slurm_step_refusal(env);
  EXPECT_NE(what.find("srun started 8 tasks on 2 node(s)"), std::string::npos) << what;
  EXPECT_NE(what.find("#SBATCH --ntasks-per-node=1"), std::string::npos) << what;
  EXPECT_NE(what.find("srun --ntasks-per-node=1 unitrain launch"), std::string::npos) << what;
  EXPECT_NE(what.find("srun unitrain train"), std::string::npos) << what;
}

TEST(SlurmStepMachines, TheRefusalNamesTheJobsTasksPerNode) {
  // `#SBATCH --ntasks-per-node=4` and `srun --ntasks-per-node=1 unitrain launch`: srun keeps 4.
  Env env = kStep;
  env["SLURM_STEP_NUM_TASKS"] = "8";
  env["SLURM_NTASKS_PER_NODE"] = "4";
  const std::string what = slurm_step_refusal(env);
  EXPECT_NE(what.find("the job asks for 4 tasks per node (SLURM_NTASKS_PER_NODE"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("#SBATCH --ntasks-per-node=1"), std::string::npos) << what;
}

}  // namespace
}  // namespace unitrain
