"""The tensorboard tracker, read back by an independent reader: the TFRecord framing checked with
Debian's python3-crc32c, the records decoded by python3-protobuf from the .proto files (compiled
here by protoc), compared with metrics.jsonl. Also log.all_ranks in a 2-process run.
"""
import glob
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile

import crc32c

import common
from common import wait_for, run, write, read_jsonl

# Digits (1438 train examples after the 20% split), batch 64: 23 optimizer steps an epoch.
CONFIG = f"""
name: tb
seed: 5
model: {{type: mlp, args: {{sizes: [64, 32, 10]}}}}
objective:
  losses: [{{type: cross_entropy}}]
  metrics: [{{type: accuracy, name: acc}}]
data:
  train: {{type: csv, args: {{path: {common.DIGITS}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  loader: {{batch_size: 64, shuffle: true, workers: 0}}
optimizer: {{type: adamw, lr: 3.0e-3}}
train: {{max_length: 4 epochs, log_every: 3 steps, val_every: 10 steps, threads: 1}}
checkpoint: {{every: null}}
log: {{trackers: [console, jsonl, tensorboard]}}
"""

PROTO_DIR = os.path.join(common.SOURCE, "src", "unitrain", "log", "proto")
_pb = {}


def protos():
    """tb_event_pb2 and tb_hparams_pb2, compiled by protoc from the tracker's .proto files."""
    if not _pb:
        out = tempfile.mkdtemp(prefix="unitrain-tb-proto-")
        files = sorted(glob.glob(os.path.join(PROTO_DIR, "*.proto")))
        subprocess.run(["protoc", "--python_out=" + out, "-I", os.path.join(common.SOURCE, "src")]
                       + files, check=True)
        sys.path.insert(0, out)
        from unitrain.log.proto import tb_event_pb2, tb_hparams_pb2
        _pb["event"], _pb["hparams"] = tb_event_pb2, tb_hparams_pb2
    return _pb["event"], _pb["hparams"]


def masked_crc(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(case, path):
    """The records of a TFRecord file; fails the test on a bad CRC or a truncated record."""
    with open(path, "rb") as f:
        data = f.read()
    records, at = [], 0
    while at < len(data):
        case.assertGreaterEqual(len(data) - at, 16, f"{path}: truncated record at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        case.assertEqual(header_crc, masked_crc(header), f"{path}: length CRC at byte {at}")
        body = data[at + 12:at + 12 + length]
        case.assertEqual(len(body), length, f"{path}: truncated record at byte {at}")
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        case.assertEqual(body_crc, masked_crc(body), f"{path}: data CRC at byte {at}")
        records.append(body)
        at += 16 + length
    return records


def read_events(case, path):
    ev, _ = protos()
    events = []
    for body in read_records(case, path):
        e = ev.Event()
        e.ParseFromString(body)
        events.append(e)
    case.assertTrue(events, path)
    case.assertEqual(events[0].WhichOneof("what"), "file_version")
    case.assertEqual(events[0].file_version, "brain.Event:2")
    return events


def event_files(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "tensorboard", "events.out.tfevents.*")))


def scalars(events):
    """(tag, step, value, wall_time) of every scalar summary, in file order."""
    out = []
    for e in events:
        if e.WhichOneof("what") != "summary":
            continue
        for v in e.summary.value:
            if v.WhichOneof("value") == "simple_value":
                out.append((v.tag, e.step, v.simple_value, e.wall_time))
    return out


def plugin_values(events, plugin):
    """(tag, step, Summary.Value) of the summaries of a plugin."""
    return [(v.tag, e.step, v) for e in events if e.WhichOneof("what") == "summary"
            for v in e.summary.value if v.metadata.plugin_data.plugin_name == plugin]


def as_float32(x):
    if isinstance(x, str):  # metrics.jsonl writes NaN and infinities as strings
        x = float(x.replace("Infinity", "inf"))
    return struct.unpack("<f", struct.pack("<f", x))[0]


