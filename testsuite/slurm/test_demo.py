# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/demo-compare, the policy comparison of the demo, in its quick mode on the
shared private cluster: real bbio-bench jobs under bbmgrd, the table with all its
columns, the SVG chart, the bbsim comparison; bbmgrd's configuration and policy are
given back afterwards."""
import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

SRCDIR = os.environ.get("HARMONIA_SRCDIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
COMPARE = os.path.join(SRCDIR, "scripts", "demo-compare")
COLUMNS = ["policy", "mean s", "max s", "I/O s", "wait s", "stall s", "BW MB/s", "agg MB/s",
           "dil mean", "dil max", "SysEff%", "Upper%"]


@pytest.fixture
def private(cluster):
    if not cluster.cdir or not cluster.bbmgr_url:
        pytest.skip("scripts/demo-compare drives a testsuite/cluster/cluster directory "
                    "(--cluster-dir: rewrites its bbmgr.yaml, restarts its bbmgrd): "
                    "needs the private cluster with bbmgrd")
    if not os.path.exists(os.path.join(BUILDDIR, "sim", "bbsim")):
        pytest.skip("bbsim not built")
    return cluster


def test_demo_compare_quick(private, tmp_path):
    cluster = private
    os.chmod(str(tmp_path), 0o755)
    with open(os.path.join(cluster.cdir, "etc", "bbmgr.yaml")) as f:
        yaml_before = f.read()
    policy_before = cluster.bbmgr("policy")["id"]
    svg = str(tmp_path / "phases.svg")
    js = str(tmp_path / "figures.json")
    t0 = time.time()
    p = subprocess.run(["/usr/bin/python3", COMPARE, "--cluster-dir", cluster.cdir,
                        "--builddir", BUILDDIR, "--work", str(tmp_path / "work"),
                        "--svg", svg, "--json", js, "--quick", "--counts", "1,2"],
                       capture_output=True, text=True, timeout=240)
    took = time.time() - t0
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    lines = out.splitlines()
    # the table: a header with every column, one row per policy with a number per column
    head = [l for l in lines if l.startswith("policy ") and "SysEff%" in l]
    assert head, out
    for col in COLUMNS:
        assert col in head[0], (col, head[0])
    for pol in ("fairshare", "harmonia-maxbw"):
        rows = [l for l in lines if l.startswith(pol + " ") and len(l.split()) == len(COLUMNS)]
        assert rows, (pol, out)
        nums = [float(x) for x in rows[0].split()[1:]]
        assert nums[0] > 0 and nums[1] >= nums[0]          # mean <= max completion
        assert 0 < nums[9] <= 100                            # SysEfficiency in %
    assert "N = 2 concurrent jobs" in out
    # model against reality: one row per policy with the relative errors
    assert "Model against reality" in out
    assert [l for l in lines if l.startswith("fairshare ") and "%" not in l and
            len(l.split()) == 11], out
    # the chart exists and is XML with one rectangle per phase piece at least
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    rects = [e for e in root.iter() if e.tag.endswith("rect")]
    assert len(rects) > 2 * 2 * 2, len(rects)
    assert "Chart of the phases: " + svg in out
    # the title fits the chart's width (14 px bold: at most 9 px a character)
    width = float(root.get("width"))
    titles = [e.text for e in root.iter() if e.tag.endswith("text") and
              e.get("font-size") == "14"]
    assert titles and " ".join(titles).startswith("I/O phases of 2 concurrent"), titles
    for t in titles:
        assert 10 + 9 * len(t) <= width, (len(t), width, t)
    # the best policy is named at every N, not only the largest
    for n in (1, 2):
        assert [l for l in lines if l.startswith(
            "== At N=%d the best scheduling policy by median mean completion time is " % n)], out
    with open(js) as f:
        figures = json.load(f)
    assert sorted(figures["best"]) == ["1", "2"], figures["best"]
    # "with Slurm" is one run, from its first sbatch to its last job's end: at least
    # the longest job, less than the whole demo
    prog = [l for l in lines if " N=2: mean completion " in l]
    assert len(prog) == 2, out
    for l in prog:
        m = re.search(r"max ([0-9.]+) s; one run ([0-9.]+) s with Slurm \(first sbatch to "
                      r"the last job's end\)$", l)
        assert m, l
        assert float(m.group(1)) <= float(m.group(2)) < took, l
    for r in figures["results"]:
        assert len(r["runs"]) == 1 and r["runs"][0]["slurm_run"] == r["slurm_run"], r
    # bbmgrd got its configuration and its policy back
    with open(os.path.join(cluster.cdir, "etc", "bbmgr.yaml")) as f:
        assert f.read() == yaml_before
    assert cluster.bbmgr("policy")["id"] == policy_before
    assert took < 150, "quick mode (N = 1 and 2) took %.0f s" % took
