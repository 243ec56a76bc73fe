#!/usr/bin/env python3
"""Writes crc32c_expected.json: CRC-32C values and TFRecord frames computed by Debian's
python3-crc32c (a C implementation independent of unitrain's), for tests/log/crc32c_test.cpp.

Run with the system Python:  /usr/bin/python3 make_crc32c_expected.py
Inputs are stored as hex. Each case has the CRC-32C, the masked CRC TFRecord stores, and the
whole TFRecord frame of the input (uint64 length, masked CRC of the length, data, masked CRC of
the data, little-endian), built here with struct.
"""
import json
import os
import random
import struct

import crc32c


def masked(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


rng = random.Random(1234)
inputs = [b"", b"a", b"123456789", b"\x00" * 32, b"\xff" * 32,
          bytes(range(256)), b"brain.Event:2",
          bytes(rng.randrange(256) for _ in range(1000))]
cases = []
for data in inputs:
    cases.append({"data": data.hex(), "crc32c": crc32c.crc32c(data), "masked": masked(data),
                  "frame": frame(data).hex()})
# Continuing a checksum: crc32c(b, crc32c(a)) == crc32c(a + b).
a, b = b"hello, ", b"world"
continued = {"first": a.hex(), "second": b.hex(), "crc32c": crc32c.crc32c(b, crc32c.crc32c(a))}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crc32c_expected.json")
with open(out, "w") as f:
    json.dump({"cases": cases, "continued": continued}, f, indent=1)
    f.write("\n")
print("wrote", out)
