"""Helpers for the integration tests: run the real unitrain binary and read what it wrote."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

BIN = os.environ.get("UNITRAIN_BIN", "")
BUILD = os.environ.get("UNITRAIN_BUILD_DIR", "")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
FASHION = "/usr/share/datasets/fashion-mnist"


def run(args, cwd=None, timeout=900, env=None):
    """Runs `unitrain args...`; returns (exit code, stdout + stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([BIN] + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout + p.stderr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def wait_for(predicate, timeout=120):
    """Polls `predicate` until it holds (True) or `timeout` seconds pass (False)."""
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Case(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="unitrain-it-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()


def main():
    global BIN, BUILD
    if len(sys.argv) < 2:
        sys.exit("usage: test.py UNITRAIN_BIN [BUILD_DIR] [unittest args]")
    BIN = os.path.abspath(sys.argv.pop(1))
    if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
        BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
