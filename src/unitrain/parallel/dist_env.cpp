#include "unitrain/parallel/dist_env.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using GetEnv = std::function<const char*(const char*)>;

bool is_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

/// The whole number in variable `name`; `fallback` when unset.
int number(const GetEnv& getenv, const char* name, int fallback) {
  const char* v = getenv(name);
  if (v == nullptr) return fallback;
  UT_CHECK(is_digits(v), "environment variable ", name, "='", v, "' is not a whole number");
  return std::atoi(v);
}

/// The leading number of Slurm's per-node task counts ("2(x3),1" -> 2).
int leading_number(const char* v) {
  std::string digits;
  for (const char* p = v; *p >= '0' && *p <= '9'; ++p) digits += *p;
  return is_digits(digits) ? std::atoi(digits.c_str()) : 0;
}

void check(const DistEnv& e, const char* rank_var, const char* size_var) {
  UT_CHECK(e.world_size >= 1, size_var, " must be at least 1, got ", e.world_size);
  UT_CHECK(e.rank < e.world_size, rank_var, "=", e.rank, " is outside the world of ", e.world_size,
           " processes (", size_var, ")");
  UT_CHECK(e.local_world_size >= 1 && e.local_rank < e.local_world_size, "the local rank ",
           e.local_rank, " is outside the ", e.local_world_size, " processes on this machine");
  UT_CHECK(e.master_port >= 1 && e.master_port <= 65535, "MASTER_PORT=", e.master_port,
           " is not a port (1-65535)");
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  size_t i = 0;
  auto bad = [&list](const std::string& why) {
    return ConfigError("SLURM_JOB_NODELIST='" + list + "' is not a Slurm node list: " + why);
  };
  while (i < list.size()) {
    std::string prefix;
    while (i < list.size() && list[i] != ',' && list[i] != '[') prefix += list[i++];
    if (i < list.size() && list[i] == '[') {
      const size_t close = list.find(']', i);
      if (close == std::string::npos) throw bad("a '[' is not closed");
      std::string ranges = list.substr(i + 1, close - i - 1);
      i = close + 1;
      std::string suffix;
      while (i < list.size() && list[i] != ',') suffix += list[i++];
      size_t start = 0;
      while (start <= ranges.size()) {
        size_t comma = ranges.find(',', start);
        if (comma == std::string::npos) comma = ranges.size();
        const std::string r = ranges.substr(start, comma - start);
        const size_t dash = r.find('-');
        const std::string lo = r.substr(0, dash);
        const std::string hi = dash == std::string::npos ? lo : r.substr(dash + 1);
        if (!is_digits(lo) || !is_digits(hi)) throw bad("'" + r + "' is not a number or range");
        const int a = std::atoi(lo.c_str()), b = std::atoi(hi.c_str());
        if (b < a) throw bad("the range '" + r + "' runs backwards");
        for (int n = a; n <= b; ++n) {
          std::string digits = std::to_string(n);
          if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
          hosts.push_back(prefix + digits + suffix);
        }
        start = comma + 1;
      }
    } else if (!prefix.empty()) {
      hosts.push_back(prefix);
    }
    if (i < list.size() && list[i] == ',') ++i;
  }
  if (hosts.empty()) throw bad("no host in it");
  return hosts;
}