def jsonl_points(run_dir):
    """{(tag, step): float32 value} of metrics.jsonl."""
    points = {}
    for row in read_jsonl(os.path.join(run_dir, "metrics.jsonl")):
        for k, v in row.items():
            if k not in ("step", "epoch", "samples", "time"):
                points[(k, row["step"])] = as_float32(v)
    return points


def same_value(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


class TensorBoard(common.Case):
    def config(self):
        return write(os.path.join(self.dir, "tb.yaml"), CONFIG)

    def train(self, run_dir, *extra):
        code, out = run(["train", self.config(), "--run_dir", run_dir] + list(extra))
        self.assertEqual(code, 0, out)
        return out

    def check_scalars_match_jsonl(self, run_dir, events):
        expected = jsonl_points(run_dir)
        got = scalars(events)
        self.assertTrue(expected)
        pairs = [(tag, step) for tag, step, _, _ in got]
        self.assertEqual(len(pairs), len(set(pairs)), "a (tag, step) is written twice")
        self.assertEqual(set(pairs), set(expected), "scalars differ from metrics.jsonl")
        for tag, step, value, wall_time in got:
            self.assertTrue(same_value(value, expected[(tag, step)]), (tag, step, value))
            self.assertGreater(wall_time, 1.5e9)  # seconds since the Unix epoch
        return got

    def test_scalars_text_and_hparams(self):
        run_dir = os.path.join(self.dir, "run")
        self.train(run_dir)
        files = event_files(run_dir)
        self.assertEqual(len(files), 1, files)
        events = read_events(self, files[0])
        self.check_scalars_match_jsonl(run_dir, events)
        _, hp = protos()

        # The resolved config as text, a Markdown code block.
        texts = plugin_values(events, "text")
        self.assertEqual([t[0] for t in texts], ["config"])
        tensor = texts[0][2].tensor
        self.assertEqual(tensor.dtype, 7)  # DT_STRING
        text = tensor.string_val[0].decode()
        with open(os.path.join(run_dir, "config.yaml")) as f:
            config_yaml = f.read()
        self.assertEqual("\n".join(line[4:] for line in text.split("\n")), config_yaml.rstrip())

        # hparams: session start (the flattened config), experiment (hparams and final
        # metrics), session end (success).
        by_tag = {}
        for tag, step, v in plugin_values(events, "hparams"):
            data = hp.HParamsPluginData()
            data.ParseFromString(v.metadata.plugin_data.content)
            by_tag.setdefault(tag, []).append(data)
        self.assertEqual(sorted(by_tag), ["_hparams_/experiment", "_hparams_/session_end_info",
                                          "_hparams_/session_start_info"])
        start = by_tag["_hparams_/session_start_info"][0].session_start_info
        self.assertEqual(start.hparams["seed"].number_value, 5)
        self.assertEqual(start.hparams["optimizer.lr"].number_value, 3.0e-3)
        self.assertEqual(start.hparams["optimizer.type"].string_value, "adamw")
        self.assertEqual(start.hparams["model.args.sizes"].string_value, "[64, 32, 10]")
        self.assertEqual(start.hparams["data.loader.shuffle"].bool_value, True)
        self.assertEqual(start.hparams["train.max_length"].string_value, "4 epochs")
        self.assertNotIn("name", start.hparams)  # not under the default key paths
        experiment = by_tag["_hparams_/experiment"][0].experiment
        self.assertEqual(sorted(h.name for h in experiment.hparam_infos), sorted(start.hparams))
        types = {h.name: h.type for h in experiment.hparam_infos}
        self.assertEqual(types["seed"], hp.DATA_TYPE_FLOAT64)
        self.assertEqual(types["data.loader.shuffle"], hp.DATA_TYPE_BOOL)
        self.assertEqual(types["optimizer.type"], hp.DATA_TYPE_STRING)
        # The final metrics: every metric of the run, each scalar's last value what
        # metrics.jsonl ends with.
        metric_tags = sorted(m.name.tag for m in experiment.metric_infos)
        rows = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        last = {}
        for row in rows:
            last.update({k: v for k, v in row.items() if k not in ("step", "epoch", "samples", "time")})
        self.assertEqual(metric_tags, sorted(last))
        self.assertIn("val/acc", metric_tags)
        kinds = {m.name.tag: m.dataset_type for m in experiment.metric_infos}
        self.assertEqual(kinds["val/acc"], hp.DATASET_VALIDATION)
        self.assertEqual(kinds["train/loss"], hp.DATASET_TRAINING)
        final = {}
        for tag, _, value, _ in scalars(events):
            final[tag] = value
        for tag in metric_tags:
            self.assertTrue(same_value(final[tag], as_float32(last[tag])), tag)
        end = by_tag["_hparams_/session_end_info"][0].session_end_info
        self.assertEqual(end.status, hp.STATUS_SUCCESS)

    def test_sigterm_and_resume_read_as_one_curve(self):
        full_dir = os.path.join(self.dir, "full")
        self.train(full_dir)
        run_dir = os.path.join(self.dir, "stopped")
        p = subprocess.Popen([common.BIN, "train", self.config(), "--run_dir", run_dir]
                             + common.slow_steps(30),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        self.assertTrue(wait_for(lambda: os.path.exists(metrics) and len(read_jsonl(metrics)) >= 6))
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=120)[0]
        self.assertEqual(p.returncode, 75, out)  # checkpoint.on_signal.exit_code
        first = event_files(run_dir)
        self.assertEqual(len(first), 1, first)
        with open(first[0], "rb") as f:
            first_bytes = f.read()
        saved = glob.glob(os.path.join(run_dir, "checkpoints", "step-*"))
        self.assertEqual(len(saved), 1, saved)  # the save at SIGTERM
        saved_step = int(saved[0].rsplit("-", 1)[1])
        out = self.train(run_dir)
        self.assertIn("resumed from", out)
        files = event_files(run_dir)
        self.assertEqual(len(files), 2, files)
        self.assertEqual(files[0], first[0])  # a new file; the first one is untouched
        with open(files[0], "rb") as f:
            self.assertEqual(f.read(), first_bytes)

        a, b = read_events(self, files[0]), read_events(self, files[1])
        # The second file starts its segment after the checkpoint: a SessionLog START there.
        starts = [e for e in b if e.WhichOneof("what") == "session_log"]
        self.assertEqual(len(starts), 1)
        ev, _ = protos()
        self.assertEqual(starts[0].session_log.status, ev.SessionLog.START)
        first_steps = [step for _, step, _, _ in scalars(a)]
        second_steps = [step for _, step, _, _ in scalars(b)]
        self.assertTrue(first_steps and second_steps)
        self.assertEqual(starts[0].step, saved_step + 1)
        self.assertLessEqual(max(first_steps), saved_step)
        self.assertGreater(min(second_steps), saved_step)
        # Together: exactly metrics.jsonl, and exactly the run that was never stopped.
        both = self.check_scalars_match_jsonl(run_dir, a + b)
        full = {(tag, step): value for tag, step, value, _ in scalars(read_events(self, event_files(full_dir)[0]))}
        self.assertEqual(sorted((tag, step) for tag, step, _, _ in both), sorted(full))
        for tag, step, value, _ in both:
            self.assertTrue(same_value(value, full[(tag, step)]), (tag, step))
        # Per tag, the steps only grow across the two files: one continuous curve.
        for tag in {t for t, _, _, _ in both}:
            steps = [s for t, s, _, _ in both if t == tag]
            self.assertEqual(steps, sorted(set(steps)), tag)

    def test_a_fresh_run_archives_the_earlier_event_files(self):
        run_dir = os.path.join(self.dir, "again")
        self.train(run_dir)
        self.train(run_dir, "--checkpoint.resume", "none")
        self.assertEqual(len(event_files(run_dir)), 1)
        self.assertEqual(len(glob.glob(os.path.join(run_dir, "history", "*", "tensorboard",
                                                    "events.out.tfevents.*"))), 1)

    def test_bad_tracker_names_and_settings_are_config_errors(self):
        code, out = run(["train", self.config(), "--run_dir", os.path.join(self.dir, "bad"),
                         "--log.trackers", "[console, tensorbord]"])
        self.assertEqual(code, 2, out)
        self.assertIn("log.trackers[1]", out)
        self.assertIn("did you mean 'tensorboard'", out)
        code, out = run(["train", self.config(), "--run_dir", os.path.join(self.dir, "bad"),
                         "--log.tracker_args.tensorboard.hparam", "[seed]"])
        self.assertEqual(code, 2, out)
        self.assertIn("log.tracker_args.tensorboard.hparam", out)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bad", "config.yaml")))
        code, out = run(["list", "tracker"])
        self.assertEqual(code, 0, out)
        for name in ("console", "csv", "jsonl", "tensorboard", "hparams"):
            self.assertIn(name, out)


class AllRanks(common.Case):
    def launch(self, run_dir, port, *extra):
        # The trackers in the file: the launcher's command line reads "[a, b]" as its own list.
        cfg = write(os.path.join(self.dir, "ranks.yaml"),
                    CONFIG.replace("[console, jsonl, tensorboard]", "[console, jsonl, csv, tensorboard]"))
        code, out = run(["launch", "--nproc-per-node", "2", "--master-port", str(port), "--",
                         "train", cfg, "--run_dir", run_dir, "--data.loader.batch_size", "32",
                         "--train.max_length", "20 steps"] + list(extra))
        self.assertEqual(code, 0, out)
        return out

    def test_every_rank_writes_its_own_tracker_files(self):
        run_dir = os.path.join(self.dir, "all")
        out = self.launch(run_dir, 29611, "--log.all_ranks", "true")
        rank1 = os.path.join(run_dir, "logs", "rank-1")
        for name in ("metrics.jsonl", "metrics.csv"):
            self.assertTrue(os.path.exists(os.path.join(run_dir, name)), name)
            self.assertTrue(os.path.exists(os.path.join(rank1, name)), name)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "logs", "rank-0")))
        self.assertEqual(len(event_files(run_dir)), 1)
        self.assertEqual(len(event_files(rank1)), 1)
        # Metrics are reduced over the ranks before they are logged: every rank logs the same.
        strip = lambda rows: [{k: v for k, v in r.items() if k != "time"} for r in rows]
        rows0 = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
        self.assertTrue(rows0)
        self.assertEqual(strip(rows0), strip(read_jsonl(os.path.join(rank1, "metrics.jsonl"))))
        self.check_events(rank1)
        # Rank 1's console stays quiet: its metric lines go to its train log only.
        self.assertFalse([l for l in out.splitlines() if l.startswith("[rank 1]") and "| epoch" in l])
        with open(os.path.join(run_dir, "logs", "train-rank-1.log")) as f:
            self.assertIn("| epoch", f.read())

    def check_events(self, folder):
        events = read_events(self, event_files(folder)[0])
        expected = jsonl_points(folder)
        got = {(tag, step): value for tag, step, value, _ in scalars(events)}
        self.assertEqual(set(got), set(expected))

    def test_rank_zero_only_by_default(self):
        run_dir = os.path.join(self.dir, "zero")
        self.launch(run_dir, 29612)
        self.assertTrue(os.path.exists(os.path.join(run_dir, "metrics.jsonl")))
        self.assertEqual(len(event_files(run_dir)), 1)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "logs", "rank-1")))


if __name__ == "__main__":
    common.main()
