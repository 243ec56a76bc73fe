#pragma once
// Where this process stands in a distributed job, as its launcher tells it through the
// environment: torchrun (and `unitrain launch`), Open MPI's mpirun, or Slurm's srun.
#include <functional>
#include <string>
#include <vector>

namespace unitrain {

struct DistEnv {
  /// torchrun | openmpi | cray-pals | mpich (MPICH's or Intel MPI's mpiexec) | slurm | none (one
  /// process)
  std::string launcher = "none";
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// An agent already hosts the TCPStore (TORCHELASTIC_USE_AGENT_STORE=True: torchrun's, or
  /// machine 0's `unitrain launch` on several machines): rank 0 joins it as a client instead of
  /// starting its own.
  bool agent_store = false;
  /// TORCHELASTIC_RESTART_COUNT: which start of the workers this is (0: the first). With an
  /// agent's store, which outlives the workers, each start's keys are under their own prefix
  /// (`/worker/attempt_<N>`, as PyTorch's env:// rendezvous does), so a restart never reads an
  /// earlier start's addresses.
  int restart_count = 0;
  /// UNITRAIN_STORE_FILE: the rendezvous goes through this file (c10d's FileStore) instead of
  /// a TCP store, so no socket listens for it. `unitrain launch` on one machine sets it to a
  /// file in a fresh folder only its user can open.
  std::string store_file;
  /// The launcher's variable that gave world_size (WORLD_SIZE, SLURM_NTASKS, PMI_SIZE, ...),
  /// for messages.
  std::string world_size_variable = "WORLD_SIZE";

  bool distributed() const { return world_size > 1; }
  /// Every rank runs on this machine (LOCAL_WORLD_SIZE == WORLD_SIZE).
  bool one_machine() const { return local_world_size == world_size; }
};

/// Reads, in this order: torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE, TORCHELASTIC_RESTART_COUNT); Open
/// MPI's (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE); Cray MPICH's under PALS
/// (PALS_RANKID, PMI_SIZE, PALS_LOCAL_RANKID, PALS_LOCAL_SIZE); MPICH's and Intel MPI's hydra
/// (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS; not when they repeat Slurm's, as srun
/// with a PMI plugin sets them); Slurm's (SLURM_PROCID,
/// SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE, SLURM_JOB_NODELIST, SLURM_JOB_ID); else a
/// single process.
/// UNITRAIN_STORE_FILE (any launcher) names a rendezvous file instead of MASTER_ADDR:PORT.
/// MASTER_ADDR and MASTER_PORT, when set, win over what a launcher implies: the MPIs' default
/// address is 127.0.0.1 (one machine; several need MASTER_ADDR), Slurm's the first host of the
/// node list and its port 15000 + the job id's last four digits.
/// ConfigError naming the variable when one is malformed (not a number, a rank outside the
/// world, a port outside 1-65535).
DistEnv read_dist_env(const std::function<const char*(const char*)>& getenv);
/// read_dist_env of this process's environment.
DistEnv read_dist_env();

/// The port a batch job's ranks meet at, from its id (Slurm's SLURM_JOB_ID, PBS's PBS_JOBID):
/// 15000 + its last 4 digits; `fallback` when the id does not end in digits.
int port_of_job(std::string id, int fallback);

/// The host names of a Slurm node list: "node[01-03,7],login1" -> node01 node02 node03 node7
/// login1. ConfigError naming the list when it is malformed.
std::vector<std::string> expand_slurm_nodelist(const std::string& list);

}  // namespace unitrain
