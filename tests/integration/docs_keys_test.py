"""Every config key the docs show exists in the schema.

The schema is read from `unitrain config --reference` (the generator of docs/config.md): the run's
keys with their types, and each component's `args`. The docs (docs/*.md but the generated
config.md, and README.md) are checked in three places:
  - YAML code blocks (```yaml): every nested key path is a run key, a component's `type`/`args`
    (checked against the component the block names in `type:`), or lies inside a key the schema
    declares free-form (type `any`: user, key maps, dtypes, arrays, ...);
  - tables whose first column is headed `key`: each `name` in backticks is a key of what the
    section documents (a dataset named in the heading, a section such as `distributed`, or a
    full path such as `train.watchdog.action`);
  - tables with a `type` column and an `args` or `keys (args)` column: each backticked name
    at the start of an args entry is an argument of that row's component.
"""
import os
import re
import subprocess

import yaml

import common

DOCS = [os.path.join(common.SOURCE, "docs", f)
        for f in sorted(os.listdir(os.path.join(common.SOURCE, "docs")))
        if f.endswith(".md") and f != "config.md"] + [os.path.join(common.SOURCE, "README.md")]


class Schema:
    """The run keys (path -> type, list elements as `[]`) and the components' args (kind ->
    name -> arg path -> type) of a `unitrain config --reference` text."""

    def __init__(self, reference):
        self.keys = {}
        self.args = {}
        component = None
        for line in reference.splitlines():
            m = re.match(r"^### (\w+) `([^`]+)`", line)
            if m:
                component = self.args.setdefault(m.group(1), {}).setdefault(m.group(2), {})
                continue
            if line.startswith("## "):
                component = None
                continue
            m = re.match(r"^\| `([^`]+)` \| ([^|]*)\|", line)
            if not m:
                continue
            key, kind = m.group(1), m.group(2).strip()
            if component is None:
                self.keys[key] = kind
            elif key.startswith("args."):
                component[key[len("args."):]] = kind

    @staticmethod
    def component_kind(kind):
        """`dataset` for "dataset section" and "list of dataset sections"; None otherwise."""
        m = re.match(r"^(?:list of )?(\w+) sections?$", kind)
        return m.group(1) if m and m.group(1) != "section" else None

    def free_form(self, kind):
        return kind in ("any",)


def unknown_keys(schema, node, path):
    """The key paths inside `node` (the value at run key `path`, "" for the root) that the schema
    does not know."""
    bad = []
    if not isinstance(node, dict):
        return bad
    for key, value in node.items():
        key = str(key)
        child = f"{path}.{key}" if path else key
        kind = schema.keys.get(child)
        if kind is None:
            bad.append(child)
            continue
        bad += value_unknown_keys(schema, value, child, kind)
    return bad


def value_unknown_keys(schema, value, path, kind):
    if schema.free_form(kind):
        return []
    component = schema.component_kind(kind)
    if kind.startswith("list of") and isinstance(value, list):
        element = path + "[]"
        return [k for item in value
                for k in (component_unknown_keys(schema, item, element, component) if component
                          else unknown_keys(schema, item, element))]
    if component:
        return component_unknown_keys(schema, value, path, component)
    return unknown_keys(schema, value, path)


def component_unknown_keys(schema, node, path, component):
    """A component section {type, args, ...}: its own keys from the run keys, `args` from the
    component named by `type` (unchecked when the block names none or an unknown one)."""
    if not isinstance(node, dict):
        return []
    bad = unknown_keys(schema, {k: v for k, v in node.items() if k != "args"}, path)
    args = node.get("args")
    known = schema.args.get(component, {}).get(str(node.get("type")))
    if isinstance(args, dict) and known is not None:
        bad += args_unknown_keys(args, known, f"{path}.args", "")
    return bad


def args_unknown_keys(args, known, where, prefix):
    bad = []
    for key, value in args.items():
        if key == "...":  # `args: {...}`: arguments left out of an example
            continue
        name = prefix + str(key)
        kind = known.get(name)
        if kind is None:
            bad.append(f"{where}.{name}")
        elif kind == "section" and isinstance(value, dict):
            bad += args_unknown_keys(value, known, where, name + ".")
    return bad


