"""A real Slurm of two machines: two slurmd's, each in its own network namespace with its own host
name (the veth pair of common.Machines; the node names resolve through each one's /etc/hosts, as
a cluster's DNS would), slurmctld beside the first. docs/distributed.md's sbatch script of
`unitrain launch` once per node (its machines from the Slurm step), as written but for 1 worker a
node: a worker killed -9 on the second machine, both launchers restart their workers, the job
ends COMPLETED with weights bitwise equal to an uninterrupted run. No variable is set by hand."""
import os
import re
import signal
import subprocess
import tempfile
import time

import torch

import common
from common import run, wait_for
import slurm_test
from slurm_test import tool

def slurm_conf():
    """slurm_test's cluster settings, for two nodes: slurmctld on the first, and each slurmd's
    spool, pid and log files apart (%n: its node name)."""
    conf = slurm_test.SLURM_CONF[:slurm_test.SLURM_CONF.index("# Preemption")]
    for old, new in (("SlurmctldHost={host}(127.0.0.1)", "SlurmctldHost={n0}({a0})"),
                     ("ClusterName=unitrain-test", "ClusterName=unitrain-two"),
                     ("{dir}/spool", "{dir}/spool-%n"), ("{dir}/slurmd.pid", "{dir}/slurmd-%n.pid"),
                     ("{dir}/slurmd.log", "{dir}/slurmd-%n.log")):
        assert old in conf, old
        conf = conf.replace(old, new)
    return conf + """NodeName={n0} NodeAddr={a0} CPUs={cpus} State=UNKNOWN
NodeName={n1} NodeAddr={a1} CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={n0},{n1} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


class SlurmTwoMachines(common.Case):
    def in_machine(self, machines, node, argv, **kw):
        """`argv` on machine `node`: its network namespace, a host name and /etc/hosts of its own
        (`ip netns exec` would remount /sys, where slurmd needs the cgroup file systems)."""
        script = (f"mount --bind {self.cluster}/hosts /etc/hosts && hostname {self.names[node]} "
                  "&& exec \"$@\"")
        return subprocess.run(["nsenter", f"--net=/run/netns/{machines.namespaces[node]}",
                               "unshare", "--uts", "--mount", "sh", "-c", script, "sh"] + argv,
                              **kw)

    def start_cluster(self, machines):
        d = self.cluster = tempfile.mkdtemp(prefix="unitrain-slurm2-")
        tag = str(os.getpid() % 100000)
        self.names = [f"ut{tag}n0", f"ut{tag}n1"]
        os.makedirs(os.path.join(d, "state"))
        with open(os.path.join(d, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(d, "munge.key"), 0o600)
        common.write(os.path.join(d, "hosts"), "127.0.0.1 localhost\n" + "".join(
            f"{a} {n}\n" for a, n in zip(machines.addrs, self.names)))
        port = 26900 + os.getpid() % 45 * 2
        self.conf = common.write(os.path.join(d, "slurm.conf"), slurm_conf().format(
            n0=self.names[0], n1=self.names[1], a0=machines.addrs[0], a1=machines.addrs[1],
            port=port, port_d=port + 1, dir=d, cpus=len(os.sched_getaffinity(0))))
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        subprocess.run([tool("munged"), "--force", f"--socket={d}/munge.socket",
                        f"--key-file={d}/munge.key", f"--pid-file={d}/munged.pid",
                        f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed"], check=True)
        self.in_machine(machines, 0, [tool("slurmctld"), "-f", self.conf], check=True, env=self.env)
        for node in (0, 1):
            self.in_machine(machines, node, [tool("slurmd"), "-N", self.names[node], "-f",
                                             self.conf], check=True, env=self.env)
        up = wait_for(lambda: self.client(machines, ["sinfo", "-h", "-o", "%T"]).stdout.split()
                      == ["idle"], timeout=60, interval=0.5)
        self.assertTrue(up, self.logs())

    def client(self, machines, argv):
        """A Slurm command run on machine 0."""
        return self.in_machine(machines, 0, argv, capture_output=True, text=True, env=self.env)

    def logs(self):
        out = ""
        for name in ("slurmctld", f"slurmd-{self.names[0]}", f"slurmd-{self.names[1]}"):
            try:
                with open(os.path.join(self.cluster, name + ".log")) as f:
                    out += f"\n{name}.log:\n" + f.read()[-2000:]
            except OSError:
                out += f"\n(no {name}.log)"
        return out

    def stop_cluster(self, machines):
        self.client(machines, ["scancel", "--full", "-u", "root"])
        for name in ("slurmd-" + self.names[0], "slurmd-" + self.names[1], "slurmctld", "munged"):
            try:
                with open(os.path.join(self.cluster, name + ".pid")) as f:
                    pid = int(f.read().strip())
                os.kill(pid, signal.SIGTERM)
                wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20, interval=0.1)
            except (OSError, ValueError):
                pass

    def config(self, name):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            import gzip
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:640]))
        run_dir = os.path.join(self.dir, name)
        return common.write(os.path.join(self.dir, name + ".yaml"), slurm_test.CONFIG.format(
            run_dir=run_dir, data=data, steps=40)), run_dir

    def test_a_worker_killed_on_the_second_machine_restarts_both_and_the_job_completes_exactly(self):
        ref_cfg, ref_dir = self.config("uninterrupted")
        code, out = run(["launch", "--nproc-per-node", "2", "--", "train", ref_cfg])
        self.assertEqual(code, 0, out)
        cfg, run_dir = self.config("two-machines")
        with common.Machines(self, "10.81.0") as machines:
            self.start_cluster(machines)
            try:
                script = slurm_test.docs_launcher_script(
                    2, 1, [cfg, "--checkpoint.every", "'5 steps'", "--distributed.timeout", "20"]
                    + [f"'{w}'" for w in common.slow_steps(150)], f"{self.dir}/job.out")
                path = common.write(os.path.join(self.dir, "job.sh"), script)
                sub = self.client(machines, ["sbatch", path])
                self.assertEqual(sub.returncode, 0, sub.stderr)
                job_id = sub.stdout.split()[-1]
                ckpt = os.path.join(run_dir, "checkpoints", "step-10")
                self.assertTrue(wait_for(lambda: os.path.exists(ckpt), timeout=120),
                                self.logs())
                pid = common.pid_of_rank(1, cfg)
                self.assertIsNotNone(pid)
                os.kill(pid, signal.SIGKILL)
                ended = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL")
                state = {}

                def done():
                    out = self.client(machines, ["scontrol", "show", "job", job_id]).stdout
                    state.update(re.findall(r"(\w+)=(\S*)", out))
                    return state.get("JobState") in ended
                self.assertTrue(wait_for(done, timeout=240, interval=1), self.logs())
                with open(os.path.join(self.dir, "job.out")) as f:
                    log = f.read()
                self.assertEqual(state["JobState"], "COMPLETED", log)
                self.assertIn(f"launch: machine 1 of 2, rendezvous at {self.names[0]}:", log)
                self.assertIn("restarting the workers (restart 1 of", log)
                self.assertIn("killed by signal 9", log)
            finally:
                self.stop_cluster(machines)
        a = self.final_weights(ref_dir)
        b = self.final_weights(run_dir, "--plugin", common.test_plugin())
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)


if __name__ == "__main__":
    common.main()
