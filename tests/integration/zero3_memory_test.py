"""Models bigger than one process, with the real binary: examples/zero3_memory/run.sh gives each
of 4 workers a memory cgroup of 1000 MB (cgroup v1 here; run as root) and trains a 56.9M-parameter
transformer whose weights, gradients and Adam moments (910 MB) do not fit in one: plain data
parallelism is killed by the OOM killer, distributed.zero: 3 trains. (A smaller model would leave
too little room between the two: a worker's LibTorch alone is ~200 MB.)"""
import os
import subprocess

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


if __name__ == "__main__":
    common.main()
