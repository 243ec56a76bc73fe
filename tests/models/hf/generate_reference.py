#!/usr/bin/python3
"""Reference greedy generation on the folders make_folders.py writes, for the C++ generation tests.

  /usr/bin/python3 tests/models/hf/generate_reference.py FOLDERS_DIR

Writes FOLDERS_DIR/<folder>/generate_reference.json: {"prompt": ids, "cases": [{"repetition_penalty":
p, "max_new_tokens": n, "ids": new ids}, ...]}. Each new token is the argmax of the last position's
logits of the whole sequence so far (no cache: the forward of reference.py, Hugging Face's modeling
equations in float32, on the folder's weights), after Hugging Face's repetition penalty
(RepetitionPenaltyLogitsProcessor: a logit of a token in the sequence so far divided by p when
positive, multiplied by p when negative). No stop ids: every case generates max_new_tokens.
"""
import json
import os
import sys

import torch

from reference import gpt2_forward, is_buffer, llama_forward
from safetensors_io import read_folder

FOLDERS = ("gpt2", "llama", "llama_tied_bias", "qwen2", "qwen3", "mistral", "gemma", "phi3",
           "gemma2", "gemma3_text")
PROMPT = [5, 17, 33, 2, 60, 41, 7]
CASES = ((1.0, 24), (1.3, 24))


def penalise(logits, seen, penalty):
    ids = torch.tensor(sorted(set(seen)))
    scores = logits[ids]
    logits[ids] = torch.where(scores < 0, scores * penalty, scores / penalty)
    return logits


def greedy(cfg, weights, prompt, penalty, max_new_tokens):
    forward = gpt2_forward if cfg["model_type"] == "gpt2" else llama_forward  # the llama-shaped
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = forward(cfg, weights, torch.tensor([seq]))[0, -1].clone()
            if penalty != 1.0:
                logits = penalise(logits, seq, penalty)
            seq.append(int(logits.argmax()))
    return seq[len(prompt):]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate_reference.py FOLDERS_DIR")
    # The penalty on a hand example: 2 -> 1 (positive, divided), -2 -> -4 (negative, multiplied).
    assert penalise(torch.tensor([2.0, -2.0, 3.0]), [0, 1, 1], 2.0).tolist() == [1.0, -4.0, 3.0]
    for name in FOLDERS:
        folder = os.path.join(sys.argv[1], name)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        weights = {n: t.float() for n, t in read_folder(folder).items() if not is_buffer(n)}
        cases = [{"repetition_penalty": p, "max_new_tokens": n, "ids": greedy(cfg, weights, PROMPT, p, n)}
                 for p, n in CASES]
        with open(os.path.join(folder, "generate_reference.json"), "w") as f:
            json.dump({"prompt": PROMPT, "cases": cases}, f)
        print(name, [c["ids"] for c in cases])


if __name__ == "__main__":
    main()
