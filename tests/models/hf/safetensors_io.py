"""A small safetensors reader and writer (no `safetensors` package here), shared by make_folders.py
and reference.py.

The format: an 8-byte little-endian u64 N, N bytes of JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets into the bytes after the header) plus
"__metadata__", padded with spaces to a multiple of 8, then the tensors' little-endian bytes.
"""
import json
import os
import struct

import numpy as np
import torch

# safetensors dtype -> (torch dtype, little-endian numpy dtype of the raw bytes). bf16 has no numpy
# type: its bytes travel as int16 and are viewed as bf16.
DTYPES = {
    "F32": (torch.float32, "<f4"),
    "F16": (torch.float16, "<f2"),
    "BF16": (torch.bfloat16, "<i2"),
    "I64": (torch.int64, "<i8"),
    "I32": (torch.int32, "<i4"),
    "U8": (torch.uint8, "u1"),
    "BOOL": (torch.bool, "?"),
}
NAMES = {torch_dtype: name for name, (torch_dtype, _) in DTYPES.items()}


def tensor_bytes(t):
    t = t.detach().contiguous()
    np_dtype = DTYPES[NAMES[t.dtype]][1]
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().astype(np_dtype, copy=False).tobytes()


def write_safetensors(path, tensors):
    """Writes {name: tensor} in the given order, `__metadata__` first as the Rust writer does."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = tensor_bytes(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """{name: tensor} in header order, each a copy in the file's dtype."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out, covered = {}, 0
    for name, h in header.items():
        if name == "__metadata__":
            continue
        begin, end = h["data_offsets"]
        torch_dtype, np_dtype = DTYPES[h["dtype"]]
        array = np.frombuffer(body[begin:end], dtype=np_dtype).copy()
        t = torch.from_numpy(array)
        if torch_dtype == torch.bfloat16:
            t = t.view(torch.bfloat16)
        assert t.numel() == int(np.prod(h["shape"])), f"{path}: {name} has {end - begin} bytes"
        out[name] = t.reshape(h["shape"])
        covered += end - begin
    assert covered == len(body), f"{path}: tensors cover {covered} of {len(body)} data bytes"
    return out


def read_folder(folder):
    """A Hugging Face folder's weights: model.safetensors, or the shards its index names."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    out = {}
    for shard in sorted(set(weight_map.values())):
        part = read_safetensors(os.path.join(folder, shard))
        assert all(weight_map[name] == shard for name in part), f"{shard} disagrees with the index"
        out.update(part)
    assert set(out) == set(weight_map), f"{folder}: shards and index name different tensors"
    return out
