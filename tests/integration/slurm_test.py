"""A real Slurm on this machine (Debian's slurm-wlm and munge: munged, slurmctld and slurmd started
by the test from a slurm.conf of its own, stopped by their pids): `srun -n 2 unitrain train`
forms one group of 2 and ends bitwise equal to `unitrain launch --nproc-per-node 2`; the sbatch
scripts of docs/distributed.md, taken from the page and changed only for one node, this
machine's worker count, the binary, the config and the time limit: the one of a task per worker
gets Slurm's own time-limit SIGUSR1 mid-run, srun exits 75, the script requeues the job, and the
requeued job resumes and ends COMPLETED, bitwise equal to the uninterrupted run; the one of a
launcher per node trains a group of 2 to its end, bitwise equal too, and the launcher line under
the other script's header (srun keeps the job's tasks per node) is refused with the fix;
`scancel -s TERM` of a running job, `scontrol requeue` of it and its preemption by a job of a
higher-priority partition (PreemptMode=REQUEUE) do the same; SIGUSR1 sent to `srun -n 2` at
moments spread over the run's life is never fatal and the same command resumes bitwise. No
variable is set by hand: the workers read Slurm's."""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import torch

import common
from common import run, wait_for

CONFIG = """
run_dir: {run_dir}
seed: 5
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  loader: {{batch_size: 32, workers: 0, shuffle: true}}
optimizer: {{type: sgd, lr: 0.05, args: {{momentum: 0.9}}}}
train: {{max_length: {steps} steps, log_every: 5 steps, threads: 1}}
checkpoint: {{every: null}}
"""

SLURM_CONF = """
ClusterName=unitrain-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={port}
SlurmdPort={port_d}
AuthType=auth/munge
CredType=cred/munge
# A requeued job may start again once its credential has expired (121 s by default).
AuthInfo=socket={dir}/munge.socket,cred_expire=5
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=1
ReturnToService=2
JobRequeue=1
KillWait=10
MinJobAge=600
MailProg=/bin/true
# Preemption: a job of partition high takes the node from a job of partition low, which Slurm
# signals (SIGTERM at once, SIGKILL after GraceTime) and puts back in the queue.
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
PartitionName=low Nodes={host} MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=1 GraceTime=30
PartitionName=high Nodes={host} MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=2
"""


def tool(name):
    """The path of Slurm's or munge's program `name` (the daemons are in /usr/sbin, which a
    PATH may lack)."""
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    assert found, f"{name} is not installed (scripts/lib.sh installs slurm-wlm and munge)"
    return found


PER_WORKER = "one task per worker"
LAUNCHER = "one launcher per node"


def docs_sbatch_script(form):
    """docs/distributed.md's requeueing sbatch script of `form` (PER_WORKER or LAUNCHER), as
    written: the block after its `<!-- slurm-script: FORM ... -->` mark."""
    with open(os.path.join(common.SOURCE, "docs", "distributed.md")) as f:
        text = f.read()
    mark = r"<!-- slurm-script: " + re.escape(form) + r"\b[^\n]*-->\n+"
    block = re.search(mark + r"```bash\n(.*?)```", text, re.S)
    assert block, f"docs/distributed.md has no sbatch script marked '{form}'"
    return block.group(1)


def docs_launcher_script(nodes, nproc, train_args, out):
    """docs/distributed.md's script of one launcher per node, for `nodes` nodes of `nproc` workers
    running this test's binary with `train_args`; nothing else changed."""
    script = docs_sbatch_script(LAUNCHER)
    for old, new in (("--nodes=2", f"--nodes={nodes}"),
                     ("--output=unitrain-%j.out", f"--output={out}"),
                     ("unitrain launch --nproc-per-node 4",
                      f"{common.BIN} launch --nproc-per-node {nproc}"),
                     ("-- train run.yaml", "-- train " + " ".join(train_args))):
        assert old in script, (old, script)
        script = script.replace(old, new)
    return script


