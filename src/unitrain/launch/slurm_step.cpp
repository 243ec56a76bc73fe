#include "unitrain/launch/slurm_step.h"

#include <cstdlib>

#include "unitrain/core/error.h"
#include "unitrain/parallel/dist_env.h"

namespace unitrain {
namespace {

int number_of(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  UT_CHECK(end != v && *end == '\0' && n >= 0, "environment variable ", name, "='", v,
           "' is not a whole number");
  return static_cast<int>(n);
}

}  // namespace

std::optional<SlurmStepMachines> slurm_step_machines(
    const std::function<const char*(const char*)>& getenv) {
  for (const char* name :
       {"SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_STEP_NODELIST"}) {
    if (getenv(name) == nullptr) return std::nullopt;
  }
  SlurmStepMachines m;
  m.nnodes = number_of(getenv, "SLURM_STEP_NUM_NODES");
  const int tasks = number_of(getenv, "SLURM_STEP_NUM_TASKS");
  if (tasks != m.nnodes) {
    // srun's own --ntasks-per-node=1 cannot lower the job's task count: name the header.
    const char* job_per_node = getenv("SLURM_NTASKS_PER_NODE");
    const std::string why =
        job_per_node != nullptr && std::atoi(job_per_node) > 1
            ? detail::concat("the job asks for ", job_per_node,
                             " tasks per node (SLURM_NTASKS_PER_NODE, from #SBATCH "
                             "--ntasks-per-node), and srun keeps them even with "
                             "--ntasks-per-node=1")
            : std::string("srun starts the job's tasks (SLURM_NTASKS) unless it has one per node");
    throw ConfigError(detail::concat(
        "launch: srun started ", tasks, " tasks on ", m.nnodes,
        " node(s) (SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES), but `unitrain launch` starts "
        "every worker of its machine and must run once per node; ",
        why,
        ": with the launcher give the job one task per node (#SBATCH --ntasks-per-node=1, no "
        "--ntasks) and run srun --ntasks-per-node=1 unitrain launch --nproc-per-node N ..., or "
        "drop the launcher and let srun start one task per worker (srun unitrain train ...)"));
  }
  m.node_rank = number_of(getenv, "SLURM_PROCID");
  m.master_addr = expand_slurm_nodelist(getenv("SLURM_STEP_NODELIST")).front();
  if (const char* job = getenv("SLURM_JOB_ID")) m.master_port = port_of_job(job, m.master_port);
  return m;
}

}  // namespace unitrain
