"""`cmake --install`: a tree a user can build against (CMake package, pkg-config) and run from anywhere."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess

import common

# No LD_LIBRARY_PATH, nothing inherited: what an installed binary finds, it finds by its RPATH.
CLEAN_ENV = {"PATH": "/usr/bin:/bin"}

# A one-file program using the library through pkg-config: a config, a model, a forward pass.
PKG_CONFIG_PROGRAM = r"""
#include <iostream>

#include "unitrain/core/config.h"
#include "unitrain/models/mlp.h"

int main() {
  unitrain::Config config = unitrain::Config::from_string("model: {hidden: 8}\n");
  auto net = unitrain::models::mlp({4, config.at("model").get_int("hidden"), 2});
  torch::Tensor y = net->forward(torch::ones({3, 4}));
  std::cout << "output " << y.size(0) << "x" << y.size(1) << "\n";
}
"""


def check_run(case, args, timeout=1800, **kw):
    """Runs a command that must succeed; returns its stdout + stderr."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    out = p.stdout + p.stderr
    case.assertEqual(p.returncode, 0, "%s\n%s" % (" ".join(args), out))
    return out


def resolved(exe, name, env):
    """The path the dynamic loader resolves library `name` to for `exe`, as ldd reports it."""
    p = subprocess.run(["ldd", exe], capture_output=True, text=True, env=env, timeout=60)
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and m.group(1).startswith(name):
            return os.path.normpath(m.group(2))
    return "(%s not found)\n%s" % (name, p.stdout + p.stderr)