namespace {

/// A launcher of the MPI kind: it numbers the ranks in variables of its own and says nothing of
/// the rendezvous (127.0.0.1 unless MASTER_ADDR is given; several machines need it given).
struct MpiLauncher {
  const char* name;        ///< DistEnv::launcher
  const char* rank;        ///< present with `size`: this launcher started the process
  const char* size;        ///< the world size
  const char* local_rank;  ///< absent: the rank (one machine)
  const char* local_size;  ///< absent or 0: the world size (one machine)
  const char* command;     ///< what users type, for the error
  const char* how;         ///< how they pass MASTER_ADDR with it
  bool slurm_may_repeat;   ///< srun sets these too: Slurm's where they equal Slurm's own
};

/// In the order they are recognised: LSF's jsrun sets Open MPI's variables too (Spectrum MPI),
/// but is named for itself; Cray's PALS sets PMI_RANK too, but the local rank is PALS's;
/// MPICH's and Intel MPI's hydra last, and not where its variables repeat Slurm's.
constexpr MpiLauncher kMpiLaunchers[] = {
    {"lsf-jsrun", "JSM_NAMESPACE_RANK", "JSM_NAMESPACE_SIZE", "JSM_NAMESPACE_LOCAL_RANK",
     "JSM_NAMESPACE_LOCAL_SIZE", "jsrun", "jsrun -E MASTER_ADDR=<host>", false},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", "mpirun", "mpirun -x MASTER_ADDR=<host> -x MASTER_PORT=<port>",
     false},
    {"mvapich", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE", "mpirun_rsh",
     "mpirun_rsh -np N -hostfile hosts MASTER_ADDR=<host>", false},
    {"cray-pals", "PALS_RANKID", "PMI_SIZE", "PALS_LOCAL_RANKID", "PALS_LOCAL_SIZE", "mpiexec",
     "mpiexec --env MASTER_ADDR=<host>", false},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "mpiexec",
     "mpiexec -genv MASTER_ADDR <host>", true},
};

/// srun with a PMI plugin sets PMI_RANK and PMI_SIZE beside Slurm's own, which say more (the
/// master's host and port); an mpiexec inside a Slurm job inherits the batch step's SLURM_*
/// (rank 0 of 1), which say otherwise.
bool slurm_says_the_same(const GetEnv& getenv) {
  const char* procid = getenv("SLURM_PROCID");
  const char* ntasks = getenv("SLURM_NTASKS");
  return procid != nullptr && ntasks != nullptr && std::string(procid) == getenv("PMI_RANK") &&
         std::string(ntasks) == getenv("PMI_SIZE");
}

/// The MPI launcher whose variables this process has, or nullptr.
const MpiLauncher* mpi_launcher(const GetEnv& getenv) {
  for (const MpiLauncher& l : kMpiLaunchers) {
    if (getenv(l.rank) == nullptr || getenv(l.size) == nullptr) continue;
    if (l.slurm_may_repeat && slurm_says_the_same(getenv)) continue;
    return &l;
  }
  return nullptr;
}

/// Under PBS (Pro, OpenPBS, Torque), rank 0 runs on the first host of the job's node file: the
/// master's address, and the port from the job's id. False when PBS_NODEFILE is not set.
bool read_pbs_master(DistEnv& e, const GetEnv& getenv) {
  const char* file = getenv("PBS_NODEFILE");
  if (file == nullptr) return false;
  std::ifstream hosts(file);
  UT_CHECK(hosts.good(), "PBS_NODEFILE=", file, ": cannot read the job's node file");
  std::string host;
  while (std::getline(hosts, host)) {
    host.erase(0, host.find_first_not_of(" \t"));
    host.erase(std::min(host.size(), host.find_first_of(" \t\r")));
    if (!host.empty()) break;
  }
  UT_CHECK(!host.empty(), "PBS_NODEFILE=", file, ": the job's node file names no host");
  e.master_addr = host;
  if (const char* job = getenv("PBS_JOBID")) e.master_port = port_of_job(job, e.master_port);
  return true;
}

void read_mpi(DistEnv& e, const MpiLauncher& l, const GetEnv& getenv) {
  e.launcher = l.name;
  e.rank = number(getenv, l.rank, 0);
  e.world_size = number(getenv, l.size, 1);
  e.local_rank = number(getenv, l.local_rank, e.rank);
  e.local_world_size = number(getenv, l.local_size, 0);
  if (e.local_world_size <= 0) e.local_world_size = e.world_size;
  const bool pbs = read_pbs_master(e, getenv);
  // Ranks on several machines meet at rank 0's machine: its address must be given.
  UT_CHECK(e.local_world_size == e.world_size || pbs || getenv("MASTER_ADDR") != nullptr, l.command,
           " runs ranks on several machines but MASTER_ADDR is not set: pass the address of the "
           "machine running rank 0, e.g. ",
           l.how);
}

