"""How the build and the code are laid out.

cmake/torch_free_sources.cmake names exactly the library's sources that reach no LibTorch header.

Those files compile without the precompiled <torch/torch.h> (docs/performance.md, "Build times"):
a file listed there that includes LibTorch (directly or through unitrain's own headers) would
parse LibTorch's headers from scratch (~25 s of CPU); a file left out that needs none pays ~9 s
for the precompiled header it does not use. The includes are followed through src/ by path
("unitrain/..." from src/, or relative to the including file), as the compiler finds them.

src/unitrain/'s rooms include only rooms below them (scripts/room_graph.py --check).
"""
import os
import re
import subprocess
import unittest

import common

SRC = os.path.join(common.SOURCE, "src")
LIST = os.path.join(common.SOURCE, "cmake", "torch_free_sources.cmake")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
TORCH = ("torch/", "ATen/", "c10/", "caffe2/")
# Compiled in targets of their own (CMakeLists.txt), not in the library's batches.
ELSEWHERE = re.compile(r"/text/sentencepiece_module/|/log/tensorboard_events\.cpp$|"
                       r"/parallel/nccl_group\.cpp$")


def reaches_torch(path, seen):
    """Whether `path` (a file under src/) includes a LibTorch header, following src/'s includes."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for name in INCLUDE.findall(text):
        if name.startswith(TORCH):
            return True
        for candidate in (os.path.join(SRC, name), os.path.join(os.path.dirname(path), name)):
            candidate = os.path.normpath(candidate)
            if os.path.isfile(candidate):
                if candidate not in seen:
                    seen.add(candidate)
                    if reaches_torch(candidate, seen):
                        return True
                break
    return False


def library_sources():
    for folder, _, files in os.walk(os.path.join(SRC, "unitrain")):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".cpp") and not ELSEWHERE.search(path):
                yield os.path.relpath(path, common.SOURCE)


def listed():
    with open(LIST, encoding="utf-8") as f:
        return re.findall(r"^\s*(src/\S+\.cpp)\s*$", f.read(), re.M)


class TorchFreeSources(unittest.TestCase):
    def test_the_list_is_what_the_sources_include(self):
        names = listed()
        self.assertGreater(len(names), 50, LIST)
        self.assertEqual(len(names), len(set(names)), "a file is listed twice in " + LIST)
        free = sorted(s for s in library_sources()
                      if not reaches_torch(os.path.join(common.SOURCE, s), set()))
        missing = sorted(set(free) - set(names))
        wrong = sorted(set(names) - set(free))
        self.assertEqual(missing, [], "these files include no LibTorch header: add them to " + LIST)
        self.assertEqual(wrong, [], "these files include LibTorch or are gone: remove them from "
                         + LIST)

    def test_the_check_sees_an_include_through_a_header(self):
        # the scan itself: stall_watchdog.cpp includes no LibTorch header, its own header does
        self.assertTrue(reaches_torch(os.path.join(SRC, "unitrain", "engine", "loop", "stall_watchdog.cpp"),
                                      set()))
        self.assertFalse(reaches_torch(os.path.join(SRC, "unitrain", "core", "config.cpp"),
                                       set()))


class Rooms(unittest.TestCase):
    def test_each_room_includes_only_rooms_below_it(self):
        # scripts/room_graph.py's order is docs/api.md's ("How the code is laid out")
        r = subprocess.run(["/usr/bin/python3", os.path.join(common.SOURCE, "scripts",
                                                             "room_graph.py"), "--check"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("arrows up: none", r.stdout)


if __name__ == "__main__":
    common.main()
