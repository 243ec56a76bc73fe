#pragma once
// `unitrain launch` started by srun once per node (`srun --ntasks-per-node=1 unitrain launch
// --nproc-per-node 8 -- train run.yaml`): the machines of the run from the Slurm step's
// variables, so that the sbatch script needs no shell arithmetic for --nnodes, --node-rank and
// --master-addr.
#include <functional>
#include <optional>
#include <string>

namespace unitrain {

struct SlurmStepMachines {
  int nnodes = 1;           ///< SLURM_STEP_NUM_NODES
  int node_rank = 0;        ///< SLURM_PROCID (one task per node: the node's index)
  std::string master_addr;  ///< the first host of SLURM_STEP_NODELIST
  int master_port = 29500;  ///< 15000 + SLURM_JOB_ID's last 4 digits
};

/// The machines when this process is a task of a Slurm step (srun sets SLURM_STEP_NUM_NODES,
/// SLURM_STEP_NUM_TASKS, SLURM_PROCID, SLURM_STEP_NODELIST); nullopt otherwise (a batch
/// script's own shell, or no Slurm). ConfigError when the step runs more tasks than nodes: each
/// launcher starts every worker of its machine, so srun must start one per node; the message
/// names the job's SLURM_NTASKS_PER_NODE when it is above 1 (srun's --ntasks-per-node=1 does
/// not lower it: the sbatch header must say 1).
std::optional<SlurmStepMachines> slurm_step_machines(
    const std::function<const char*(const char*)>& getenv);

}  // namespace unitrain