void read_torchrun(DistEnv& e, const GetEnv& getenv) {
  e.launcher = "torchrun";
  e.rank = number(getenv, "RANK", 0);
  e.world_size = number(getenv, "WORLD_SIZE", 1);
  e.local_rank = number(getenv, "LOCAL_RANK", e.rank);
  e.local_world_size = number(getenv, "LOCAL_WORLD_SIZE", e.world_size);
  const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent != nullptr && std::string(agent) == "True";
  e.restart_count = number(getenv, "TORCHELASTIC_RESTART_COUNT", 0);
  UT_CHECK(e.world_size == 1 || getenv("MASTER_ADDR") != nullptr, "RANK and WORLD_SIZE are set ",
           "but MASTER_ADDR is not: set it to the address of the machine running rank 0");
}

void read_slurm(DistEnv& e, const GetEnv& getenv) {
  e.launcher = "slurm";
  e.rank = number(getenv, "SLURM_PROCID", 0);
  e.world_size = number(getenv, "SLURM_NTASKS", 1);
  e.local_rank = number(getenv, "SLURM_LOCALID", 0);
  const char* per_node = getenv("SLURM_NTASKS_PER_NODE");
  if (per_node == nullptr) per_node = getenv("SLURM_TASKS_PER_NODE");
  e.local_world_size = per_node ? leading_number(per_node) : 0;
  if (e.local_world_size <= 0) e.local_world_size = e.world_size;
  if (const char* nodes = getenv("SLURM_JOB_NODELIST")) {
    e.master_addr = expand_slurm_nodelist(nodes).front();
  }
  if (const char* job = getenv("SLURM_JOB_ID")) e.master_port = port_of_job(job, e.master_port);
}

}  // namespace

int port_of_job(std::string id, int fallback) {
  id = id.substr(0, id.find('.'));  // PBS: "1234.server"
  if (id.size() > 4) id = id.substr(id.size() - 4);
  return !id.empty() && is_digits(id) ? 15000 + std::atoi(id.c_str()) : fallback;
}

DistEnv read_dist_env(const GetEnv& getenv) {
  DistEnv e;
  const char* rank_var = "RANK";
  const char* size_var = "WORLD_SIZE";
  if (getenv("RANK") != nullptr && getenv("WORLD_SIZE") != nullptr) {
    read_torchrun(e, getenv);
  } else if (const MpiLauncher* mpi = mpi_launcher(getenv)) {
    read_mpi(e, *mpi, getenv);
    rank_var = mpi->rank;
    size_var = mpi->size;
  } else if (getenv("SLURM_PROCID") != nullptr && getenv("SLURM_NTASKS") != nullptr) {
    read_slurm(e, getenv);
    rank_var = "SLURM_PROCID";
    size_var = "SLURM_NTASKS";
  }
  if (const char* addr = getenv("MASTER_ADDR")) {
    UT_CHECK(*addr != '\0', "MASTER_ADDR is set but empty");
    e.master_addr = addr;
  }
  e.master_port = number(getenv, "MASTER_PORT", e.master_port);
  if (const char* file = getenv("UNITRAIN_STORE_FILE")) {
    UT_CHECK(*file != '\0', "UNITRAIN_STORE_FILE is set but empty");
    e.store_file = file;
  }
  check(e, rank_var, size_var);
  e.world_size_variable = size_var;
  return e;
}

DistEnv read_dist_env() {
  return read_dist_env([](const char* name) { return std::getenv(name); });
}

}  // namespace unitrain