class Slurm(common.Case):
    cluster = None  # the folder of the running cluster
    pids = []

    @classmethod
    def setUpClass(cls):
        for name in ("srun", "sbatch", "scontrol", "scancel", "sinfo"):
            tool(name)
        import tempfile
        cls.cluster = tempfile.mkdtemp(prefix="unitrain-slurm-")
        d = cls.cluster
        for sub in ("state", "spool"):
            os.makedirs(os.path.join(d, sub))
        with open(os.path.join(d, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(d, "munge.key"), 0o600)
        port = 26800 + os.getpid() % 90 * 2
        common.write(os.path.join(d, "slurm.conf"), SLURM_CONF.format(
            host=socket.gethostname(), port=port, port_d=port + 1, dir=d,
            cpus=len(os.sched_getaffinity(0))))
        os.environ["SLURM_CONF"] = os.path.join(d, "slurm.conf")
        subprocess.run([tool("munged"), "--force", f"--socket={d}/munge.socket",
                        f"--key-file={d}/munge.key", f"--pid-file={d}/munged.pid",
                        f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed"], check=True)
        subprocess.run([tool("slurmctld"), "-f", os.environ["SLURM_CONF"]], check=True)
        subprocess.run([tool("slurmd"), "-f", os.environ["SLURM_CONF"]], check=True)
        up = wait_for(lambda: "idle" in subprocess.run(["sinfo", "-h", "-o", "%T"],
                                                       capture_output=True, text=True).stdout,
                      timeout=60, interval=0.5)
        assert up, "the test's Slurm did not come up: " + cls.log("slurmctld") + cls.log("slurmd")

    @classmethod
    def log(cls, name):
        try:
            with open(os.path.join(cls.cluster, name + ".log")) as f:
                return f"\n{name}.log:\n" + f.read()[-3000:]
        except OSError:
            return f"\n(no {name}.log)"

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True)
        for name in ("slurmd", "slurmctld", "munged"):
            try:
                with open(os.path.join(cls.cluster, name + ".pid")) as f:
                    pid = int(f.read().strip())
                os.kill(pid, signal.SIGTERM)
                wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20, interval=0.1)
            except (OSError, ValueError):
                pass
        shutil.rmtree(cls.cluster, ignore_errors=True)

    def config(self, name, steps):
        data = os.path.join(self.dir, "digits.csv")
        if not os.path.exists(data):
            import gzip
            with gzip.open(common.DIGITS, "rt") as f:
                common.write(data, "".join(f.readlines()[:640]))
        run_dir = os.path.join(self.dir, name)
        cfg = common.write(os.path.join(self.dir, name + ".yaml"),
                           CONFIG.format(run_dir=run_dir, data=data, steps=steps))
        return cfg, run_dir

    def weights(self, run_dir):
        return self.final_weights(run_dir, "--plugin", common.test_plugin())

    def assert_same(self, a, b):
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), k)

    def launched(self, steps, slow_ms):
        """The uninterrupted run: `unitrain launch --nproc-per-node 2`."""
        cfg, run_dir = self.config("launched", steps)
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port",
                         str(29700 + os.getpid() % 50), "--", "train", cfg]
                        + common.slow_steps(slow_ms))
        self.assertEqual(code, 0, out)
        return self.weights(run_dir)

    def job(self, job_id):
        """`scontrol show job`'s fields of `job_id`."""
        out = subprocess.run(["scontrol", "show", "job", str(job_id)], capture_output=True,
                             text=True).stdout
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def submit(self, script):
        path = common.write(os.path.join(self.dir, "job.sh"), script)
        out = subprocess.run(["sbatch", path], capture_output=True, text=True, check=True).stdout
        return int(out.split()[-1])

    def wait_until_done(self, job_id, timeout):
        ended = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
        self.assertTrue(wait_for(lambda: self.job(job_id).get("JobState") in ended,
                                 timeout=timeout, interval=1),
                        f"job {job_id}: {self.job(job_id)}" + self.log("slurmctld"))
        return self.job(job_id)

    def running_job(self, cfg, run_dir, out, extra=""):
        """docs/distributed.md's script submitted with a time limit that never comes (`extra`:
        more #SBATCH lines), once its run has logged twice; its job id."""
        script = self.docs_script(cfg, out, time_limit="30", signal_at="USR1@60")
        if extra:
            script = script.replace("#SBATCH --job-name=unitrain", "#SBATCH --job-name=unitrain\n" + extra)
        job_id = self.submit(script)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(metrics) and
                                 len(common.read_jsonl(metrics)) >= 2, timeout=120),
                        self.log("slurmctld"))
        return job_id

    def docs_script(self, cfg, out, time_limit="1", signal_at="USR1@50", slow_ms=300):
        """docs/distributed.md's script on this one-node cluster: 2 tasks, a short time limit,
        this test's binary and config; nothing else changed."""
        script = docs_sbatch_script(PER_WORKER)
        for old, new in (("--nodes=2", "--nodes=1"), ("--ntasks-per-node=4", "--ntasks-per-node=2"),
                         ("--time=04:00:00", f"--time={time_limit}"),
                         ("--signal=USR1@120", f"--signal={signal_at}"),
                         ("--output=unitrain-%j.out", f"--output={out}"),
                         ("srun unitrain train run.yaml",
                          "srun " + " ".join([common.BIN, "train", cfg]
                                             + [f"'{w}'" for w in common.slow_steps(slow_ms)]))):
            self.assertIn(old, script)
            script = script.replace(old, new)
        return script

    def test_srun_forms_one_group_equal_to_launch(self):
        full = self.launched(40, 0)
        cfg, run_dir = self.config("srun", 40)
        p = subprocess.run(["srun", "-n", "2", common.BIN, "train", cfg], capture_output=True,
                           text=True, timeout=300)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("data parallel: rank 0 of 2 (slurm via", out)
        self.assert_same(full, self.weights(run_dir))

    def test_the_docs_script_requeues_on_slurms_time_limit_signal_and_resumes_exactly(self):
        # 150 steps of 300 ms: 45 s of training, past the time-limit signal (sent 50 s before
        # the 1-minute limit, up to ~30 s late by slurmctld's clock).
        full = self.launched(150, 0)
        cfg, run_dir = self.config("time-limit", 150)
        out = os.path.join(self.dir, "job.out")
        job_id = self.submit(self.docs_script(cfg, out))
        job = self.wait_until_done(job_id, 300)
        with open(out) as f:
            log = f.read()
        self.assertEqual(job["JobState"], "COMPLETED", log)
        self.assertGreaterEqual(int(job["Restarts"]), 1, log)
        self.assertIn("data parallel: rank 0 of 2 (slurm via", log)
        self.assertIn("stopped by SIGUSR1: checkpoint saved; exit 75", log)
        self.assertIn("resumed from", log)
        self.assertNotIn("signal 10", log)  # no task died of it
        self.assert_same(full, self.weights(run_dir))

    def test_the_docs_launcher_script_trains_a_group_of_all_the_workers(self):
        cfg, run_dir = self.config("launcher", 40)
        # Its srun line under the other script's header (2 tasks per node), as the page once had
        # it: srun keeps the job's 2 tasks, and each launcher refuses with the fix.
        p = subprocess.run(["salloc", "--nodes=1", "--ntasks-per-node=2", "srun",
                            "--ntasks-per-node=1", common.BIN, "launch", "--nproc-per-node", "2",
                            "--", "train", cfg], capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        self.assertNotEqual(p.returncode, 0, out)
        self.assertIn("srun started 2 tasks on 1 node(s)", out)
        self.assertIn("the job asks for 2 tasks per node", out)
        self.assertIn("#SBATCH --ntasks-per-node=1", out)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "metrics.jsonl")), out)
        # The script as written, on one node of 2 workers.
        full = self.launched(40, 0)
        log_path = os.path.join(self.dir, "launcher.out")
        job = self.wait_until_done(self.submit(docs_launcher_script(1, 2, [cfg], log_path)), 180)
        with open(log_path) as f:
            log = f.read()
        self.assertEqual(job["JobState"], "COMPLETED", log)
        self.assertIn("launch: machine 0 of 1, rendezvous at", log)
        self.assertIn("data parallel: rank 0 of 2 (", log)
        self.assert_same(full, self.weights(run_dir))

    def check_stopped_job_requeues_and_resumes_exactly(self, name, stop, extra=""):
        """docs/distributed.md's script running; `stop(job_id)` makes Slurm send it SIGTERM:
        the tasks save and exit 75, the job is queued again, resumes and ends COMPLETED
        bitwise equal to the uninterrupted run."""
        full = self.launched(60, 0)
        cfg, run_dir = self.config(name, 60)
        out = os.path.join(self.dir, "job.out")
        job_id = self.running_job(cfg, run_dir, out, extra)
        stop(job_id)
        job = self.wait_until_done(job_id, 180)
        with open(out) as f:
            log = f.read()
        self.assertEqual(job["JobState"], "COMPLETED", log)
        self.assertGreaterEqual(int(job["Restarts"]), 1, log)
        self.assertIn("stopped by SIGTERM: checkpoint saved; exit 75", log)
        self.assertIn("resumed from", log)
        self.assert_same(full, self.weights(run_dir))

    def test_scancel_sigterm_of_a_running_job_requeues_and_resumes_exactly(self):
        self.check_stopped_job_requeues_and_resumes_exactly("scancel", lambda job: subprocess.run(
            ["scancel", "--signal=TERM", str(job)], check=True))

    def test_scontrol_requeue_of_a_running_job_resumes_exactly(self):
        # Slurm sends the job's steps SIGTERM (SIGKILL KillWait = 10 s later) and queues it again.
        self.check_stopped_job_requeues_and_resumes_exactly("requeue", lambda job: subprocess.run(
            ["scontrol", "requeue", str(job)], check=True))

    def test_preemption_by_a_higher_priority_partition_requeues_and_resumes_exactly(self):
        def preempt(job):
            # A job that needs the whole node: Slurm preempts the low one (SIGTERM, requeue).
            high = subprocess.run(["sbatch", "--partition=high", "--exclusive",
                                   "--output=/dev/null", "--wrap", "sleep 2"],
                                  capture_output=True, text=True, check=True)
            high_id = int(high.stdout.split()[-1])
            self.assertEqual(self.wait_until_done(high_id, 120)["JobState"], "COMPLETED",
                             self.log("slurmctld"))
        self.check_stopped_job_requeues_and_resumes_exactly("preempted", preempt,
                                                            "#SBATCH --partition=low")

    def test_slurms_signal_at_any_moment_of_the_tasks_is_never_fatal(self):
        # `scancel --signal=USR1` (Slurm's slurmd signals the tasks, as its --signal does) from
        # the moment the tasks exist to their end: srun returns 75 (saved) or 0 (done), never
        # death by the signal, and the same command resumes bitwise.
        full = self.launched(30, 50)
        outcomes = []
        for i, at in enumerate((0.0, 0.3, 1.0, 2.5)):
            cfg, run_dir = self.config(f"srun-signal-{i}", 30)
            cmd = ["srun", "-n", "2", common.BIN, "train", cfg] + common.slow_steps(50)
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            job = []
            self.assertTrue(wait_for(lambda: job.extend(self.job_of_task(cfg)) or job,
                                     timeout=60, interval=0.002), "no task started")
            time.sleep(at)
            sent = subprocess.run(["scancel", "--signal=USR1", job[0]],
                                  capture_output=True, text=True)
            out = p.communicate(timeout=120)[0]
            if sent.returncode != 0:
                # The late delays can land after the job's end on a fast machine: then
                # Slurm refuses the signal ("Invalid job id") and the run must have ended well.
                self.assertEqual(p.returncode, 0, f"scancel: {sent.stderr}\n{out}")
                outcomes.append(f"{at} s: ended before it")
            else:
                outcomes.append(f"{at} s: {p.returncode}")
            self.assertIn(p.returncode, (0, 75), f"SIGUSR1 {at} s after the tasks started:\n{out}")
            if p.returncode == 75:
                again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
            self.assert_same(full, self.weights(run_dir))
        print("srun -n 2, Slurm's SIGUSR1 at: " + ", ".join(outcomes))
        # The sweep is only a sweep if the signal reached most of the runs.
        self.assertLessEqual(sum("ended before" in o for o in outcomes), 1, outcomes)

    @staticmethod
    def job_of_task(cfg):
        """[SLURM_JOB_ID] of a running task whose command line names `cfg`, or []."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                if cfg.encode() not in argv or argv[0].endswith(b"srun"):
                    continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            except OSError:
                continue
            if b"SLURM_STEP_ID" in env and b"SLURM_JOB_ID" in env:
                return [env[b"SLURM_JOB_ID"].decode()]
        return []


if __name__ == "__main__":
    common.main()
