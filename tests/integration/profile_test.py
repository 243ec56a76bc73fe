"""`unitrain train --profile` with the real binary: the table, profile/summary.json, a Chrome
trace with LibTorch's operators under the phases, and the report's profile section."""
import json
import os

import common
from common import run


CONFIG = """
run_dir: {run_dir}
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective: {{losses: [{{type: cross_entropy}}], metrics: [{{type: accuracy}}]}}
data:
  train: {{type: csv, args: {{path: {data}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  loader: {{batch_size: 32, workers: 1}}
train: {{max_length: 20 steps, log_every: 4 steps, val_every: 5 steps, threads: 1}}
checkpoint: {{every: 5 steps}}
profile: {{wait: 2, warmup: 1, active: 6}}
"""

PHASES = ["data_wait", "forward", "backward", "gradient_sync", "clip", "optimizer", "logging",
          "validation", "checkpoint", "other"]


class Profile(common.Case):
    def test_profile_flag_writes_the_table_the_summary_and_a_trace(self):
        run_dir = os.path.join(self.dir, "run")
        cfg = common.write(os.path.join(self.dir, "run.yaml"),
                           CONFIG.format(run_dir=run_dir, data=common.DIGITS))
        code, out = run(["train", cfg, "--profile"])
        self.assertEqual(code, 0, out)
        self.assertIn("profile of 6 steps", out)
        with open(os.path.join(run_dir, "profile", "summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["steps"], 6)
        self.assertEqual([p["name"] for p in summary["phases"]], PHASES)
        self.assertAlmostEqual(sum(p["share"] for p in summary["phases"]), 1.0, places=6)
        by_name = {p["name"]: p for p in summary["phases"]}
        for phase in ("forward", "backward", "optimizer", "validation", "checkpoint", "logging"):
            self.assertGreater(by_name[phase]["total_seconds"], 0, phase)  # steps 3..8 have all
        with open(os.path.join(run_dir, "profile", "trace-rank-0.json")) as f:
            events = json.load(f)["traceEvents"]
        phases = [e for e in events if e.get("cat") == "phase"]
        ops = [e for e in events if e.get("cat") == "operator"]
        self.assertTrue({"unitrain/forward", "unitrain/backward", "unitrain/optimizer"}
                        <= {p["name"] for p in phases})

        def inside(op, phase):
            return (op["tid"] == phase["tid"] and phase["ts"] <= op["ts"]
                    and op["ts"] + op["dur"] <= phase["ts"] + phase["dur"] + 1e-3)
        backward = [p for p in phases if p["name"] == "unitrain/backward"]
        nested = [o for o in ops if any(inside(o, p) for p in backward)]
        self.assertTrue(any("Backward" in o["name"] for o in nested), nested[:5])
        code, out = run(["report", run_dir])
        self.assertEqual(code, 0, out)
        with open(os.path.join(run_dir, "report.html")) as f:
            html = f.read()
        self.assertIn("gradient_sync", html)
        code, out = run(["train", cfg, "--profile.active", "0"])
        self.assertEqual(code, 2, out)
        self.assertIn("profile.active", out)


if __name__ == "__main__":
    common.main()
