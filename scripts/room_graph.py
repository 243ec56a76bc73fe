#!/usr/bin/env python3
"""The include graph of src/unitrain/ between its rooms (top-level folders).

  scripts/room_graph.py [REV]     the graph of the working tree, or of git revision REV
  scripts/room_graph.py --check   exits 1 when a room includes a room above it, or two rooms
                                  include each other (tests/integration/build_layout_test.py)

Rooms are ordered from the bottom (ORDER, as docs/api.md "How the code is laid out" lists them);
an edge is an `#include "unitrain/<room>/..."` in a file of another room.
"""
import collections
import os
import re
import subprocess
import sys

ORDER = ["core", "compat", "text", "threads", "log", "profile", "metrics", "data", "precision",
         "parallel", "checkpoint", "models", "optim", "objective", "engine", "launch", "report",
         "sweep", "commands"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sources(rev):
    if rev:
        names = subprocess.run(["git", "-C", ROOT, "ls-tree", "-r", "--name-only", rev,
                                "src/unitrain"], capture_output=True, text=True, check=True)
        for name in names.stdout.split():
            if name.endswith((".h", ".cpp")):
                yield name, subprocess.run(["git", "-C", ROOT, "show", rev + ":" + name],
                                           capture_output=True, text=True, check=True).stdout
        return
    for folder, _, files in os.walk(os.path.join(ROOT, "src", "unitrain")):
        for name in files:
            if name.endswith((".h", ".cpp")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, ROOT), f.read()


def graph(rev=None):
    """(files per room, edges (from, to) -> includes)."""
    files = collections.Counter()
    edges = collections.Counter()
    for name, text in sources(rev):
        parts = name.split("/")[2:]
        room = parts[0] if len(parts) > 1 else "(root)"
        files[room] += 1
        for header in re.findall(r'^\s*#\s*include\s*"unitrain/([^"/]+)/', text, re.M):
            if header != room:
                edges[(room, header)] += 1
    return files, edges


def problems(edges):
    at = {room: i for i, room in enumerate(ORDER)}
    up = sorted(f"{a} includes {b} ({n}x)" for (a, b), n in edges.items()
                if at.get(a, len(ORDER)) < at.get(b, len(ORDER)))
    circles = sorted({f"{min(a, b)} <-> {max(a, b)}" for (a, b) in edges if (b, a) in edges})
    unknown = sorted({r for edge in edges for r in edge if r not in at and r != "(root)"})
    return up, circles, unknown


def main():
    check = "--check" in sys.argv[1:]
    revs = [a for a in sys.argv[1:] if a != "--check"]
    files, edges = graph(revs[0] if revs else None)
    up, circles, unknown = problems(edges)
    order = {room: i for i, room in enumerate(ORDER)}
    print("files per room:", ", ".join(f"{r} {files[r]}" for r in
                                       sorted(files, key=lambda r: order.get(r, len(ORDER)))))
    print("edges:", len(edges))
    for (a, b), n in sorted(edges.items(), key=lambda e: (order.get(e[0][0], 99), e[0][1])):
        print(f"  {a} -> {b} ({n})")
    print("arrows up:", "; ".join(up) or "none")
    print("two-room circles:", "; ".join(circles) or "none")
    if unknown:
        print("rooms not in ORDER:", ", ".join(unknown))
    if check and (up or circles or unknown):
        sys.exit(1)


if __name__ == "__main__":
    main()
