"""Files other tools wrote, mutated: seeded mutants of tiny gpt2 and llama Hugging Face folders
(tests/models/hf/make_folders.py) — config.json (numbers made huge, negative, zero, null, text;
truncated), model.safetensors (truncated, its header's length, shapes, dtypes, offsets and names
corrupted), a shard index (pointing at missing files or the wrong shard), pytorch_model.bin
(truncated, bytes flipped), generation_config.json and tokenizer_config.json (truncated, ids of
the wrong type) and a PEFT adapter's adapter_config.json and adapter_model.safetensors. Each
mutant runs `unitrain train` for one step under a time and an address-space limit. None may
crash, hang or run out of memory; a refusal is one line that names the mutated file, under 500
characters, without a library's own text (nlohmann's exception ids, LibTorch's). A mutant that
still trains is counted, not failed, unless it is one that must be refused (MUST_REFUSE)."""
import concurrent.futures
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys

import common

SOURCE = common.SOURCE
sys.path.insert(0, os.path.join(SOURCE, "tests", "models", "hf"))
import safetensors_io  # noqa: E402

SEED = 59
TIME_LIMIT = 60                  # seconds a mutant may run
MEMORY_LIMIT = 4 << 30           # its address space (a tiny run maps under 2 GiB)
FORBIDDEN = ["json.exception", "c10::", "Storage size", "bad_alloc", "out of memory",
             "can't allocate", "Exception raised from", "terminate called", "what():"]
TARGETS = {"gpt2": "[c_attn, c_fc]", "llama": "[q_proj, v_proj]"}

CONFIG = """
run_dir: {run_dir}
seed: 1
model:
  type: {type}
  args: {{pretrained: {folder}}}
  lora: {lora}
  init_from: {init_from}
objective: {{losses: [{{type: cross_entropy}}]}}
data:
  train: {data}
  collate: {{type: {collate}}}
  loader: {{batch_size: 2, workers: 0, shuffle: false}}
optimizer: {{type: adamw, lr: 1.0e-3}}
train: {{max_length: 1 steps, log_every: 1 steps, threads: 1}}
checkpoint: {{enabled: {save}}}
"""

# Mutants a fix made refusable: each must exit with an error (name -> why).
MUST_REFUSE = {
    "gpt2/config.json n_layer=1000000000000000000": "hung building 1e18 blocks",
    "gpt2/config.json n_layer=4611686018427387904": "std::bad_alloc",
    "gpt2/config.json n_positions=1099511627776": "LibTorch's allocator text",
    "gpt2/config.json n_layer=3": "2 layers of weights under 3: named neither file",
    "llama/config.json num_hidden_layers=1000000000000000000": "hung",
    "llama/config.json rope_theta=None": "accepted silently",
    "llama/config.json rms_norm_eps=0": "accepted silently",
    "llama/generation_config.json truncated at 20": "ignored",
    "gpt2/generation_config.json eos_token_id='x'": "ignored",
    "gpt2-adapter/adapter_config.json target_modules=['c_attn']": "accepted silently",
    "gpt2_bin/pytorch_model.bin a tensor 64 elements past its storage": "read past it, loaded",
    "llama-adapter/adapter_config.json bias='all'": "accepted silently",
    "gpt2-text/tokenizer_config.json eos_token=5": "accepted silently",
    "gpt2-text/tokenizer.json a Sequence 20000 deep": "hung",
    "gpt2-text/tokenizer.json added token id 2000000000": "std::bad_alloc",
    "gpt2-text/tokenizer.json post-processor id 2^40": "accepted silently",
}
MUST_TRAIN = {"gpt2-adapter/adapter_model.safetensors as F16": "refused where F16 base weights load"}


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def edit_json(path, change):
    with open(path) as f:
        j = json.load(f)
    change(j)
    write(path, json.dumps(j, indent=2))