def yaml_blocks(text):
    """(line, YAML text) of each ```yaml block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```yaml":
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            out.append((start, "\n".join(lines[start:i])))
        i += 1
    return out


def tables(text):
    """(line, heading, header cells, rows of cells) of each Markdown table."""
    out = []
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i]
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$",
                                                                        lines[i + 1]):
            header = cells(lines[i])
            start = i
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            out.append((start + 1, heading, header, rows))
            continue
        i += 1
    return out


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def backticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def key_table_unknown_keys(schema, heading, rows):
    """A table headed `key`: its keys are a dataset's args when the heading names datasets,
    a section's keys when it names a run section, and full paths when they hold a dot."""
    datasets = [n for n in backticked(heading) if n in schema.args.get("dataset", {})]
    sections = [n for n in backticked(heading) if schema.keys.get(n) == "section"]
    bad = []
    for row in rows:
        names = backticked(row[0])
        if not names:
            continue
        key = names[0]
        if "." in key or not (datasets or sections):
            ok = key in schema.keys
        elif datasets:
            ok = any(key in schema.args["dataset"][d] for d in datasets)
        else:
            ok = any(f"{s}.{key}" in schema.keys for s in sections)
        if not ok:
            bad.append(key)
    return bad


def component_table_unknown_args(schema, heading, header, rows):
    """A table with a `type` column and an args column ("`args` (defaults)", "keys (`args`)"):
    the names that start its args entries are that component's arguments. The component kind
    is the heading's section (`data.transforms`, `data.collate`) or a dataset."""
    type_col = next((i for i, h in enumerate(header) if h == "`type`"), None)
    args_col = next((i for i, h in enumerate(header) if "`args`" in h), None)
    if type_col is None or args_col is None:
        return []
    kind_of_section = {"data.transforms": "transform", "data.collate": "collate"}
    kinds = [kind_of_section[n] for n in backticked(heading) if n in kind_of_section] or ["dataset"]
    bad = []
    for row in rows:
        if len(row) <= max(type_col, args_col):
            continue
        types = backticked(row[type_col])
        known = next((schema.args[k][t] for k in kinds for t in types
                      if t in schema.args.get(k, {})), None)
        if known is None:
            bad.append(f"type {row[type_col]}")
            continue
        # An entry is a name in backticks, then what it holds or its default: "`key` (x)".
        for entry in re.split(r",|\bor\b", re.sub(r"\([^)]*\)", "", row[args_col])):
            names = backticked(entry)
            if names and entry.strip().startswith("`") and names[0] not in known:
                bad.append(f"{types[0]}: {names[0]}")
    return bad


def unknown_in_doc(schema, path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    name = os.path.relpath(path, common.SOURCE)
    found = []
    for line, block in yaml_blocks(text):
        for doc in yaml.safe_load_all(block):
            found += [f"{name}:{line}: YAML key {k}" for k in unknown_keys(schema, doc, "")]
    for line, heading, header, rows in tables(text):
        if header and header[0] == "key":
            found += [f"{name}:{line}: table key {k}"
                      for k in key_table_unknown_keys(schema, heading, rows)]
        found += [f"{name}:{line}: table {k}"
                  for k in component_table_unknown_args(schema, heading, header, rows)]
    return found


class DocsKeys(common.Case):
    def test_every_key_the_docs_show_is_in_the_schema(self):
        reference = subprocess.run([common.BIN, "config", "--reference"], capture_output=True,
                                   text=True, check=True).stdout
        schema = Schema(reference)
        self.assertIn("train.max_length", schema.keys)
        self.assertIn("path", schema.args["dataset"]["csv"])
        found = [k for doc in DOCS for k in unknown_in_doc(schema, doc)]
        self.assertEqual(found, [], "keys the docs show that the schema does not have")

    def test_an_unknown_key_is_found(self):
        reference = subprocess.run([common.BIN, "config", "--reference"], capture_output=True,
                                   text=True, check=True).stdout
        schema = Schema(reference)
        doc = os.path.join(self.dir, "stale.md")
        with open(doc, "w", encoding="utf-8") as f:
            f.write("# Data\n\n```yaml\ndata:\n  train: {type: csv, args: {path: a.csv, "
                    "columns: [a]}}\ntrain: {max_lenght: 2 epochs}\nuser: {anything: 1}\n```\n\n"
                    "## `csv`\n\n| key | meaning |\n|---|---|\n| `columns` | gone |\n\n"
                    "| format | `type` | keys (`args`) |\n|---|---|---|\n"
                    "| CSV | `csv` | `path`, `columns` (names) |\n")
        found = [k.split(": ", 1)[1] for k in unknown_in_doc(schema, doc)]
        self.assertEqual(found, ["YAML key data.train.args.columns", "YAML key train.max_lenght",
                                 "table key columns", "table csv: columns"])


if __name__ == "__main__":
    common.main()
