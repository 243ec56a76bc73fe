"""`unitrain launch` as a user runs it: variables, prefixed output, logs, signals, failures."""
import os
import re
import signal
import subprocess
import time

import common
from common import run


MLP_DIGITS = """
run_dir: %s
model: {type: mlp, args: {sizes: [64, 16, 10]}}
objective: {losses: [{type: cross_entropy}], metrics: [{type: accuracy}]}
data:
  train: {type: csv, args: {path: %s, header: false, target: "64"}}
  loader: {batch_size: 64, workers: 0}
train: {max_length: 1 epoch}
"""


class Launch(common.Case):
    def start(self, *args):
        return subprocess.Popen([common.BIN, "launch"] + list(args), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def test_sigterm_is_forwarded_and_its_status_returned(self):
        logs = os.path.join(self.dir, "logs")
        script = ('trap "echo got TERM $RANK; exit 143" TERM; echo ready $RANK; '
                  'while true; do sleep 0.1; done')
        p = self.start("--nproc-per-node", "2", "--exec", "--log-dir", logs, "--", "sh", "-c", script)
        lines = []
        deadline = time.time() + 60
        while sum("ready" in l for l in lines) < 2 and time.time() < deadline:
            lines.append(p.stdout.readline())
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        out = "".join(lines) + out
        self.assertEqual(p.returncode, 143, out)
        self.assertIn("[rank 0] got TERM 0", out)
        self.assertIn("[rank 1] got TERM 1", out)
        with open(os.path.join(logs, "rank-1.log")) as f:
            self.assertIn("got TERM 1", f.read())

    def test_failure_names_the_rank_and_ends_the_others(self):
        script = 'if [ "$RANK" = 1 ]; then exit 7; fi; exec sleep 60'
        t0 = time.time()
        code, out = run(["launch", "--nproc-per-node", "3", "--exec", "--log-dir",
                         os.path.join(self.dir, "logs"), "--", "sh", "-c", script])
        self.assertEqual(code, 7, out)  # the failed worker's own status
        self.assertIn("worker rank 1", out)
        self.assertIn("exited with status 7", out)
        self.assertLess(time.time() - t0, 45, out)

    def test_train_workers_log_to_run_dir(self):
        # Without --exec the command is a unitrain subcommand; logs go to the config's run_dir.
        # The command reaches the workers word for word: a list value stays one word.
        run_dir = os.path.join(self.dir, "run")
        config = common.write(os.path.join(self.dir, "run.yaml"), MLP_DIGITS % (run_dir, common.DIGITS))
        code, out = run(["launch", "--nproc-per-node", "1", "--", "train", config,
                         "--checkpoint.enabled", "false", "--log.trackers", "[console, jsonl]"])
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(os.path.join(run_dir, "metrics.jsonl")))
        self.assertFalse(os.path.exists(os.path.join(run_dir, "metrics.csv")))
        self.assertIn("[rank 0] ", out)
        with open(os.path.join(run_dir, "logs", "rank-0.log")) as f:
            self.assertIn("done:", f.read())

    def test_a_config_error_in_the_workers_exits_2_as_train_does(self):
        run_dir = os.path.join(self.dir, "bad")
        config = common.write(os.path.join(self.dir, "bad.yaml"), MLP_DIGITS % (run_dir, common.DIGITS))
        code, out = run(["launch", "--nproc-per-node", "2", "--", "train", config,
                         "--train.max_length", "3 parsecs"], cwd=self.dir)
        self.assertEqual(code, 2, out)
        self.assertIn("train.max_length", out)
        self.assertIn("exited with status 2", out)
        # The config names no folder it can be trusted with: no logs/ where the command ran.
        self.assertFalse(os.path.exists(os.path.join(self.dir, "logs")))

    def test_bad_usage_is_a_clear_error(self):
        code, out = run(["launch", "--nproc-per-node", "0", "--", "train", "x.yaml"])
        self.assertEqual(code, 2, out)
        self.assertIn("--nproc-per-node", out)
        code, out = run(["launch", "--nproc-per-node", "2"])
        self.assertEqual(code, 2, out)
        self.assertIn("after --", out)
        code, out = run(["launch", "--nproc-per-node", "2", "train", "x.yaml"])
        self.assertEqual(code, 2, out)
        self.assertIn("put the workers' command after --", out)
        code, out = run(["launch", "--nnodes", "2", "--node-rank", "2", "--", "train", "x.yaml"])
        self.assertEqual(code, 2, out)
        self.assertIn("--node-rank 2", out)

    def test_one_machine_exposes_nothing_to_the_network(self):
        # Two workers on this machine meet through a file in a private folder (no rendezvous
        # port) and talk over loopback: no socket of theirs listens outside 127.0.0.0/8.
        run_dir = os.path.join(self.dir, "run")
        config = common.write(os.path.join(self.dir, "run.yaml"), MLP_DIGITS % (run_dir, common.DIGITS))
        tmp = os.path.join(self.dir, "tmp")
        os.makedirs(tmp)
        env = dict(os.environ, TMPDIR=tmp, UNITRAIN_TEST_CHECKPOINT_PAUSE_MS="100")
        p = subprocess.Popen([common.BIN, "launch", "--nproc-per-node", "2", "--", "train", config,
                              "--train.max_length", "3 epochs", "--checkpoint.every", "5 steps"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        seen, folders = set(), set()
        while p.poll() is None:
            seen |= common.listening_sockets(common.children_of(p.pid) + [p.pid])
            for d in os.listdir(tmp):
                folders.add((d, oct(os.stat(os.path.join(tmp, d)).st_mode & 0o777)))
            time.sleep(0.05)
        out = p.communicate()[0]
        self.assertEqual(p.returncode, 0, out)
        self.assertRegex(out, r"data parallel: rank 0 of 2 \(torchrun via the file store "
                              + re.escape(tmp) + r"/\S+/store, gloo\)")
        outside = [(a, port) for a, port in seen if not a.startswith("127.")]
        self.assertEqual(outside, [], f"listening outside loopback: {outside}")
        self.assertEqual(len(folders), 1, folders)
        name, mode = folders.pop()
        self.assertTrue(name.startswith("unitrain-rendezvous-"), name)
        self.assertEqual(mode, "0o700")
        self.assertEqual(os.listdir(tmp), [])  # removed when the workers ended


if __name__ == "__main__":
    common.main()
