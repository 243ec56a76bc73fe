"""`cpack -G DEB`: a Debian package with the right name, Depends and contents, whose command runs."""
import glob
import os
import re
import subprocess
import tempfile
import unittest

import common
from install_test import CLEAN_ENV, check_run, headers_under, resolved, soname, version


def names(field):
    """Package names in a Depends-style field: "a (>= 1), b | c" -> {a, b, c}."""
    return {re.split(r"[\s(:]", alt.strip())[0]
            for dep in field.split(",") for alt in dep.split("|") if alt.strip()}


def owners(libraries):
    """The Debian package holding each library file (dpkg -S, under the path, its target's path,
    or their /usr twins: Debian 12 merges /lib into /usr/lib); one dpkg call for all."""
    candidates = {}
    for library in libraries:
        paths = [library, os.path.realpath(library)]
        candidates[library] = paths + [p[4:] if p.startswith("/usr/") else "/usr" + p for p in paths]
    listing = subprocess.run(["dpkg", "-S"] + sorted({p for ps in candidates.values() for p in ps}),
                             capture_output=True, text=True).stdout
    package_of = {}
    for line in listing.splitlines():
        packages, _, path = line.rpartition(": ")
        package_of[path] = packages.split(",")[0].split(":")[0].strip()
    return {library: next((package_of[p] for p in paths if p in package_of),
                          "(no package holds %s)" % library)
            for library, paths in candidates.items()}


def installed_with(depends):
    """What installing `depends` installs: those packages, their dependencies, recursively, and
    the virtual names they provide (libspdlog1.10 provides libspdlog1.10-fmt9, the name its
    shlibs file asks dependents to use)."""
    needs, providers = {}, {}
    listing = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Provides}\t${Depends}, ${Pre-Depends}\n"],
                             capture_output=True, text=True).stdout
    for line in listing.splitlines():
        package, provides, dependencies = line.split("\t")
        needs[package] = names(dependencies)
        for name in names(provides):
            providers.setdefault(name, set()).add(package)
    seen, todo = set(), list(depends)
    while todo:
        package = todo.pop()
        if package not in seen:
            seen.add(package)
            todo += needs.get(package, set()) | providers.get(package, set())
    return seen


class Package(unittest.TestCase):
    """Builds the package once from the build folder the tests were given (nothing is rebuilt)."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="unitrain-deb-")
        cls.out = cls._tmp.name
        p = subprocess.run(["cpack", "-G", "DEB", "--config",
                            os.path.join(common.BUILD, "CPackConfig.cmake"), "-B", cls.out],
                           cwd=common.BUILD, capture_output=True, text=True, timeout=1800)
        cls.cpack = (p.returncode, p.stdout + p.stderr)
        cls.deb = os.path.join(cls.out, "unitrain_%s_amd64.deb" % ".".join(version()))
        cls.root = os.path.join(cls.out, "root")
        if os.path.isfile(cls.deb):
            subprocess.run(["dpkg-deb", "-x", cls.deb, cls.root], check=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def setUp(self):
        code, out = self.cpack
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.isfile(self.deb),
                        "no %s; cpack made %s\n%s" % (self.deb, os.listdir(self.out), out))

    def field(self, name):
        return check_run(self, ["dpkg-deb", "-f", self.deb, name]).strip()

    def test_depends_bring_every_library_the_binaries_load_and_openblas(self):
        depends = names(self.field("Depends"))
        # Made by dpkg-shlibdeps from the libraries linked, plus OpenBLAS named in package.cmake.
        # (Package names carry the library's version: libtorch1.13 on Debian 12, libtorch2.6 on 13.)
        for package in [r"libtorch\d", r"libyaml-cpp0\.\d", r"libfmt\d", "libc6", "libopenblas0-openmp",
                        "libsentencepiece0",  # from libunitrain_sentencepiece.so
                        "libpcre2-8-0", r"libutf8proc\d"]:  # tokenizer.json's regexes, Unicode
            self.assertTrue(any(re.fullmatch(package + r"[\d.]*(t64)?", d) for d in depends),
                            f"{package} in {sorted(depends)}")
        installed = installed_with(depends)
        loaded = []
        for binary in [os.path.join(self.root, "usr", "bin", "unitrain"),
                       os.path.join(self.root, "usr", "lib", soname())]:
            out = check_run(self, ["ldd", binary], env=CLEAN_ENV)
            loaded += re.findall(r"^\s*(\S+) => (/\S+)", out, re.M)
        self.assertTrue(any(name.startswith("libtorch_cpu") for name, _ in loaded), loaded)
        package_of = owners({path for name, path in loaded if not name.startswith("libunitrain")})
        for name, path in loaded:
            if name.startswith("libunitrain"):
                continue  # in this package
            self.assertTrue(package_of[path] in installed,
                          "%s (%s) is loaded, but installing Depends (%s) does not install it"
                          % (name, path, ", ".join(sorted(depends))))

    def test_contents_command_library_headers_cmake_and_pkg_config_files(self):
        listing = check_run(self, ["dpkg-deb", "-c", self.deb])
        files = set(re.findall(r"\s\./(\S+)$", listing, re.M))
        lib = "usr/lib"
        for path in ["usr/bin/unitrain", "usr/libexec/unitrain/unitrain", "%s/%s" % (lib, soname()), "%s/libunitrain.so" % lib,
                     "%s/libunitrain_sentencepiece.so" % lib,
                     "%s/cmake/unitrain/unitrainConfig.cmake" % lib,
                     "%s/cmake/unitrain/unitrainTargets.cmake" % lib,
                     "%s/pkgconfig/unitrain.pc" % lib,
                     "usr/share/bash-completion/completions/unitrain"]:
            self.assertTrue(path in files or path + " ->" in listing, "%s not in\n%s" % (path, listing))
        headers = headers_under(os.path.join(common.SOURCE, "src", "unitrain"))
        self.assertIn("engine/trainer.h", headers)
        for header in headers:
            self.assertIn("usr/include/unitrain/" + header, files)

    def test_extracted_command_runs_with_its_own_library(self):
        exe = os.path.join(self.root, "usr", "bin", "unitrain")
        program = os.path.join(self.root, "usr", "libexec", "unitrain", "unitrain")
        self.assertEqual(resolved(program, "libunitrain.so", CLEAN_ENV),
                         os.path.join(self.root, "usr", "lib", soname()))
        out = check_run(self, [exe, "--version"], env=CLEAN_ENV)
        self.assertIn("unitrain " + ".".join(version()), out)
        out = check_run(self, [exe, "list"], env=CLEAN_ENV)
        self.assertIn("mlp", out)


if __name__ == "__main__":
    common.main()
