"""Helpers for the integration tests: run the real unitrain binary and read what it wrote."""
import functools
import hashlib
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


# Debian 13's PyTorch (2.6) was built without libuv, yet its TCPStore asks for libuv by default,
# and torchrun's rendezvous gives no way to say otherwise: torchrun cannot start there. Then the
# tests run torchrun's own main with the rendezvous stores told use_libuv=False: the static and
# c10d rendezvous' own, and no second store shared from the c10d rendezvous (2.6 would make it).
TORCHRUN_WITHOUT_LIBUV = """
import os
import sys
import torch.distributed as dist
import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend as c10d
import torch.distributed.elastic.rendezvous.static_tcp_rendezvous as static
no_libuv = lambda *a, **k: dist.TCPStore(*a, **dict(k, use_libuv=False))
static.TCPStore = c10d.TCPStore = no_libuv
os.environ["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
from torch.distributed.run import main
sys.argv[0] = "torchrun"
main()
"""


@functools.lru_cache(maxsize=None)
def torchrun():
    """The words that start torchrun here (see TORCHRUN_WITHOUT_LIBUV); probed once (a Python
    that imports torch: seconds under load, which would part agents meant to start together)."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch.distributed as d; "
                            "d.TCPStore('127.0.0.1', 0, is_master=True)"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0 and "libuv" in probe.stderr:
        return ["/usr/bin/python3", "-c", TORCHRUN_WITHOUT_LIBUV]
    return ["/usr/bin/python3", "-m", "torch.distributed.run"]

def store_listens_on_one_address():
    """True where LibTorch's TCPStore takes a listening socket made for it (2.2 and later): a
    rendezvous store listens on MASTER_ADDR only; 1.x's listens on every interface."""
    out = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True, timeout=120).stdout
    major, minor = (int(x) for x in out.strip().split(".")[:2])
    return (major, minor) >= (2, 2)


