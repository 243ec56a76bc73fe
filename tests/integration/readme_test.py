"""README's 5-minute tour, followed literally and in order on a fresh run folder: every `sh` line
runs and does what its comment says; the YAML shown is the example file."""
import json
import os
import re
import shlex
import subprocess

import torch

import common
from common import read_jsonl


def tour_section():
    with open(os.path.join(common.SOURCE, "README.md")) as f:
        text = f.read()
    start = text.index("## A 5-minute tour")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def blocks(section, language):
    return re.findall(r"```" + language + r"\n(.*?)```", section, re.S)


def commands(section):
    """The tour's command lines, in order, with the comment after `#` dropped."""
    out = []
    for block in blocks(section, "sh"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                out.append(words)
    return out


class ReadmeTour(common.Case):
    def test_the_yaml_shown_is_the_example_file(self):
        shown = blocks(tour_section(), "yaml")
        with open(os.path.join(common.SOURCE, "examples/digits/mlp.yaml")) as f:
            self.assertEqual(shown[0], f.read())

    def test_the_tour_runs_as_written_in_order(self):
        work = self.dir  # a fresh folder: runs/ lands here
        os.symlink(os.path.join(common.SOURCE, "examples"), os.path.join(work, "examples"))
        cmds = commands(tour_section())
        self.assertGreaterEqual(len(cmds), 10, cmds)
        ran = []
        for words in cmds:
            self.assertEqual(words[0], "build/unitrain", words)
            p = subprocess.run([common.BIN] + words[1:], cwd=work, capture_output=True, text=True,
                               timeout=900)
            out = p.stdout + p.stderr
            self.assertEqual(p.returncode, 0, f"{' '.join(words)}\n{out}")
            self.assertNotIn("already complete", out, " ".join(words))
            ran.append((words, out))

        runs = os.path.join(work, "runs")
        # train: the run trains and validates well.
        events = read_jsonl(os.path.join(runs, "digits-mlp", "metrics.jsonl"))
        self.assertGreater([e["val/acc"] for e in events if "val/acc" in e][-1], 0.95)
        # The override is a new run with the new lr, trained too.
        with open(os.path.join(runs, "digits-lr1e-3", "config.yaml")) as f:
            self.assertRegex(f.read(), r"\blr: (1e-3|0\.001)\n")
        self.assertTrue(read_jsonl(os.path.join(runs, "digits-lr1e-3", "metrics.jsonl")))
        # report: one page with both runs' series on the loss chart.
        with open(os.path.join(work, "report.html")) as f:
            page = f.read()
        for name in ("digits-mlp", "digits-lr1e-3"):
            self.assertIn('data-run="%s" data-split="val"' % name, page)
        # config prints every default; list names the components.
        config_out = next(out for words, out in ran if words[1] == "config")
        self.assertIn("accumulation_steps", config_out)
        list_out = next(out for words, out in ran if words[1] == "list")
        self.assertIn("mlp", list_out)
        self.assertIn("adamw", list_out)
        self.assertIn("tensorboard", list_out)  # trackers too
        # eval writes results/val.json; export writes a model Python runs on raw inputs.
        with open(os.path.join(runs, "digits-mlp", "results", "val.json")) as f:
            self.assertGreater(json.load(f)["metrics"]["val/acc"], 0.95)
        model = torch.jit.load(os.path.join(work, "mlp.ts"))
        self.assertEqual(tuple(model(torch.rand(3, 64) * 16).shape), (3, 10))
        # init wrote a config from the wine CSV that trained as written.
        with open(os.path.join(work, "wine.yaml")) as f:
            self.assertIn("wine_data.csv", f.read())
        init_run = [out for words, out in ran if words[1:3] == ["train", "wine.yaml"]][0]
        self.assertIn("done:", init_run)
        # launch: two processes, their own run.
        with open(os.path.join(runs, "digits-2proc", "checkpoints", "last", "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["world_size"], 2)
        # sweep: four trial runs, their results and the best one's config.
        sweep = os.path.join(work, "sweeps", "digits-lr")
        with open(os.path.join(sweep, "results.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 5)
        self.assertTrue(os.path.exists(os.path.join(sweep, "best.yaml")))


if __name__ == "__main__":
    common.main()
