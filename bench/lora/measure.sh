#!/bin/bash
# LoRA against a full fine-tune of the same GPT-2-shaped model (docs/performance.md, "LoRA against
# a full fine-tune"): checkpoint bytes, seconds per step and peak RSS, from the same config with
# and without model.lora (r 8, alpha 16 on c_attn and c_fc). The step time is the median of the
# throughput callback's (train/step_ms_p50): start-up and the checkpoint's save are not in it.
#   bench/lora/measure.sh BUILD_DIR [STEPS] [ROUNDS]
# ROUNDS (default 1) alternates the two runs that many times (a shared machine's load moves the
# step times; the bytes do not move).
# Makes a random GPT-2 folder (d 512, 8 layers, 8 heads, vocab 4096: 29.5M parameters) in
# save_pretrained's layout and random tokens under a temporary folder.
set -euo pipefail
BIN=$(cd "$1" && pwd)/unitrain
STEPS=${2:-12}
ROUNDS=${3:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/unitrain-lora-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
/usr/bin/python3 - "$WORK" "$ROOT" <<'PY'
import json, os, sys
import torch
sys.path.insert(0, os.path.join(sys.argv[2], "tests/models/hf"))
from safetensors_io import write_safetensors
work = sys.argv[1]
cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 4096,
       "n_positions": 256, "n_embd": 512, "n_layer": 8, "n_head": 8,
       "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.1,
       "embd_pdrop": 0.1, "attn_pdrop": 0.1, "initializer_range": 0.02, "bos_token_id": 0,
       "eos_token_id": 0, "tie_word_embeddings": True, "torch_dtype": "float32"}
g = torch.Generator().manual_seed(0)
e, n = cfg["n_embd"], cfg["n_layer"]
w = {"transformer.wte.weight": torch.randn(4096, e, generator=g) * 0.02,
     "transformer.wpe.weight": torch.randn(256, e, generator=g) * 0.01,
     "transformer.ln_f.weight": torch.ones(e), "transformer.ln_f.bias": torch.zeros(e)}
for i in range(n):
    p = f"transformer.h.{i}."
    for name, shape in (("attn.c_attn", (e, 3 * e)), ("attn.c_proj", (e, e)),
                        ("mlp.c_fc", (e, 4 * e)), ("mlp.c_proj", (4 * e, e))):
        w[p + name + ".weight"] = torch.randn(*shape, generator=g) * 0.02
        w[p + name + ".bias"] = torch.zeros(shape[1])
    for ln in ("ln_1", "ln_2"):
        w[p + ln + ".weight"], w[p + ln + ".bias"] = torch.ones(e), torch.zeros(e)
os.makedirs(os.path.join(work, "gpt2"))
with open(os.path.join(work, "gpt2", "config.json"), "w") as f:
    json.dump(cfg, f)
write_safetensors(os.path.join(work, "gpt2", "model.safetensors"), w)
ids = torch.randint(4096, (400_000,), generator=g).numpy().astype("<u2")
ids.tofile(os.path.join(work, "tokens.bin"))
PY
cat > "$WORK/run.yaml" <<YAML
seed: 1
model:
  type: gpt2
  args: {pretrained: $WORK/gpt2}
  lora: {r: 8, alpha: 16, target_modules: [c_attn, c_fc]}
objective: {losses: [{type: cross_entropy}]}
data:
  train: {type: tokens, args: {path: $WORK/tokens.bin, seq_len: 128}}
  loader: {batch_size: 8, workers: 0}
optimizer: {type: adamw, lr: 1.0e-4}
train: {max_length: $STEPS steps, log_every: $STEPS steps, threads: 2}
callbacks: [{type: throughput}]
checkpoint: {enabled: true, every: $STEPS steps}
YAML
echo "| run | trainable parameters | checkpoint bytes | model.pt | optimizer.pt | step ms (median) | peak RSS |"
echo "|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
for kind in full lora; do
  rm -rf "${WORK:?}/$kind"
  more=()
  [ "$kind" = full ] && more=(--model.lora null)
  out=$("$BIN" train "$WORK/run.yaml" --run_dir "$WORK/$kind" "${more[@]}" 2>&1)
  step="$WORK/$kind/checkpoints/step-$STEPS"
  rss=$(grep -o "peak RSS [0-9]* MB" <<<"$out" | grep -o "[0-9]*")
  trainable=$(grep -o "[0-9]* trainable parameters" <<<"$out" | grep -o "^[0-9]*" || true)
  [ -n "$trainable" ] || trainable=$(grep -o "model gpt2: [0-9]* parameters" <<<"$out" | sed -E 's/.*: ([0-9]+) .*/\1/')
  ms=$(/usr/bin/python3 -c "import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if 'train/step_ms_p50' in l][-1]['train/step_ms_p50'])" \
       "$WORK/$kind/metrics.jsonl")
  echo "| $kind | $trainable | $(du -sb "$step" | cut -f1) | $(stat -c %s "$step/model.pt") |" \
       "$(stat -c %s "$step/optimizer.pt") | $(printf %.0f "$ms") | $rss MB |"
done
done
