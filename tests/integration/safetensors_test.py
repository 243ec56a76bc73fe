"""safetensors with the real binary: files Python writes by hand from the format (an 8-byte
little-endian header length, a JSON header, the raw little-endian bytes; numpy for the bytes,
torch for bfloat16) initialise a model through model.init_from; the files `unitrain export
--format safetensors` and `unitrain checkpoint merge --format safetensors` write are read back
by hand and compared with torch.load of the state_dict export."""
import json
import os
import struct

import numpy
import torch

import common
from common import run, write

CONFIG = f"""
name: st
seed: 5
model: {{type: mlp, args: {{sizes: [64, 16, 10]}}}}
objective:
  losses: [{{type: cross_entropy, prediction: logits, target: y}}]
data:
  train: {{type: csv, args: {{path: {common.DIGITS}, header: false, target: "64"}}}}
  validation_ratio: 0.2
  loader: {{batch_size: 32}}
optimizer: {{type: sgd, lr: 1.0e-30}}
train: {{max_length: 2 steps, log_every: 1 step, val_every: 2 steps}}
"""

# The MLP's tensors, as its state_dict() names them.
SHAPES = {"layers.0.weight": (16, 64), "layers.0.bias": (16,), "layers.1.weight": (10, 16),
          "layers.1.bias": (10,)}

CODES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
         torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
         torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
         "I8": "i1", "U8": "u1", "BOOL": "?"}


def raw_bytes(t):
    """A tensor's little-endian bytes: numpy's, or for bfloat16 (which numpy lacks) its 16-bit
    patterns through torch."""
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
    code = CODES[t.dtype]
    return numpy.ascontiguousarray(t.numpy()).astype(NUMPY[code]).tobytes()