def version():
    """unitrain's version, from the command: (major, minor, patch)."""
    out = subprocess.run([common.BIN, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"unitrain (\d+)\.(\d+)\.(\d+)", out)
    assert m, "unitrain --version printed: " + out
    return m.groups()


def soname():
    """The library's SONAME: while the version is 0.x, a minor release may break the ABI."""
    return "libunitrain.so.%s.%s" % version()[:2]


def headers_under(root):
    return sorted(os.path.relpath(p, root)
                  for p in glob.glob(os.path.join(root, "**", "*.h"), recursive=True))


class Install(common.Case):
    def install(self):
        prefix = os.path.join(self.dir, "prefix")
        check_run(self, ["cmake", "--install", common.BUILD, "--prefix", prefix])
        return prefix

    def test_library_example_builds_against_the_installed_cmake_package_and_trains(self):
        prefix = self.install()
        build = os.path.join(self.dir, "classifier-build")
        check_run(self, ["cmake", "-S", os.path.join(common.SOURCE, "examples", "library"),
                         "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix,
                         "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"])
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            cache = f.read()
        self.assertIn("unitrain_DIR:PATH=" + os.path.join(prefix, "lib", "cmake", "unitrain"), cache)
        # (The examples the package's test reads; split.cpp is built by unitrain's own build.)
        check_run(self, ["cmake", "--build", build, "-j1", "--target", "library_classifier",
                         "library_evaluate", "library_gan"])
        with open(os.path.join(build, "compile_commands.json")) as f:
            command = json.load(f)[0]["command"]
        self.assertIn(os.path.join(prefix, "include"), command)  # the installed headers,
        self.assertNotIn(os.path.join(common.SOURCE, "src"), command)  # not the source tree's

        exe = os.path.join(build, "library_classifier")
        self.assertEqual(resolved(exe, "libunitrain.so", CLEAN_ENV),
                         os.path.join(prefix, "lib", soname()))
        out = check_run(self, [exe, os.path.join(self.dir, "run")], env=CLEAN_ENV)
        self.assertIn("val/acc", out)

    def test_pkg_config_compiles_and_links_a_program(self):
        prefix = self.install()
        self.assertIsNotNone(shutil.which("pkg-config"),
                             "pkg-config is not installed (scripts/lib.sh installs it)")
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
        flags = check_run(self, ["pkg-config", "--cflags", "--libs", "unitrain"], env=env).split()
        includes = [os.path.realpath(f[2:]) for f in flags if f.startswith("-I")]
        self.assertIn(os.path.realpath(os.path.join(prefix, "include")), includes, flags)
        source = common.write(os.path.join(self.dir, "program.cpp"), PKG_CONFIG_PROGRAM)
        exe = os.path.join(self.dir, "program")
        check_run(self, ["c++", source, "-o", exe] + flags)
        # The flags carry the rpaths: the program runs without LD_LIBRARY_PATH.
        out = check_run(self, [exe], env=CLEAN_ENV)
        self.assertIn("output 3x2", out)

    def test_installed_command_finds_its_library_through_its_rpath_wherever_the_tree_is(self):
        moved = os.path.join(self.dir, "moved")
        shutil.move(self.install(), moved)  # relocatable: no path inside names the prefix
        exe = os.path.join(moved, "bin", "unitrain")
        # bin/unitrain needs the C library only (its first instruction blocks the signals a run
        # saves on) and executes libexec/unitrain/unitrain, which finds libunitrain.so.
        dynamic = check_run(self, ["readelf", "-d", exe])
        self.assertEqual(re.findall(r"NEEDED.*\[(.*)\]", dynamic), ["libc.so.6"], dynamic)
        program = os.path.join(moved, "libexec", "unitrain", "unitrain")
        dynamic = check_run(self, ["readelf", "-d", program])
        self.assertRegex(dynamic, r"(RUNPATH|RPATH).*\[\$ORIGIN/\.\./\.\./lib\]")
        self.assertEqual(resolved(program, "libunitrain.so", CLEAN_ENV),
                         os.path.join(moved, "lib", soname()))
        out = check_run(self, [exe, "--version"], env=CLEAN_ENV)
        self.assertRegex(out, r"^unitrain \d+\.\d+\.\d+")
        out = check_run(self, [exe, "list"], env=CLEAN_ENV)
        self.assertIn("mlp", out)
        # SentencePiece's module is found beside the moved library.
        text = common.write(os.path.join(self.dir, "text.txt"),
                            "call me ishmael\nsome years ago never mind how long precisely\n"
                            "having little or no money in my purse\n" * 20)  # 24 to 37 pieces
        out = check_run(self, [exe, "tokenizer", "train", "--input", text, "--vocab-size", "30",
                               "--out", os.path.join(self.dir, "tok")], env=CLEAN_ENV)
        self.assertIn("wrote " + os.path.join(self.dir, "tok.model"), out)

    def test_library_headers_and_package_files_are_installed(self):
        prefix = self.install()
        lib = os.path.join(prefix, "lib")
        dynamic = check_run(self, ["readelf", "-d", os.path.join(lib, "libunitrain.so")])
        self.assertIn("Library soname: [%s]" % soname(), dynamic)
        self.assertEqual(headers_under(os.path.join(common.SOURCE, "src", "unitrain")),
                         headers_under(os.path.join(prefix, "include", "unitrain")))
        for name in ["cmake/unitrain/unitrainConfig.cmake", "cmake/unitrain/unitrainConfigVersion.cmake",
                     "cmake/unitrain/unitrainTargets.cmake", "pkgconfig/unitrain.pc"]:
            self.assertTrue(os.path.isfile(os.path.join(lib, name)), name)
        with open(os.path.join(lib, "cmake", "unitrain", "unitrainConfig.cmake")) as f:
            config = f.read()
        for dependency in ["Torch", "fmt", "yaml-cpp"]:
            self.assertIn("find_dependency(%s)" % dependency, config)
        for path in glob.glob(os.path.join(lib, "**", "*.cmake"), recursive=True) + \
                glob.glob(os.path.join(lib, "pkgconfig", "*.pc")):
            with open(path) as f:
                text = f.read()
            for tree in [prefix, common.SOURCE, common.BUILD]:
                self.assertNotIn(tree, text, "%s names %s" % (path, tree))


    def test_neither_the_library_nor_the_command_defines_a_symbol_of_libc(self):
        # A guest in its users' programs: nothing of libc (bind, malloc, ...) replaced.
        def defined(path):  # the functions it defines (a program's copy relocations, its
            # copies of libc's data such as __libc_single_threaded, replace nothing)
            out = check_run(self, ["nm", "-D", "--defined-only", path])
            return {f[-1].split("@")[0] for f in map(str.split, out.splitlines())
                    if len(f) >= 3 and f[-2] in ("T", "W", "i")}
        library = os.path.realpath(os.path.join(common.BUILD, "libunitrain.so"))
        libc = defined(resolved(library, "libc.so.6", CLEAN_ENV))
        self.assertGreater(len(libc), 1000)  # libc's own table was read
        for path in (library, common.BIN):
            self.assertEqual(sorted(defined(path) & libc), [], path)
        # Nor a C name of its own that a user's could meet: every function it defines is C++'s,
        # in its namespace (a signal handler once kept a C name).
        self.assertEqual(sorted(n for n in defined(library) if not n.startswith("_Z")), [])


if __name__ == "__main__":
    common.main()
