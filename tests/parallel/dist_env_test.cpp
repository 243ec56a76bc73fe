#include "unitrain/parallel/dist_env.h"

#include <gtest/gtest.h>

#include <map>

#include "test_util.h"
#include "unitrain/core/error.h"

namespace unitrain {
namespace {

using test::contains;
using test::error_of;
using Vars = std::map<std::string, std::string>;

DistEnv read(const Vars& vars) {
  return read_dist_env([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(DistEnv, NothingSetIsOneProcess) {
  DistEnv e = read({});
  EXPECT_EQ(e.launcher, "none");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_FALSE(e.distributed());
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(DistEnv, TorchrunVariables) {
  DistEnv e = read({{"RANK", "5"},
                    {"WORLD_SIZE", "8"},
                    {"LOCAL_RANK", "1"},
                    {"LOCAL_WORLD_SIZE", "4"},
                    {"MASTER_ADDR", "10.0.0.1"},
                    {"MASTER_PORT", "29400"},
                    {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                    {"TORCHELASTIC_RESTART_COUNT", "2"},
                    {"OMPI_COMM_WORLD_RANK", "3"}});  // torchrun's win
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 29400);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.restart_count, 2);
  EXPECT_TRUE(e.distributed());
  EXPECT_FALSE(read({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "h"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "False"}})
                   .agent_store);
  EXPECT_EQ(read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).restart_count, 0);
}

TEST(DistEnv, OpenMpiVariables) {
  DistEnv e = read({{"OMPI_COMM_WORLD_RANK", "1"},
                    {"OMPI_COMM_WORLD_SIZE", "2"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(e.launcher, "openmpi");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "127.0.0.1");  // all ranks on this machine
  // Ranks on several machines need the address of rank 0's.
  const std::string m = error_of<ConfigError>([] {
    read({{"OMPI_COMM_WORLD_RANK", "1"},
          {"OMPI_COMM_WORLD_SIZE", "4"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  });
  EXPECT_TRUE(contains(m, "MASTER_ADDR")) << m;
  EXPECT_EQ(read({{"OMPI_COMM_WORLD_RANK", "1"},
                  {"OMPI_COMM_WORLD_SIZE", "4"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                  {"MASTER_ADDR", "node0"}})
                .master_addr,
            "node0");
}

TEST(DistEnv, MpichHydraVariables) {
  // What MPICH's mpiexec (hydra) gives each rank (Intel MPI's is the same).
  DistEnv e = read({{"PMI_RANK", "1"},
                    {"PMI_SIZE", "2"},
                    {"PMI_FD", "8"},
                    {"MPI_LOCALRANKID", "1"},
                    {"MPI_LOCALNRANKS", "2"}});
  EXPECT_EQ(e.launcher, "mpich");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  const std::string m = error_of<ConfigError>([] {
    read(
        {{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  });
  EXPECT_TRUE(contains(m, "mpiexec runs ranks on several machines but MASTER_ADDR is not set"))
      << m;
  EXPECT_TRUE(contains(error_of<ConfigError>([] {
                         read({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}});
                       }),
                       "PMI_RANK=2"));
  // mpiexec inside a Slurm batch script: the ranks inherit the batch step's SLURM_PROCID=0 of
  // SLURM_NTASKS=1, and are MPICH's ranks.
  e = read({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(e.launcher, "mpich");
  EXPECT_EQ(e.rank, 1);
  // srun --mpi=pmi2 sets PMI_RANK to Slurm's own rank: Slurm's, with its master and port.
  e = read({{"PMI_RANK", "1"},
            {"PMI_SIZE", "2"},
            {"SLURM_PROCID", "1"},
            {"SLURM_NTASKS", "2"},
            {"SLURM_JOB_NODELIST", "n[1-2]"},
            {"SLURM_JOB_ID", "77"}});
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.master_addr, "n1");
}

TEST(DistEnv, CrayPalsVariables) {
  // Cray MPICH's mpiexec under PALS (PBS on HPE Cray systems), two nodes of two ranks.
  DistEnv e = read({{"PALS_RANKID", "3"},
                    {"PMI_RANK", "3"},
                    {"PMI_SIZE", "4"},
                    {"PALS_LOCAL_RANKID", "1"},
                    {"PALS_LOCAL_SIZE", "2"},
                    {"PALS_NODEID", "1"},
                    {"MASTER_ADDR", "x1000c0s0b0n0"}});
  EXPECT_EQ(e.launcher, "cray-pals");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "x1000c0s0b0n0");
  EXPECT_TRUE(contains(error_of<ConfigError>([] {
                         read({{"PALS_RANKID", "3"},
                               {"PMI_SIZE", "4"},
                               {"PALS_LOCAL_RANKID", "1"},
                               {"PALS_LOCAL_SIZE", "2"}});
                       }),
                       "MASTER_ADDR is not set"));
}

TEST(DistEnv, MvapichAndLsfJsrunVariables) {
  DistEnv e = read({{"MV2_COMM_WORLD_RANK", "2"},
                    {"MV2_COMM_WORLD_SIZE", "4"},
                    {"MV2_COMM_WORLD_LOCAL_RANK", "0"},
                    {"MV2_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"MASTER_ADDR", "node1"}});
  EXPECT_EQ(e.launcher, "mvapich");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.local_world_size, 2);
  // jsrun (LSF, Spectrum MPI) sets Open MPI's variables too: named for itself.
  e = read({{"JSM_NAMESPACE_RANK", "5"},
            {"JSM_NAMESPACE_SIZE", "12"},
            {"JSM_NAMESPACE_LOCAL_RANK", "5"},
            {"JSM_NAMESPACE_LOCAL_SIZE", "6"},
            {"OMPI_COMM_WORLD_RANK", "5"},
            {"OMPI_COMM_WORLD_SIZE", "12"},
            {"MASTER_ADDR", "h41n01"}});
  EXPECT_EQ(e.launcher, "lsf-jsrun");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 12);
  EXPECT_EQ(e.local_world_size, 6);
  EXPECT_TRUE(contains(error_of<ConfigError>([] {
                         read({{"JSM_NAMESPACE_RANK", "5"},
                               {"JSM_NAMESPACE_SIZE", "12"},
                               {"JSM_NAMESPACE_LOCAL_RANK", "5"},
                               {"JSM_NAMESPACE_LOCAL_SIZE", "6"}});
                       }),
                       "jsrun -E MASTER_ADDR=<host>"));
}

TEST(DistEnv, PbsNodeFileGivesTheMastersAddressAndTheJobItsPort) {
  // Cray MPICH's mpiexec under PBS Pro, as on Polaris: no MASTER_ADDR needed.
  const std::string nodes = test::write_file(test::temp_dir() + "/nodefile",
                                             "x3004c0s7b0n0.hsn.cm.polaris\n"
                                             "x3004c0s7b0n0.hsn.cm.polaris\n"
                                             "x3004c0s13b1n0.hsn.cm.polaris\n");
  const Vars pals = {{"PALS_RANKID", "3"},       {"PMI_SIZE", "4"},
                     {"PALS_LOCAL_RANKID", "1"}, {"PALS_LOCAL_SIZE", "2"},
                     {"PBS_NODEFILE", nodes},    {"PBS_JOBID", "1234567.polaris-pbs-01"}};
  DistEnv e = read(pals);
  EXPECT_EQ(e.launcher, "cray-pals");
  EXPECT_EQ(e.master_addr, "x3004c0s7b0n0.hsn.cm.polaris");
  EXPECT_EQ(e.master_port, 15000 + 4567);
  Vars given = pals;
  given["MASTER_ADDR"] = "other";
  given["MASTER_PORT"] = "29555";
  e = read(given);  // the user's own win
  EXPECT_EQ(e.master_addr, "other");
  EXPECT_EQ(e.master_port, 29555);
  Vars missing = pals;
  missing["PBS_NODEFILE"] = test::temp_dir() + "/none";
  EXPECT_TRUE(
      contains(error_of<ConfigError>([&] { read(missing); }), "cannot read the job's node file"));
  Vars empty = pals;
  empty["PBS_NODEFILE"] = test::write_file(test::temp_dir() + "/empty", "\n");
  EXPECT_TRUE(contains(error_of<ConfigError>([&] { read(empty); }), "names no host"));
}

TEST(DistEnv, SlurmVariables) {
  DistEnv e = read({{"SLURM_PROCID", "3"},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_NTASKS_PER_NODE", "2(x2)"},
                    {"SLURM_JOB_NODELIST", "gpu[07-08]"},
                    {"SLURM_JOB_ID", "4711234"}});
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "gpu07");
  EXPECT_EQ(e.master_port, 15000 + 1234);
  // MASTER_ADDR / MASTER_PORT win.
  DistEnv o = read({{"SLURM_PROCID", "0"},
                    {"SLURM_NTASKS", "2"},
                    {"SLURM_JOB_NODELIST", "a,b"},
                    {"MASTER_ADDR", "b"},
                    {"MASTER_PORT", "4000"}});
  EXPECT_EQ(o.master_addr, "b");
  EXPECT_EQ(o.master_port, 4000);
  EXPECT_EQ(o.local_world_size, 2);
}

TEST(DistEnv, MalformedVariablesNameTheVariable) {
  const std::vector<std::pair<Vars, std::string>> cases = {
      {{{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}, "RANK='x'"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}, "RANK=2"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"MASTER_ADDR", "h"}}, "WORLD_SIZE"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}}, "MASTER_ADDR"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
       "MASTER_PORT=70000"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "-1"}},
       "MASTER_PORT='-1'"},
      {{{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "OMPI_COMM_WORLD_RANK=4"},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-"}},
       "SLURM_JOB_NODELIST"},
  };
  for (const auto& [vars, want] : cases) {
    const std::string m = error_of<ConfigError>([&vars = vars] { read(vars); });
    EXPECT_TRUE(contains(m, want)) << want << " | " << m;
  }
}

TEST(DistEnv, SlurmNodeLists) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_slurm_nodelist("node1"), V{"node1"});
  EXPECT_EQ(expand_slurm_nodelist("node[01-03,7],login1"),
            (V{"node01", "node02", "node03", "node7", "login1"}));
  EXPECT_EQ(expand_slurm_nodelist("a[9-11]-ib"), (V{"a9-ib", "a10-ib", "a11-ib"}));
  EXPECT_EQ(expand_slurm_nodelist("x[1],y[2-3]"), (V{"x1", "y2", "y3"}));
  for (const std::string bad : {"", "n[1-", "n[a-b]", "n[3-1]", "n[]"}) {
    const std::string m = error_of<ConfigError>([&] { expand_slurm_nodelist(bad); });
    EXPECT_TRUE(contains(m, "'" + bad + "'")) << m;
  }
}

TEST(DistEnv, StoreFileAndOneMachine) {
  DistEnv e = read({{"RANK", "1"},
                    {"WORLD_SIZE", "2"},
                    {"LOCAL_RANK", "1"},
                    {"LOCAL_WORLD_SIZE", "2"},
                    {"MASTER_ADDR", "127.0.0.1"},
                    {"UNITRAIN_STORE_FILE", "/tmp/unitrain-rendezvous-x/store"}});
  EXPECT_EQ(e.store_file, "/tmp/unitrain-rendezvous-x/store");
  EXPECT_TRUE(e.one_machine());
  EXPECT_EQ(read({}).store_file, "");
  EXPECT_FALSE(read({{"RANK", "5"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "10.0.0.1"}})
                   .one_machine());
  const std::string m = error_of<ConfigError>([] { read({{"UNITRAIN_STORE_FILE", ""}}); });
  EXPECT_TRUE(contains(m, "UNITRAIN_STORE_FILE is set but empty")) << m;
}

}  // namespace
}  // namespace unitrain