def safetensors_bytes(tensors, metadata=None, order=None, spaces=8):
    """A safetensors file: header keys in dict order, data in `order` (default: the same),
    the header padded with spaces to a multiple of 8 (and `spaces` more inside the JSON)."""
    header, data = {}, b""
    for name in order or list(tensors):
        raw = raw_bytes(tensors[name])
        header[name] = {"dtype": CODES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header = {name: header[name] for name in tensors}  # keys in the caller's order
    if metadata is not None:
        header["__metadata__"] = metadata
    text = (json.dumps(header, indent=1) + " " * spaces).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def read_safetensors(path):
    """(header length, header entries in file order, tensors, metadata) of a safetensors file,
    read by hand."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    entries = json.loads(blob[8:8 + n].decode(), object_pairs_hook=lambda pairs: pairs)
    data = blob[8 + n:]
    tensors, metadata = {}, {}
    for name, entry in entries:
        if name == "__metadata__":
            metadata = dict(entry)
            continue
        entry = dict(entry)
        begin, end = entry["data_offsets"]
        chunk = bytearray(data[begin:end])
        if entry["dtype"] == "BF16":
            t = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16) if chunk else \
                torch.zeros(0, dtype=torch.bfloat16)
        else:
            t = torch.from_numpy(numpy.frombuffer(bytes(chunk), dtype=NUMPY[entry["dtype"]]).copy())
        tensors[name] = t.reshape(entry["shape"])
    return n, entries, tensors, metadata, len(data)


def random_weights(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(s, generator=g) * 0.3 + 0.01).to(dtype) for k, s in SHAPES.items()}


class Safetensors(common.Case):
    def setUp(self):
        super().setUp()
        self.cfg = write(os.path.join(self.dir, "run.yaml"), CONFIG)

    def train(self, name, *args):
        """Trains the config (2 steps at lr 1e-30: the weights stay as loaded) into run_dir
        `name`; returns (exit code, output, run_dir)."""
        run_dir = os.path.join(self.dir, name)
        code, out = run(["train", self.cfg, "--run_dir", run_dir] + list(args))
        return code, out, run_dir

    def export(self, run_dir, fmt):
        path = os.path.join(self.dir, os.path.basename(run_dir) + "." + fmt)
        code, out = run(["export", self.cfg, "--run_dir", run_dir, "--format", fmt, "--out", path])
        self.assertEqual(code, 0, out)
        return path

    def assert_exported_file(self, path, expected, metadata):
        """`path` is a safetensors file as unitrain writes them, holding `expected` exactly."""
        n, entries, tensors, meta, data_size = read_safetensors(path)
        self.assertEqual(n % 8, 0)
        names = [k for k, _ in entries]
        self.assertEqual(names, sorted(names))
        self.assertEqual(meta, metadata)
        at = 0
        for name, entry in entries:
            if name != "__metadata__":
                self.assertEqual(dict(entry)["data_offsets"][0], at, name)  # contiguous
                at = dict(entry)["data_offsets"][1]
        self.assertEqual(at, data_size)
        self.assertEqual(sorted(tensors), sorted(expected))
        for k in expected:
            self.assertEqual(tensors[k].dtype, expected[k].dtype, k)
            self.assertTrue(torch.equal(tensors[k], expected[k]), k)

    def test_init_from_hand_written_files(self):
        # Keys out of order, data in yet another order, a prefix to drop, metadata: the model
        # starts from exactly these weights (lr 1e-30 leaves them as they are).
        weights = random_weights()
        prefixed = {"transformer." + k: weights[k] for k in reversed(list(weights))}
        path = write_bytes(os.path.join(self.dir, "w.safetensors"), safetensors_bytes(
            prefixed, metadata={"format": "pt"}, order=sorted(prefixed)))
        code, out, run_dir = self.train("prefixed", "--model.init_from", path,
                                        "--model.init_key_map", '{"transformer.": ""}')
        self.assertEqual(code, 0, out)
        self.assertIn("loaded 4 of 4 tensors from model.init_from " + path, out)
        self.assert_exported_file(self.export(run_dir, "safetensors"), weights, {"format": "pt"})

        # bfloat16 weights, named without the extension (found by their bytes), converted to
        # the float32 model exactly.
        bf16 = random_weights(torch.bfloat16, seed=1)
        path = write_bytes(os.path.join(self.dir, "bf16.weights"), safetensors_bytes(bf16))
        code, out, run_dir = self.train("bf16", "--model.init_from", path)
        self.assertEqual(code, 0, out)
        self.assertIn("converted 4 tensors from BFloat16 to Float", out)
        exported = torch.load(self.export(run_dir, "state_dict"))
        for k in SHAPES:
            self.assertTrue(torch.equal(exported[k], bf16[k].float()), k)

        # Extended (or requeued) elsewhere, the weights file gone: the run resumes from its
        # checkpoint, whose weights win, without reading init_from.
        os.remove(path)
        code, out, _ = self.train("bf16", "--model.init_from", path, "--train.max_length",
                                  "3 steps")
        self.assertEqual(code, 0, out)
        self.assertIn(f"model.init_from {path}: not read, the run resumes from", out)
        self.assertIn("resumed from", out)

    def test_export_and_merge_match_the_state_dict(self):
        code, out, run_dir = self.train("run", "--optimizer.lr", "0.1")
        self.assertEqual(code, 0, out)
        state_dict = torch.load(self.export(run_dir, "state_dict"))
        self.assertEqual(sorted(state_dict), sorted(SHAPES))
        self.assertFalse(torch.equal(state_dict["layers.0.weight"], torch.zeros(16, 64)))
        self.assert_exported_file(self.export(run_dir, "safetensors"), state_dict, {"format": "pt"})

        merged = os.path.join(self.dir, "merged.safetensors")
        last = os.path.join(run_dir, "checkpoints", "last")
        code, out = run(["checkpoint", "merge", last, "--out", merged, "--format", "safetensors"])
        self.assertEqual(code, 0, out)
        with open(os.path.join(last, "trainer_state.json")) as f:
            step = json.load(f)["state"]["step"]
        self.assertEqual(step, 2)
        self.assert_exported_file(merged, state_dict, {"format": "pt", "unitrain.step": "2"})
        # What unitrain wrote, it reads: a new run starts from the merged file.
        code, out, _ = self.train("again", "--model.init_from", merged)
        self.assertEqual(code, 0, out)

        code, out = run(["checkpoint", "merge", last, "--out", merged, "--format", "safetensors"])
        self.assertEqual(code, 2, out)
        self.assertIn(merged + " exists already", out)
        code, out = run(["checkpoint", "merge", last, "--out", merged + "2", "--format", "npz"])
        self.assertEqual(code, 2, out)
        self.assertIn("--format npz: give checkpoint or safetensors", out)
        code, out = run(["export", self.cfg, "--run_dir", run_dir, "--format", "onnx", "--out",
                         os.path.join(self.dir, "m.onnx")])
        self.assertEqual(code, 2, out)
        self.assertIn("--format onnx: give state_dict, safetensors, torchscript or hf", out)

    def test_names_that_do_not_fit_are_reported(self):
        weights = random_weights()
        path = write_bytes(os.path.join(self.dir, "w.safetensors"), safetensors_bytes(
            {"model." + k: v for k, v in weights.items()}))
        code, out, _ = self.train("strict", "--model.init_from", path)
        self.assertEqual(code, 2, out)
        self.assertIn("missing: layers.0.bias, layers.0.weight", out)
        self.assertIn("unexpected: model.layers.0.bias", out)
        self.assertIn('set model.init_key_map: {"model.": ""} to rename them', out)

        code, out, _ = self.train("typo", "--model.init_from", path,
                                  "--model.init_key_map", '{"modle.": ""}')
        self.assertEqual(code, 2, out)
        self.assertIn('model.init_key_map: no tensor name begins with "modle."', out)
        code, out, _ = self.train("list", "--model.init_from", path,
                                  "--model.init_key_map", '["model."]')
        self.assertEqual(code, 2, out)
        self.assertIn("model.init_key_map: expected a map", out)

        shapes = dict(weights)
        shapes["layers.1.bias"] = torch.zeros(3)
        del shapes["layers.0.bias"]
        path = write_bytes(os.path.join(self.dir, "shapes.safetensors"), safetensors_bytes(shapes))
        code, out, _ = self.train("shape", "--model.init_from", path, "--model.init_strict",
                                  "false")
        self.assertEqual(code, 2, out)
        self.assertIn("mismatched: layers.1.bias (file [3] float, model [10] float)", out)
        del shapes["layers.1.bias"]
        write_bytes(path, safetensors_bytes(shapes))
        code, out, _ = self.train("partial", "--model.init_from", path, "--model.init_strict",
                                  "false")
        self.assertEqual(code, 0, out)
        self.assertIn("loaded 2 of 4 tensors", out)
        self.assertIn("kept as initialised: layers.0.bias, layers.1.bias", out)

    def test_two_prefixes_get_one_key_map_and_loading_nothing_is_refused(self):
        # The body's names carry "transformer.", the last layer's are the head's, "lm_head.".
        weights = random_weights()
        two = {"transformer.layers.0.weight": weights["layers.0.weight"],
               "transformer.layers.0.bias": weights["layers.0.bias"],
               "lm_head.weight": weights["layers.1.weight"],
               "lm_head.bias": weights["layers.1.bias"]}
        path = write_bytes(os.path.join(self.dir, "two.safetensors"), safetensors_bytes(two))
        key_map = '{"lm_head.": "layers.1.", "transformer.": ""}'
        code, out, _ = self.train("strict", "--model.init_from", path)
        self.assertEqual(code, 2, out)
        self.assertIn("set model.init_key_map: %s to rename them" % key_map, out)

        # Not strict, nothing fits: an error (with the same map), not a run from scratch.
        code, out, run_dir = self.train("loose", "--model.init_from", path,
                                        "--model.init_strict", "false")
        self.assertEqual(code, 2, out)
        self.assertIn("none of its 4 names is one of the model's 4", out)
        self.assertIn("set model.init_key_map: %s" % key_map, out)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), out)

        # The map it gives loads every tensor.
        code, out, run_dir = self.train("mapped", "--model.init_from", path,
                                        "--model.init_key_map", key_map)
        self.assertEqual(code, 0, out)
        self.assertIn("loaded 4 of 4 tensors", out)
        self.assertEqual(torch.load(self.export(run_dir, "state_dict"))["layers.1.bias"].tolist(),
                         weights["layers.1.bias"].tolist())

        # Loading a part is a warning naming what loaded and what did not.
        code, out, _ = self.train("part", "--model.init_from", path, "--model.init_strict",
                                  "false", "--model.init_key_map", '{"transformer.": ""}')
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"warn.*loaded 2 of 4 tensors from model.init_from .*: "
                              r"layers.0.bias, layers.0.weight; kept as initialised: "
                              r"layers.1.bias, layers.1.weight; ignored: lm_head.bias, "
                              r"lm_head.weight")

    def test_bad_files_give_one_clear_error(self):
        good = safetensors_bytes(random_weights())
        (n,) = struct.unpack("<Q", good[:8])
        header = good[8:8 + n].decode()

        def with_header(text):
            text = text.encode() + b" " * (-len(text) % 8)
            return struct.pack("<Q", len(text)) + text + good[8 + n:]

        cases = {
            "truncated": (good[:-10], "tensor 'layers.1.bias': its bytes [4800, 4840) run past "
                                      "the end of the file, which holds 4830 bytes"),
            "long-header": (struct.pack("<Q", 1 << 40) + good[8:],
                            "its header length says 1099511627776 bytes"),
            "not-json": (with_header(header.replace("{", "(", 1)), "is not JSON"),
            "dtype": (with_header(header.replace('"F32"', '"F8_E4M3"', 1)),
                      "tensor 'layers.0.weight': unknown dtype \"F8_E4M3\""),
            "size": (with_header(header.replace("64", "65", 1)),
                     "tensor 'layers.0.weight': F32 [16,65] needs 4160 bytes, but data_offsets "
                     "[0,4096] hold 4096"),
            "overlap": (with_header(header.replace("[\n   4096,\n   4160\n  ]", "[4092, 4156]")),
                        "overlap those of 'layers.0.weight' [0, 4096)"),
            "empty": (b"", "holds 0 bytes, less than the 8-byte header length"),
        }
        for name, (data, expected) in cases.items():
            path = write_bytes(os.path.join(self.dir, name + ".safetensors"), data)
            code, out, _ = self.train(name, "--model.init_from", path)
            self.assertEqual(code, 2, name + ": " + out)
            self.assertIn("model.init_from: '" + path + "' is not a valid safetensors file: ", out)
            self.assertIn(expected, out, name)
            self.assertNotIn("Traceback", out)
        code, out, _ = self.train("missing", "--model.init_from",
                                  os.path.join(self.dir, "nowhere.safetensors"))
        self.assertEqual(code, 2, out)
        self.assertIn("nowhere.safetensors' does not exist", out)


if __name__ == "__main__":
    common.main()
