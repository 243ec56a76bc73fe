"""The command line itself: argument order, typos and hints, `list KIND`, floats as written,
`completion bash`, and docs/cli.md covering every subcommand and option."""
import os
import re
import subprocess
import common
from common import run, write

CONFIG = """
name: t
model: {type: mlp, args: {sizes: [64, 16, 10]}}
objective: {losses: [{type: cross_entropy}], metrics: [{type: accuracy}]}
data:
  train: {type: csv, args: {path: %s, header: false, target: "64"}}
  loader: {batch_size: 64, workers: 0}
train: {max_length: 1 epoch}
""" % common.DIGITS



class Cli(common.Case):
    def config(self):
        return write(os.path.join(self.dir, "run.yaml"), CONFIG)

    def expect_usage_error(self, args, *needles):
        code, out = run(args)
        self.assertEqual(code, 2, out)
        for n in needles:
            self.assertIn(n, out)
        return out

    # ---- papercuts ----

    def test_plugin_before_or_after_the_config(self):
        # One value per --plugin: the config after it is not taken for a second plugin.
        out = self.expect_usage_error(["train", "--plugin", "/nonexistent/libx.so", self.config()],
                                      "/nonexistent/libx.so")
        self.assertNotIn("required", out)
        plugin = os.path.join(common.BUILD, "examples", "libunitrain_example_plugin.so")
        self.assertTrue(os.path.exists(plugin),
                        "the example plugin is not built: " + plugin + " (scripts/test builds it)")
        config = os.path.join(common.SOURCE, "examples/plugin/digits_gated.yaml")
        for args in (["--plugin", plugin, config], [config, "--plugin", plugin]):
            code, out = run(["config"] + args)
            self.assertEqual(code, 0, out)
            self.assertIn("type: gated_mlp", out)

    def test_unknown_subcommand_suggests_the_nearest(self):
        self.expect_usage_error(["trian", "cfg.yaml"], "unknown command 'trian'; did you mean 'train'?")
        out = self.expect_usage_error(["xyzzy"], "unknown command 'xyzzy'", "train", "init")
        self.assertNotIn("did you mean", out)

    def test_an_override_without_value_is_named(self):
        out = self.expect_usage_error(["train", self.config(), "--foo", "--run_dir",
                                       os.path.join(self.dir, "X")],
                                      "override --foo has no value")
        self.assertNotIn("unexpected argument", out)

    def test_launch_without_separator_says_where_the_command_goes(self):
        for extra in ([], ["--optimizer.lr", "1e-3"]):
            self.expect_usage_error(["launch", "--nproc-per-node", "2", "train", self.config()] + extra,
                                    "put the workers' command after --")

    # ---- list ----

    def test_list_one_kind_with_its_arguments(self):
        code, models = run(["list", "model"])
        self.assertEqual(code, 0, models)
        self.assertEqual(run(["list", "models"]), (0, models))
        self.assertTrue(models.startswith("model:\n"), models)
        self.assertNotIn("dataset:", models)
        self.assertRegex(models, r"\n  mlp +\S")
        self.assertRegex(models, r"\n      sizes +list of int +required +\S")
        self.assertRegex(models, r"\n      dropout +float +0\.1 +dropout on embeddings")
        code, losses = run(["list", "losses"])
        self.assertEqual(code, 0, losses)
        self.assertIn("label_smoothing", losses)
        self.expect_usage_error(["list", "modle"], "unknown kind 'modle' (did you mean 'model'?)",
                                "known kinds: callback, collate, dataset, loss, metric, model, optimizer")

    def test_list_alone_keeps_one_line_per_component(self):
        code, out = run(["list"])
        self.assertEqual(code, 0, out)
        for line in out.splitlines():
            self.assertRegex(line, r"^(\w+:|  \w+ +\S.*)$")
        self.assertIn("\n  transformer_lm    ", out)

    # ---- floats ----

    def test_floats_read_as_people_write_them(self):
        outputs = {}
        for args in (["list", "model"], ["list", "optimizer"], ["list", "scheduler"],
                     ["config", "--reference"], ["config", self.config()]):
            code, out = run(args)
            self.assertEqual(code, 0, out)
            outputs[" ".join(args)] = out
            for line in out.splitlines():
                self.assertNotRegex(line, r"\d\.\d{9,}", " ".join(args))
        self.assertIn("| `args.gamma` | float | `0.1` |", outputs["config --reference"])
        self.assertIn("lr: 0.001\n", outputs["config " + self.config()])
        with open(os.path.join(common.SOURCE, "docs/config.md")) as f:
            self.assertNotRegex(f.read(), r"\d\.\d{9,}")

    # ---- completion ----

    def complete(self, script, *words):
        """COMPREPLY of the script's function for `unitrain WORDS...` (the last word completed)."""
        driver = ('source "$1"; shift; COMP_WORDS=(unitrain "$@"); COMP_CWORD=$#; _unitrain; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        p = subprocess.run(["bash", "-c", driver, "_", script] + list(words), capture_output=True,
                           text=True, cwd=self.dir, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        return [w for w in p.stdout.splitlines() if w]

    def test_bash_completion(self):
        code, text = run(["completion", "bash"])
        self.assertEqual(code, 0, text)
        script = write(os.path.join(self.dir, "unitrain.bash"), text)
        write(os.path.join(self.dir, "run.yaml"), CONFIG)
        self.assertEqual(self.complete(script, "tr"), ["train"])
        self.assertEqual(set(self.complete(script, "")) >= {"train", "eval", "export", "launch",
                         "config", "list", "init", "completion", "--help"}, True)
        self.assertEqual(self.complete(script, "train", "--pl"), ["--plugin"])
        self.assertEqual(self.complete(script, "train", "ru"), ["run.yaml"])
        keys = self.complete(script, "train", "run.yaml", "--optimizer.")
        self.assertIn("--optimizer.lr", keys)
        self.assertIn("--optimizer.type", keys)
        self.assertIn("--optimizer.args.weight_decay", keys)
        self.assertTrue(all(k.startswith("--optimizer.") for k in keys), keys)
        self.assertEqual(self.complete(script, "train", "run.yaml", "--model.type", "transf"),
                         ["transformer_lm"])
        self.assertEqual(self.complete(script, "train", "run.yaml", "--set", "train.max_l"),
                         ["train.max_length"])
        self.assertEqual(self.complete(script, "init", "--task", "lang"), ["language-model"])
        self.assertEqual(self.complete(script, "init", "--ta"), ["--task", "--target"])
        self.assertEqual(self.complete(script, "list", "mo"), ["model"])
        self.assertEqual(self.complete(script, "completion", ""), ["bash"])
        self.assertEqual(self.complete(script, "eval", "run.yaml", "--split", ""), ["val", "test"])
        self.assertEqual(self.complete(script, "launch", "--nproc"), ["--nproc-per-node"])
        self.assertIn("--train.max_length",
                      self.complete(script, "launch", "--nproc-per-node", "2", "--", "train",
                                    "run.yaml", "--train.max"))
        # A sweep file takes the sweep's keys, and a run key's distribution under space.
        self.assertEqual(self.complete(script, "sweep", "s.yaml", "--max_t"), ["--max_trials"])
        self.assertIn("--asha.reduction_factor", self.complete(script, "sweep", "s.yaml", "--as"))
        self.assertIn("--space.optimizer.lr",
                      self.complete(script, "sweep", "s.yaml", "--space.optimizer.l"))
        self.assertEqual(self.complete(script, "sweep", "s.yaml", "--train.max"), [])
        self.expect_usage_error(["completion", "zsh"], "only bash")

    # ---- docs/cli.md ----

    def test_docs_cli_lists_every_subcommand_and_option(self):
        with open(os.path.join(common.SOURCE, "docs/cli.md")) as f:
            docs = f.read()
        sections = {m.group(1): m.group(2) for m in
                    re.finditer(r"^## `unitrain (\w+)`\n(.*?)(?=^## |\Z)", docs, re.M | re.S)}
        code, top = run(["--help"])
        self.assertEqual(code, 0, top)
        subcommands = re.findall(r"^  (\w+)  ", top.split("Subcommands:")[1], re.M)
        self.assertIn("init", subcommands)
        self.assertEqual(sorted(sections), sorted(subcommands), "docs/cli.md: one section per subcommand")
        for sub in subcommands:
            code, help_text = run([sub, "--help"])
            self.assertEqual(code, 0, help_text)
            options = set(re.findall(r"(?:^  |,)(--?[\w-]+)", help_text.split("Options:")[1], re.M))
            self.assertTrue(options, help_text)
            positionals = (re.findall(r"^  (\w+) ", help_text.split("Positionals:")[1].split("Options:")[0],
                                      re.M) if "Positionals:" in help_text else [])
            for name in options:
                self.assertIn("`" + name, sections[sub], "docs/cli.md: %s %s" % (sub, name))
            for name in positionals:
                self.assertIn(name.upper(), sections[sub], "docs/cli.md: %s %s" % (sub, name))


if __name__ == "__main__":
    common.main()
