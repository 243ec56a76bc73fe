"""Models bigger than one process, with the real binary: examples/zero3_memory/run.sh gives each
of 4 workers a memory cgroup of 1000 MB (cgroup v1 here; run as root) and trains a 56.9M-parameter
transformer whose weights, gradients and Adam moments (910 MB) do not fit in one: plain data
parallelism is killed by the OOM killer, distributed.zero: 3 trains. (A smaller model would leave
too little room between the two: a worker's LibTorch alone is ~200 MB.)"""
import os
import re
import subprocess

import torch

import common


class Zero3Memory(common.Case):
    def test_plain_data_parallel_is_killed_and_zero3_trains_under_the_limit(self):
        prepare = os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")
        subprocess.run([prepare], check=True, cwd=common.SOURCE, capture_output=True)
        env = dict(os.environ, UNITRAIN_BIN=common.BIN, UNITRAIN_RUNS=self.dir,
                   UNITRAIN_PORT="29797")
        p = subprocess.run([os.path.join(common.SOURCE, "examples/zero3_memory/run.sh")],
                           capture_output=True, text=True, env=env, timeout=900)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("memory.limit_in_bytes 1048576000", out)  # each worker limited
        self.assertIn("distributed.zero: 0: exit code 137", out)  # the killed worker's status
        self.assertIn("exited with status 137", out)  # killed by the kernel (SIGKILL)
        self.assertIn("distributed.zero: 3: exit code 0", out)
        self.assertRegex(out, r"\[rank 0\] done: 4 steps")
        self.assertRegex(out, r"parameters on rank 0: \d+ bytes of 227604864")
        left = [d for d in os.listdir("/sys/fs/cgroup/memory") if d.startswith("unitrain-worker")]
        self.assertEqual(left, [])  # every worker's cgroup removed

    def test_a_model_cut_over_tp_2_x_pp_2_trains_inside_the_limit(self):
        # The same model, whose state no worker can hold whole (plain data parallelism is killed
        # above), cut over 4 workers: 2 pipeline stages of 2-process tensor groups. Each holds a
        # quarter of the parameters and of Adam's moments; its checkpoints (the whole model,
        # gathered to process 0) are written inside the limit too.
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       cwd=common.SOURCE, capture_output=True)
        out = self.train_within(os.path.join(self.dir, "cut"), 4, 4, 29881, True,
                                "--distributed.zero", "0", "--distributed.tensor_parallel", "2",
                                "--distributed.pipeline_parallel", "2",
                                "--train.accumulation_steps", "2")
        self.assertEqual(out.count("memory.limit_in_bytes 1048576000"), 4, out)
        whole = 227604864  # 56.9M float32 parameters
        logs = out
        for name in os.listdir(os.path.join(self.dir, "cut", "logs")):
            with open(os.path.join(self.dir, "cut", "logs", name)) as f:
                logs += f.read()
        held = [int(m) for m in re.findall(r"parameters held: (\d+) bytes", logs)]
        state = [int(m) for m in re.findall(r"optimizer state on rank \d+: (\d+) bytes", logs)]
        self.assertEqual(len(held), 4, logs)
        self.assertEqual(len(state), 4, logs)
        for n in held:
            self.assertLess(abs(n / whole - 0.25), 0.01, n)
        for n in state:  # Adam's two moments of a quarter
            self.assertLess(abs(n / (2 * whole) - 0.25), 0.01, n)

    def train_within(self, run_dir, workers, steps, port, limited=True, *more):
        """`workers` workers of examples/zero3_memory/lm.yaml with ZeRO 3 and checkpoints, each
        in a 1000 MB cgroup (limited) or not, trained (or resumed) to `steps` steps."""
        wrap = ["--exec", "--", os.path.join(common.SOURCE, "examples/zero3_memory/limited.sh"),
                common.BIN] if limited else ["--"]
        env = dict(os.environ, UNITRAIN_WORKER_MEMORY="1000M")
        p = subprocess.run([common.BIN, "launch", "--nproc-per-node", str(workers),
                            "--master-port", str(port)] + wrap +
                           ["train", "examples/zero3_memory/lm.yaml", "--run_dir", run_dir,
                            "--data.loader.batch_size", "3", "--checkpoint.enabled", "true",
                            "--train.max_length", f"{steps} steps"] + list(more),
                           capture_output=True, text=True, env=env, cwd=common.SOURCE, timeout=900)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)  # an OOM kill: the launcher says signal 9 / 137
        self.assertIn(f"done: {steps} steps", out)
        return out

    def test_a_checkpoint_of_4_workers_resumes_on_2_4_and_3_inside_the_limit(self):
        # The global batch of 12 (3 a worker on 4) is kept on 2 (accumulation 2) and 3 (4 a
        # worker); each worker re-cuts its parts from the byte ranges it owns.
        subprocess.run([os.path.join(common.SOURCE, "examples/moby_dick/prepare.sh")], check=True,
                       cwd=common.SOURCE, capture_output=True)
        runs = {}
        for limited in (True, False):
            run_dir = os.path.join(self.dir, "limited" if limited else "free")
            for steps, workers in enumerate((4, 2, 4, 3), 1):
                out = self.train_within(run_dir, workers, steps, 29870 + steps, limited)
                if limited:
                    self.assertIn("memory.limit_in_bytes 1048576000", out)
                if steps > 1:
                    self.assertIn(f"resuming on {workers} process(es)", out)
            runs[limited] = self.final_weights(run_dir)
        for name, t in runs[False].items():
            self.assertTrue(torch.allclose(runs[True][name], t, rtol=0, atol=1e-6), name)
        # A fresh start on 2 workers: the whole model is built, then cut, inside the limit.
        self.train_within(os.path.join(self.dir, "two"), 2, 1, 29879)


if __name__ == "__main__":
    common.main()