def run(args, cwd=None, timeout=900, env=None):
    """Runs `unitrain args...`; returns (exit code, stdout + stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([BIN] + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout + p.stderr


def test_plugin():
    """The test plugin (tests/engine/*_plugin.cpp): the callbacks record_hooks and slow_steps."""
    return os.path.join(BUILD, "tests", "libunitrain_test_callbacks.so")


def slow_steps(ms):
    """Words for `unitrain train CONFIG ...` that make `ms` milliseconds' pause after each
    optimizer step (the test plugin's callback slow_steps, as the run's only callback)."""
    return ["--plugin", test_plugin(), "--callbacks", "[{type: slow_steps, args: {ms: %d}}]" % ms]


def folder_hash(folder):
    """SHA-1 of every file under `folder` (names and bytes) but .lock, whose record of who
    held the run folder last changes with each command that takes it."""
    h = hashlib.sha1()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(files):
            if name == ".lock":
                continue
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, folder).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def random_tokens(path, vocab, count, seed=1):
    """`count` token ids below `vocab` (uint16, seeded) in `path`, unless it exists: a `tokens`
    dataset's file. Returns the path."""
    if not os.path.exists(path):
        import torch
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(vocab, (count,), generator=g, dtype=torch.int32).numpy().astype("<u2")
        with open(path, "wb") as f:
            f.write(ids.tobytes())
    return path


def wait_for(predicate, timeout=120, interval=0.02):
    """Polls `predicate` every `interval` seconds until it holds (True) or `timeout` seconds
    pass (False)."""
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pid_of_rank(rank, config):
    """The pid of the unitrain worker of `rank` training `config`, or None."""
    import glob
    for env_file in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(env_file, "rb") as f:
                env = f.read().split(b"\0")
            with open(env_file.replace("environ", "cmdline"), "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if config.encode() in cmd and f"RANK={rank}".encode() in env and b"train" in cmd:
            return int(env_file.split("/")[2])
    return None


def manifest_problems(step_dir):
    """What differs between a checkpoint folder's files and its MANIFEST.json (sizes, CRC-32s)."""
    import zlib
    with open(os.path.join(step_dir, "MANIFEST.json")) as f:
        manifest = json.load(f)
    problems = []
    for name, entry in manifest["files"].items():
        with open(os.path.join(step_dir, name), "rb") as f:
            data = f.read()
        if len(data) != entry["size"] or zlib.crc32(data) != entry["crc32"]:
            problems.append(name)
    return problems


class Case(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="unitrain-it-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def hf_folders(self):
        """make_folders.py's tiny Hugging Face folders (llama, gpt2, ...), made once a test in
        its folder. Returns the folder that holds them."""
        folders = os.path.join(self.dir, "folders")
        if not os.path.isdir(folders):
            subprocess.run([sys.executable, os.path.join(SOURCE, "tests/models/hf/make_folders.py"),
                            folders], check=True, stdout=subprocess.DEVNULL)
        return folders

    def gpt2_without_dropout(self):
        """make_folders.py's gpt2 (tied head) copied with its dropout off, so that runs under
        several plans compare. Returns the copy's folder."""
        import shutil
        gpt2 = os.path.join(self.dir, "gpt2-without-dropout")
        if not os.path.isdir(gpt2):
            shutil.copytree(os.path.join(self.hf_folders(), "gpt2"), gpt2)
            with open(os.path.join(gpt2, "config.json")) as f:
                config = json.load(f)
            config.update(attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
            with open(os.path.join(gpt2, "config.json"), "w") as f:
                json.dump(config, f)
        return gpt2

    def assert_weights_close(self, a, b, rtol, atol):
        """Two state dicts with the same names, every tensor within rtol/atol."""
        import torch
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertTrue(torch.allclose(a[k], b[k], rtol=rtol, atol=atol),
                            f"{k}: max difference {(a[k] - b[k]).abs().max().item()}")

    def assert_weights_equal(self, a, b):
        """Two state dicts with the same names, every tensor bitwise equal."""
        import torch
        self.assertEqual(list(a), list(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]),
                            f"{k}: max difference {(a[k] - b[k]).abs().max().item()}")

    def final_weights(self, run_dir, *export_args):
        """The last checkpoint's model of `run_dir`, exported and read by torch.load.
        `export_args` go to `unitrain export`: `--plugin` for a config naming a plugin's callback."""
        import torch
        code, out = run(["export", os.path.join(run_dir, "config.yaml"), "--checkpoint", "last",
                         "--out", os.path.join(run_dir, "w.pt")] + list(export_args))
        self.assertEqual(code, 0, out)
        return torch.load(os.path.join(run_dir, "w.pt"))


class PlanRuns(Case):
    """Runs of one config under several plans (the parallel tests): CONFIG, formatted with the
    run's folder, a token file of 4000 ids below 48 and the model (MODEL unless given)."""
    CONFIG = ""
    MODEL = ""

    def config(self, name, model=None):
        data = random_tokens(os.path.join(self.dir, "tokens.bin"), 48, 4000, seed=0)
        run_dir = os.path.join(self.dir, name)
        cfg = write(os.path.join(self.dir, name + ".yaml"),
                    self.CONFIG.format(run_dir=run_dir, data=data, model=model or self.MODEL))
        return cfg, run_dir

    def train(self, name, *args, world=1, expect=0, model=None):
        """`train` of the config with `args`, under `unitrain launch` of `world` workers;
        `expect` the exit code, or None for a refusal (any other than 0)."""
        cfg, run_dir = self.config(name, model)
        words = ["train", cfg] + list(args)
        if world > 1:
            words = ["launch", "--nproc-per-node", str(world), "--"] + words
        code, out = run(words)
        if expect is None:
            self.assertNotEqual(code, 0, out)
        else:
            self.assertEqual(code, expect, out)
        return run_dir, out


def main():
    global BIN, BUILD
    if len(sys.argv) < 2:
        sys.exit("usage: test.py UNITRAIN_BIN [BUILD_DIR] [unittest args]")
    BIN = os.path.abspath(sys.argv.pop(1))
    if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
        BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(
                  testRunner=unittest.TextTestRunner(verbosity=2, resultclass=_TimedResult))


class _TimedResult(unittest.TextTestResult):
    """Prints each test's seconds after its verdict: where a suite's time goes, in CI's log too."""

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        if self.showAll:
            self.stream.writeln(f"  ({time.monotonic() - self._started:.1f} s)")
            self.stream.flush()


def listening_sockets(pids):
    """The (address, port) of every TCP socket in LISTEN state that one of `pids` holds, read
    from /proc (each pid's own network namespace); IPv4-mapped IPv6 addresses as IPv4."""
    import ipaddress
    out = set()
    for pid in pids:
        try:
            inodes = set()
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
            for table, width in (("tcp", 4), ("tcp6", 16)):
                with open(f"/proc/{pid}/net/{table}") as f:
                    next(f)
                    for line in f:
                        fields = line.split()
                        local, state, inode = fields[1], fields[3], fields[9]
                        if state != "0A" or inode not in inodes:
                            continue
                        hex_addr, hex_port = local.split(":")
                        raw = bytes.fromhex(hex_addr)
                        # /proc writes each 32-bit word in host (little-endian) order.
                        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                        addr = ipaddress.ip_address(raw)
                        if addr.version == 6 and addr.ipv4_mapped:
                            addr = addr.ipv4_mapped
                        out.add((str(addr), int(hex_port, 16)))
        except OSError:
            continue  # the process ended meanwhile
    return out


def children_of(parent):
    """The pids of the running processes whose parent is `parent`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent:
            pids.append(int(entry))
    return pids


class Machines:
    """Two "machines" for a test: network namespaces joined by a veth pair, with the addresses
    `prefix`.1 and `prefix`.2 (e.g. prefix "10.77.0"). Needs root (scripts/test runs the tests
    as root in CI); removed on exit, the veth pair with them.

        with common.Machines(self, "10.77.0") as m:
            p = m.launch(0, ["--nnodes", "2", ...])  # `unitrain launch ...` on machine 0
    """

    def __init__(self, case, prefix):
        tag = str(os.getpid() % 100000)
        self.case = case
        self.namespaces = [f"ut{tag}a", f"ut{tag}b"]
        self.links = [f"ut{tag}x", f"ut{tag}y"]
        self.addrs = [prefix + ".1", prefix + ".2"]

    @staticmethod
    def ip(*args):
        return subprocess.run(["ip"] + list(args), capture_output=True, text=True)

    def __enter__(self):
        made = self.ip("netns", "add", self.namespaces[0])
        try:
            self.case.assertEqual(made.returncode, 0, "cannot create network namespaces (run the "
                                  "tests as root, as scripts/test does in CI): " + made.stderr)
            ns, links, addrs = self.namespaces, self.links, self.addrs
            for cmd in (["netns", "add", ns[1]],
                        ["link", "add", links[0], "type", "veth", "peer", "name", links[1]],
                        ["link", "set", links[0], "netns", ns[0]],
                        ["link", "set", links[1], "netns", ns[1]],
                        ["-n", ns[0], "addr", "add", addrs[0] + "/24", "dev", links[0]],
                        ["-n", ns[1], "addr", "add", addrs[1] + "/24", "dev", links[1]],
                        ["-n", ns[0], "link", "set", links[0], "up"],
                        ["-n", ns[1], "link", "set", links[1], "up"],
                        ["-n", ns[0], "link", "set", "lo", "up"],
                        ["-n", ns[1], "link", "set", "lo", "up"]):
                r = self.ip(*cmd)
                self.case.assertEqual(r.returncode, 0, f"ip {' '.join(cmd)}: {r.stderr}")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for name in self.namespaces:
            self.ip("netns", "del", name)

    def launch(self, node, args):
        """`unitrain launch ARGS...` started on machine `node` (Gloo on its veth, output piped
        with stderr into stdout)."""
        env = dict(os.environ, GLOO_SOCKET_IFNAME=self.links[node])
        return subprocess.Popen(["ip", "netns", "exec", self.namespaces[node], BIN, "launch"] +
                                list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env)