def set_key(path, key, value):
    """key "a.b" sets j["a"]["b"]."""
    def change(j):
        *outer, last = key.split(".")
        for k in outer:
            j = j[k]
        j[last] = value
    return lambda folder: edit_json(os.path.join(folder, path), change)


def truncate(path, at):
    return lambda folder: write(os.path.join(folder, path), read(os.path.join(folder, path))[:at])


def edit_header(path, change):
    """Rewrites a safetensors file's header (the 8-byte length follows it) over the same data."""
    def mutate(folder):
        data = read(os.path.join(folder, path))
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        change(header)
        text = json.dumps(header).encode()
        write(os.path.join(folder, path), struct.pack("<Q", len(text)) + text + data[8 + n:])
    return mutate


def set_length(path, length):
    def mutate(folder):
        data = read(os.path.join(folder, path))
        write(os.path.join(folder, path), struct.pack("<Q", length(data)) + data[8:])
    return mutate


def flip_bytes(path, rng, begin_fraction):
    offsets = [rng.random() for _ in range(8)]

    def mutate(folder):
        data = bytearray(read(os.path.join(folder, path)))
        begin = int(len(data) * begin_fraction)
        for o in offsets:
            at = begin + int((len(data) - begin - 1) * o)
            data[at] ^= 0xff
        write(os.path.join(folder, path), bytes(data))
    return mutate


def index_change(change):
    return lambda folder: edit_json(os.path.join(folder, "model.safetensors.index.json"), change)


def as_f16(path):
    def mutate(folder):
        tensors = safetensors_io.read_safetensors(os.path.join(folder, path))
        safetensors_io.write_safetensors(os.path.join(folder, path),
                                         {k: t.half() for k, t in tensors.items()})
    return mutate


class ForgedTensor:
    """A tensor whose pickle gives sizes, strides and an offset over a storage as they are."""
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride)

    def __reduce__(self):
        import collections
        import torch
        return (torch._utils._rebuild_tensor_v2, self.args + (False, collections.OrderedDict()))


