"""`unitrain report`: real runs reported, and each report rendered in headless Chromium (Debian's
chromium): the page runs its script without errors, the screenshot shows the charts in the runs'
colours, and the rendered DOM has each chart with a series per run and split."""
import html.parser
import json
import os
import shutil
import subprocess
import tempfile

from PIL import Image

import common
from common import run

DIGITS_YAML = os.path.join(common.SOURCE, "examples", "digits", "mlp.yaml")
PROFILE_FIXTURE = os.path.join(common.SOURCE, "tests", "report", "fixture", "run-a", "profile",
                               "summary.json")
# run_colour(0) and run_colour(1) of report_charts.cpp, as RGB.
RUN_COLOURS = [(0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B)]


class ReportDom(html.parser.HTMLParser):
    """What the rendered page holds: charts with their series, scripts, external references."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.charts = {}  # data-chart -> [(run, split, points)]
        self.sections = []
        self.external = []
        self.profile_cells = []
        self._chart = None
        self._in_profile = False
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "section":
            self.sections.append(a.get("id"))
            self._in_profile = a.get("id") == "profile"
        if tag == "svg" and "data-chart" in a:
            self._chart = a["data-chart"]
            self.charts[self._chart] = []
        if tag == "g" and a.get("class") == "series":
            self.charts[self._chart].append((a["data-run"], a["data-split"], int(a["data-points"])))
        if tag in ("link", "img", "iframe") or "src" in a or (tag != "a" and "href" in a):
            self.external.append((tag, a))
        if tag == "td" and self._in_profile:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "svg":
            self._chart = None
        if tag == "td" and self._cell is not None:
            self.profile_cells.append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def chromium():
    exe = shutil.which("chromium")
    if not exe:
        raise AssertionError("chromium is not installed; it is in scripts/lib.sh's UNITRAIN_PACKAGES: "
                             "bash -c 'source scripts/lib.sh; unitrain_install'")
    return exe


def render(page, work, width=1280, height=3200):
    """Renders `page` headless: (DOM after scripts ran, console output, screenshot path)."""
    base = [chromium(), "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--enable-logging=stderr", "--v=0", "--user-data-dir=" + os.path.join(work, "chromium"),
            "--window-size=%d,%d" % (width, height)]
    if os.geteuid() == 0:
        base.append("--no-sandbox")  # Chromium refuses to run as root otherwise
    url = "file://" + os.path.abspath(page)
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=300)
    assert dom.returncode == 0, dom.stderr
    png = os.path.splitext(page)[0] + ".png"
    shot = subprocess.run(base + ["--screenshot=" + png, url], capture_output=True, text=True,
                          timeout=300)
    assert shot.returncode == 0, shot.stderr
    return dom.stdout, dom.stderr + shot.stderr, png


def colour_pixels(image, rgb, tolerance=12):
    return sum(n for n, c in image.getcolors(maxcolors=1 << 24)
               if all(abs(c[i] - rgb[i]) <= tolerance for i in range(3)))


class Report(common.Case):
    @classmethod
    def setUpClass(cls):
        # Two real short runs of the digits example that differ in lr, logged every 5 steps.
        cls._work = tempfile.TemporaryDirectory(prefix="unitrain-report-")
        cls.work = cls._work.name
        for name, lr in (("digits-a", "2e-3"), ("digits-b", "5e-3")):
            code, out = run(["train", DIGITS_YAML, "--name", name, "--optimizer.lr", lr,
                             "--train.max_length", "4 epochs", "--train.log_every", "5 steps"],
                            cwd=cls.work)
            assert code == 0, out
        cls.a = os.path.join(cls.work, "runs", "digits-a")
        cls.b = os.path.join(cls.work, "runs", "digits-b")
        # The profiler's summary, as the lead's profiler writes it (docs/report.md).
        os.makedirs(os.path.join(cls.a, "profile"))
        shutil.copy(PROFILE_FIXTURE, os.path.join(cls.a, "profile", "summary.json"))

    @classmethod
    def tearDownClass(cls):
        cls._work.cleanup()

    def rendered(self, page):
        text, console, png = render(page, self.dir)
        self.assertNotIn("Uncaught", console)
        dom = ReportDom()
        dom.feed(text)
        self.assertEqual(dom.body.get("data-script"), "ran", "the page's script did not run to its end")
        self.assertEqual(dom.external, [], "the report must load nothing from elsewhere")
        image = Image.open(png).convert("RGB")
        self.assertEqual(image.size, (1280, 3200))
        self.assertGreater(len(image.getcolors(maxcolors=1 << 24)), 50, "blank screenshot: " + png)
        return dom, image

    def test_one_run(self):
        code, out = run(["report", self.a], cwd=self.dir)
        self.assertEqual(code, 0, out)
        page = os.path.join(self.a, "report.html")  # the default for one run
        self.assertIn("wrote " + page, out)
        dom, image = self.rendered(page)
        self.assertEqual(sorted(dom.charts), sorted(["loss", "acc", "loss_cross_entropy", "reg_l2", "top3",
                                                     "lr", "throughput"]))
        self.assertEqual(dom.charts["loss"][:2], [("digits-a", "train", dom.charts["loss"][0][2]),
                                                  ("digits-a", "val", 4)])  # validated each epoch
        with open(os.path.join(self.a, "metrics.jsonl")) as f:
            train_events = sum(1 for line in f if "train/loss" in json.loads(line))
        self.assertEqual(dom.charts["loss"][0][2], train_events)
        self.assertEqual(dom.charts["lr"], [("digits-a", "train", train_events)])
        self.assertEqual(dom.charts["throughput"][0][:2], ("digits-a", "train"))
        for section in ("runs", "results", "charts", "checkpoints", "profile", "config"):
            self.assertIn(section, dom.sections)
        self.assertIn("forward", dom.profile_cells)
        self.assertGreater(colour_pixels(image, RUN_COLOURS[0]), 500)

    def test_two_runs_overlaid(self):
        code, out = run(["report", self.a, self.b, "-o", "both.html"], cwd=self.dir)
        self.assertEqual(code, 0, out)
        dom, image = self.rendered(os.path.join(self.dir, "both.html"))
        for chart in ("loss", "acc", "top3"):
            series = [(r, s) for r, s, n in dom.charts[chart] if n > 0]
            self.assertEqual(series, [("digits-a", "train"), ("digits-a", "val"),
                                      ("digits-b", "train"), ("digits-b", "val")], chart)
        self.assertEqual([r for r, s, n in dom.charts["lr"]], ["digits-a", "digits-b"])
        self.assertEqual([r for r, s, n in dom.charts["throughput"]], ["digits-a", "digits-b"])
        for rgb in RUN_COLOURS:  # both runs' lines are drawn
            self.assertGreater(colour_pixels(image, rgb), 500, rgb)
        with open(os.path.join(self.dir, "both.html")) as f:
            page = f.read()
        differing = page[page.index("Keys that differ"):page.index("keys the same in every run")]
        self.assertIn("<td>optimizer.lr</td>", differing)
        self.assertNotIn("<td>seed</td>", differing)

    def test_a_run_in_progress_without_validation(self):
        partial = os.path.join(self.dir, "partial")
        shutil.copytree(self.a, partial, symlinks=True)
        os.remove(os.path.join(partial, "results", "summary.json"))
        with open(os.path.join(partial, "metrics.jsonl")) as f:
            lines = [line for line in f if "val/" not in line][:5]
        with open(os.path.join(partial, "metrics.jsonl"), "w") as f:
            f.write("".join(lines) + lines[-1][:20])  # the line being written, cut
        code, out = run(["report", partial], cwd=self.dir)
        self.assertEqual(code, 0, out)
        dom, _ = self.rendered(os.path.join(partial, "report.html"))
        self.assertEqual(dom.charts["loss"], [("digits-a", "train", 5)])
        with open(os.path.join(partial, "report.html")) as f:
            self.assertIn("unfinished", f.read())

    def test_bad_input_is_named(self):
        not_run = os.path.join(self.dir, "empty")
        os.makedirs(not_run)
        code, out = run(["report", not_run])
        self.assertEqual(code, 2, out)
        self.assertIn(not_run + " is not a run folder: it has no config.yaml", out)
        code, out = run(["report", self.a, os.path.join(self.dir, "missing")])
        self.assertEqual(code, 2, out)
        self.assertIn("missing is not a folder", out)
        keep = common.write(os.path.join(self.dir, "notes.txt"), "mine\n")
        code, out = run(["report", self.a, "-o", keep])
        self.assertEqual(code, 2, out)
        self.assertIn("is not a unitrain report", out)
        with open(keep) as f:
            self.assertEqual(f.read(), "mine\n")
        code, out = run(["report"])
        self.assertEqual(code, 2, out)


if __name__ == "__main__":
    common.main()