def forge_bin(name, offset, size, stride):
    def mutate(folder):
        import warnings
        import torch
        path = os.path.join(folder, "pytorch_model.bin")
        d = torch.load(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage is deprecated
            d[name] = ForgedTensor(d[name].storage(), offset, size, stride)
        torch.save(d, path)
    return mutate


def mutants(sizes):
    """(name, base folder, the mutated file, mutate(folder)): seeded, the same every run.
    `sizes`: each safetensors/bin file's size, by "base/file", for offsets inside it."""
    rng = random.Random(SEED)
    out = []

    def add(base, path, what, mutate):
        name = f"{base}/{path} {what}"
        if name not in [m[0] for m in out]:  # a random draw may repeat a known mutant
            out.append((name, base, path, mutate))

    huge = [10 ** 18, 2 ** 62, 2 ** 40, -1, 0, None, "x", 1e308, 2.5, [], {"a": 1}]
    numeric = {
        "gpt2": ["vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner",
                 "layer_norm_epsilon", "resid_pdrop", "bos_token_id", "eos_token_id",
                 "initializer_range", "tie_word_embeddings", "activation_function", "model_type"],
        "llama": ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                  "num_attention_heads", "num_key_value_heads", "head_dim",
                  "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling.factor",
                  "rope_scaling.original_max_position_embeddings", "rope_scaling.low_freq_factor",
                  "rope_scaling.rope_type", "bos_token_id", "eos_token_id", "pad_token_id",
                  "attention_bias", "tie_word_embeddings"],
    }
    known = [("gpt2", "n_layer", 10 ** 18), ("gpt2", "n_layer", 2 ** 62),
             ("gpt2", "n_positions", 2 ** 40), ("gpt2", "n_layer", 3),
             ("llama", "num_hidden_layers", 10 ** 18), ("llama", "rope_theta", None),
             ("llama", "rms_norm_eps", 0), ("llama", "num_hidden_layers", 1),
             ("llama", "vocab_size", 127)]
    for base, key, value in known:
        add(base, "config.json", f"{key}={value!r}", set_key("config.json", key, value))
    for base, keys in numeric.items():
        for key in keys:
            for value in rng.sample(huge, 3):
                add(base, "config.json", f"{key}={value!r}", set_key("config.json", key, value))
        for _ in range(2):
            at = rng.randrange(1, 600)
            add(base, "config.json", f"truncated at {at}", truncate("config.json", at))

    for base in ("gpt2", "llama"):
        path = "model.safetensors"
        size = sizes[f"{base}/{path}"]
        for at in [rng.randrange(0, 8), rng.randrange(8, 400), rng.randrange(400, size)]:
            add(base, path, f"truncated at {at}", truncate(path, at))
        for what, length in (("length 2^63", lambda d: 2 ** 63), ("length 0", lambda d: 0),
                             ("length +1", lambda d: struct.unpack("<Q", d[:8])[0] + 1)):
            add(base, path, what, set_length(path, length))
        add(base, path, "data bytes flipped", flip_bytes(path, rng, 0.5))
        header_changes = [
            ("a shape doubled", lambda h, n: h[n]["shape"].__setitem__(0, h[n]["shape"][0] * 2)),
            ("a shape 2^40", lambda h, n: h[n]["shape"].__setitem__(0, 2 ** 40)),
            ("a shape -1", lambda h, n: h[n]["shape"].__setitem__(0, -1)),
            ("a dtype F16", lambda h, n: h[n].__setitem__("dtype", "F16")),
            ("a dtype I64", lambda h, n: h[n].__setitem__("dtype", "I64")),
            ("a dtype XX", lambda h, n: h[n].__setitem__("dtype", "X" * 100000)),
            ("an end + 4", lambda h, n: h[n]["data_offsets"].__setitem__(1, h[n]["data_offsets"][1] + 4)),
            ("offsets swapped", lambda h, n: h[n]["data_offsets"].reverse()),
            ("a tensor renamed", lambda h, n: h.__setitem__(n + ".x", h.pop(n))),
            ("a tensor dropped", lambda h, n: h.pop(n)),
        ]
        for what, change in rng.sample(header_changes, 7):
            def mutate_header(h, change=change, pick=rng.random()):
                names = sorted(k for k in h if k != "__metadata__")
                change(h, names[int(pick * len(names))])
            add(base, path, f"header: {what}", edit_header(path, mutate_header))

    first = "model-00001-of-00002.safetensors"
    index = "model.safetensors.index.json"
    layer0 = "model.layers.0.mlp.up_proj.weight"
    for what, change in (
            ("maps a tensor to a missing file", lambda j: j["weight_map"].__setitem__(layer0, "model-00009-of-00002.safetensors")),
            ("maps a tensor to the other shard", lambda j: j["weight_map"].__setitem__("lm_head.weight", first)),
            ("maps a tensor outside the folder", lambda j: j["weight_map"].__setitem__(layer0, "../" + first)),
            ("maps a tensor to 5", lambda j: j["weight_map"].__setitem__(layer0, 5)),
            ("without weight_map", lambda j: j.pop("weight_map")),
            ("with an empty weight_map", lambda j: j.__setitem__("weight_map", {})),
            ("without one tensor", lambda j: j["weight_map"].pop(layer0)),
            ("naming a tensor no shard has", lambda j: j["weight_map"].__setitem__("model.extra.weight", first))):
        add("llama_sharded", index, what, index_change(change))
    add("llama_sharded", index, "truncated", truncate(index, 100))
    add("llama_sharded", first, "truncated", truncate(first, sizes[f"llama_sharded/{first}"] // 2))

    path = "pytorch_model.bin"
    size = sizes[f"gpt2_bin/{path}"]
    for at in (rng.randrange(0, 200), rng.randrange(size // 2, size), size - 30):
        add("gpt2_bin", path, f"truncated at {at}", truncate(path, at))
    for i in range(3):
        add("gpt2_bin", path, f"bytes flipped {i}", flip_bytes(path, rng, rng.random()))
    wte = "transformer.wte.weight"
    for what, forged in (("64 elements past its storage", (64, (96, 32), (32, 1))),
                         ("at offset 2^40", (2 ** 40, (96, 32), (32, 1))),
                         ("of size 2^62", (0, (2 ** 62, 32), (32, 1)))):
        add("gpt2_bin", path, f"a tensor {what}", forge_bin(wte, *forged))

    gen = "generation_config.json"
    for base, what, mutate in (
            ("llama", "truncated at 20", truncate(gen, 20)),
            ("gpt2", "eos_token_id='x'", set_key(gen, "eos_token_id", "x")),
            ("gpt2", "eos_token_id=-1", set_key(gen, "eos_token_id", -1)),
            ("llama", "eos_token_id=2^40", set_key(gen, "eos_token_id", 2 ** 40)),
            ("llama", "eos_token_id=[1, 'a']", set_key(gen, "eos_token_id", [1, "a"]))):
        add(base, gen, what, mutate)
    add("gpt2", gen, "a list", lambda folder: write(os.path.join(folder, gen), "[1, 2]"))

    tok = "tokenizer_config.json"
    for what, mutate in (("truncated at 5", truncate(tok, 5)),
                         ("eos_token=5", set_key(tok, "eos_token", 5)),
                         ("eos_token names no token", set_key(tok, "eos_token", "<nope>")),
                         ("eos_token={'content': 3}", set_key(tok, "eos_token", {"content": 3})),
                         ("a list", lambda folder: write(os.path.join(folder, tok), "[]"))):
        add("gpt2-text", tok, what, mutate)

    # tokenizer.json: nesting, ids out of range, a truncated file, a bad pattern.
    tj = "tokenizer.json"

    def nested(depth):
        def mutate(folder):  # as text: Python's json recurses as deep as the value
            path = os.path.join(folder, tj)
            with open(path) as f:
                j = json.load(f)
            j["normalizer"] = "@@"
            deep = '{"type": "Sequence", "normalizers": [' * depth + '{"type": "Lowercase"}' + "]}" * depth
            write(path, json.dumps(j).replace('"@@"', deep))
        return mutate

    def in_json(change):
        return lambda folder: edit_json(os.path.join(folder, tj), change)

    def added_id(value):
        return in_json(lambda j: j["added_tokens"][1].__setitem__("id", value))

    template = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                                         {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
                "pair": [], "special_tokens": {"<eos>": {"id": "<eos>", "ids": [2 ** 40], "tokens": ["<eos>"]}}}
    for what, mutate in (("a Sequence 20000 deep", nested(20000)),
                         ("added token id 2000000000", added_id(2000000000)),
                         ("added token id -3", added_id(-3)),
                         ("post-processor id 2^40", set_key(tj, "post_processor", template)),
                         ("truncated at 100", truncate(tj, 100)),
                         ("pre_tokenizer regex that does not compile", set_key(
                             tj, "pre_tokenizer", {"type": "Split", "pattern": {"Regex": "(" * 3000},
                                                   "behavior": "Isolated", "invert": False})),
                         ("model type unknown", in_json(lambda j: j["model"].__setitem__("type", "Nope")))):
        add("gpt2-text", tj, what, mutate)

    cfg = "adapter_config.json"
    weights = "adapter_model.safetensors"
    for base, target in (("gpt2-adapter", "c_attn"), ("llama-adapter", "q_proj")):
        changes = [("target_modules", [target]), ("target_modules", target),
                   ("bias", "all"), ("use_dora", True), ("r", 8), ("lora_alpha", "x"),
                   ("peft_type", "IA3"), ("layers_to_transform", [0]),
                   ("alpha_pattern", {target: 32}), ("rank_pattern", {target: 2}),
                   ("modules_to_save", ["lm_head"]), ("use_rslora", None)]
        for key, value in changes[:3] + rng.sample(changes[3:], 5):
            add(base, cfg, f"{key}={value!r}", set_key(cfg, key, value))
        add(base, cfg, "truncated at 30", truncate(cfg, 30))
        add(base, weights, "truncated", truncate(weights, 200))
        add(base, weights, "header: a shape doubled", edit_header(
            weights, lambda h: [h[n]["shape"].__setitem__(0, h[n]["shape"][0] * 2)
                                for n in sorted(k for k in h if k != "__metadata__")[:1]]))
    add("gpt2-adapter", weights, "as F16", as_f16(weights))
    return out


class HubFilesMutation(common.Case):
    def setUp(self):
        super().setUp()
        folders = os.path.join(self.dir, "folders")
        subprocess.run([sys.executable, os.path.join(SOURCE, "tests/models/hf/make_folders.py"),
                        folders], check=True, stdout=subprocess.DEVNULL)
        self.bases = {name: os.path.join(folders, name) for name in ("gpt2", "llama", "llama_sharded")}
        self.tokens = common.random_tokens(os.path.join(self.dir, "tokens.bin"), 96, 400)
        self.text = common.write(os.path.join(self.dir, "text.jsonl"), "".join(
            json.dumps({"text": "w%d w%d w%d w%d" % (i, i + 1, i + 2, i + 3)}) + "\n" for i in range(40)))
        # gpt2's weights in pytorch_model.bin (as torch.save writes it, transformers' older form).
        self.bases["gpt2_bin"] = self.copy("gpt2", os.path.join(self.dir, "gpt2_bin"))
        subprocess.run([sys.executable, "-c", (
            "import sys; sys.path.insert(0, sys.argv[2]); import torch, safetensors_io, os; "
            "f = sys.argv[1]; t = safetensors_io.read_safetensors(os.path.join(f, 'model.safetensors')); "
            "torch.save(t, os.path.join(f, 'pytorch_model.bin')); os.remove(os.path.join(f, 'model.safetensors'))"),
            self.bases["gpt2_bin"], os.path.join(SOURCE, "tests/models/hf")], check=True)
        # gpt2 with a word-level tokenizer.json and its tokenizer_config.json, for text data.
        self.bases["gpt2-text"] = self.copy("gpt2", os.path.join(self.dir, "gpt2-text"))
        words = ["<unk>"] + [f"w{i}" for i in range(94)] + ["<eos>"]
        special = lambda i, w: {"id": i, "content": w, "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": True}
        common.write(os.path.join(self.bases["gpt2-text"], "tokenizer.json"), json.dumps({
            "version": "1.0", "added_tokens": [special(0, "<unk>"), special(95, "<eos>")],
            "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
            "decoder": None, "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)},
                                       "unk_token": "<unk>"}}))
        common.write(os.path.join(self.bases["gpt2-text"], "tokenizer_config.json"),
                     json.dumps({"eos_token": "<eos>", "bos_token": "<eos>"}))
        # PEFT adapters of both, as `export --format hf` writes them.
        for type in ("gpt2", "llama"):
            run_dir = os.path.join(self.dir, f"{type}-lora-run")
            cfg = self.config(run_dir, type, self.bases[type], save="true",
                              lora="{r: 4, alpha: 8, target_modules: %s}" % TARGETS[type])
            code, out = common.run(["train", cfg])
            self.assertEqual(code, 0, out)
            adapter = os.path.join(self.dir, f"{type}-adapter")
            code, out = common.run(["export", cfg, "--format", "hf", "--out", adapter])
            self.assertEqual(code, 0, out)
            self.bases[f"{type}-adapter"] = adapter

    def copy(self, base, to):
        shutil.copytree(self.bases[base], to)
        return to

    def config(self, run_dir, type, folder, lora="null", init_from="null", text=False, save="false"):
        data = ("{type: text, args: {paths: [%s], tokenizer: %s/tokenizer.json, task: lm, "
                "max_length: 8}}" % (self.text, folder) if text else
                "{type: tokens, args: {path: %s, seq_len: 8}}" % self.tokens)
        return common.write(run_dir + ".yaml", CONFIG.format(
            run_dir=run_dir, type=type, folder=folder, lora=lora, init_from=init_from, data=data,
            collate="pad" if text else "stack", save=save))

    def run_mutant(self, i, mutant):
        """Makes mutant `i` in a folder of its own and trains on it: (name, file, code, stderr)."""
        name, base, path, mutate = mutant
        where = os.path.join(self.dir, "m%d" % i)
        folder = shutil.copytree(self.bases[base], os.path.join(where, base))
        mutate(folder)
        adapter = base.endswith("-adapter")
        type = "llama" if base.startswith("llama") else "gpt2"
        cfg = self.config(os.path.join(where, "run"), type,
                          self.bases[type] if adapter else folder,
                          lora="{r: 4, alpha: 8, target_modules: %s}" % TARGETS[type] if adapter else "null",
                          init_from=folder if adapter else "null", text=base == "gpt2-text")
        limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        try:
            p = subprocess.run([common.BIN, "train", cfg], capture_output=True, text=True,
                               errors="replace", timeout=TIME_LIMIT, preexec_fn=limit)
        except subprocess.TimeoutExpired:
            return name, path, "timeout", ""
        shutil.rmtree(where)
        return name, path, p.returncode, p.stderr

    def problem(self, name, path, code, err):
        """What is wrong with a mutant's run, or None."""
        if code == "timeout":
            return f"ran past {TIME_LIMIT} s"
        if code < 0:
            return f"killed by signal {-code}"
        bad = [w for w in FORBIDDEN if w in err]
        if bad:
            return f"{bad[0]!r} in its output: {err[-600:]}"
        if name in MUST_TRAIN and code != 0:
            return f"refused ({MUST_TRAIN[name]}): {err[-600:]}"
        if code == 0:
            return f"trained ({MUST_REFUSE[name]})" if name in MUST_REFUSE else None
        lines = [l for l in err.split("\n") if l.strip()]
        errors = [i for i, l in enumerate(lines) if l.startswith("error")]
        if len(errors) != 1 or errors[0] != len(lines) - 1:
            return f"exit {code} without one error line at the end: {err[-600:]}"
        line = lines[-1]
        if len(line) > 500:
            return f"an error of {len(line)} characters: {line[:300]}..."
        if os.path.basename(path) not in line:
            return f"the error does not name {os.path.basename(path)}: {line}"
        return None

    def test_mutants_are_refused_in_one_line_naming_the_file_or_train(self):
        sizes = {}
        for base, folder in self.bases.items():
            for f in os.listdir(folder):
                sizes[f"{base}/{f}"] = os.path.getsize(os.path.join(folder, f))
        all_mutants = mutants(sizes)
        names = [m[0] for m in all_mutants]
        self.assertEqual(len(names), len(set(names)))
        self.assertTrue(set(MUST_REFUSE) <= set(names) and set(MUST_TRAIN) <= set(names),
                        set(MUST_REFUSE) - set(names))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(self.run_mutant, range(len(all_mutants)), all_mutants))
        problems = []
        refused = trained = 0
        for name, path, code, err in results:
            p = self.problem(name, path, code, err)
            if p:
                problems.append(f"{name}: {p}")
            elif code == 0:
                trained += 1
            else:
                refused += 1
        if os.environ.get("MUTANTS_LOG"):  # every mutant's outcome, for a person reading them
            with open(os.environ["MUTANTS_LOG"], "w") as f:
                for name, path, code, err in results:
                    last = [l for l in err.split("\n") if l.strip()][-1:] if code else []
                    f.write(f"{name} | {code} | {last[0][:400] if last else ''}\n")
        print(f"{len(results)} mutants: {refused} refused, {trained} trained, "
              f"{len(problems)} failures", file=sys.stderr)
        self.assertEqual(problems, [], "\n".join(problems))


if __name__ == "__main__":
    common.main()
