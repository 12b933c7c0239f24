# SPDX-License-Identifier: GPL-2.0-or-later
"""bbsim's command line, its JSON/CSV/table outputs (doc/design.md §5) and the Gantt chart."""
import csv
import io
import json
import os
import xml.etree.ElementTree as ET

import pytest

CONTRACT = ["policy", "sys_efficiency", "upper_limit", "dilation", "stretch_max",
            "utilization", "io_slowdown_mean", "fairness", "stall_time",
            "buffer_efficiency", "makespan", "events", "apps"]


def example(bbsim, name):
    return os.path.join(bbsim.examples, name)


def test_help(bbsim):
    p = bbsim("--help", check=0)
    assert "bbsim run WORKLOAD.yaml --policy ID" in p.stdout
    assert "bbsim gen iosets|gainaru|harmonia" in p.stdout
    p = bbsim("run", "--help", check=0)
    assert "--gantt OUT.svg" in p.stdout and "fairshare" in p.stdout
    for g in ("iosets", "gainaru", "harmonia"):
        p = bbsim("gen", g, "--help", check=0)
        assert "Usage: bbsim gen " + g in p.stdout


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["run"], ["run", "x.yaml"],
    ["run", "x.yaml", "--policy", "nosuchpolicy"],
    ["run", "x.yaml", "--policy", "fairshare", "--format", "xml"],
    ["run", "x.yaml", "--policy", "fairshare", "--seed", "-1"],
    ["run", "x.yaml", "--policy", "fairshare", "--bogus"],
    ["run", "x.yaml", "--policy"],
    ["gen"], ["gen", "nosuchgen"], ["gen", "iosets", "--bogus", "1"],
])
def test_usage_errors(bbsim, args):
    p = bbsim(*args)
    assert p.returncode == 2, (args, p.stderr)
    assert p.stderr


def test_gen_bad_values(bbsim):
    assert bbsim("gen", "iosets", "--nh", "abc").returncode == 1
    assert bbsim("gen", "gainaru", "--scenario", "huge").returncode == 1
    p = bbsim("gen", "harmonia", "--profile", "nosuch")
    assert p.returncode == 1 and "--profile must be" in p.stderr


def test_json_contract(bbsim):
    r = bbsim.json(example(bbsim, "small.yaml"), ["fairshare", "mindilation", "set10"])
    assert [e["policy"] for e in r["results"]] == ["fairshare", "mindilation", "set10"]
    for e in r["results"]:
        for k in CONTRACT:
            assert k in e, k
        assert e["buffer_efficiency"] is None      # no buffer tier
        assert 0 < e["sys_efficiency"] <= e["upper_limit"] + 1e-12
        assert e["dilation"] >= 1 - 1e-9 and e["stretch_max"] >= 1 - 1e-9
        assert 0 < e["fairness"] <= 1 + 1e-12
        assert isinstance(e["events"], int) and e["events"] > 0
        assert len(e["apps"]) == 5                 # viz has count: 3
        names = [a["name"] for a in e["apps"]]
        assert names == ["climate", "combustion", "viz#1", "viz#2", "viz#3"]
        for a in e["apps"]:
            for k in ("nodes", "release", "end", "phases", "dilation", "stretch",
                      "io_slowdown", "rho", "rho_tilde"):
                assert k in a
        assert e["apps"][0]["phases"] == 10


def test_table_and_csv(bbsim):
    wl = example(bbsim, "small.yaml")
    p = bbsim("run", wl, "--policy", "fairshare", "--policy", "fcfs", check=0)
    lines = p.stdout.splitlines()
    assert "SysEff%" in lines[1] and "Dilation" in lines[1]
    assert lines[2].startswith("fairshare") and lines[3].startswith("fcfs")
    p = bbsim("run", wl, "--policy", "fairshare", "--policy", "maxsyseff",
              "--format", "csv", check=0)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert [r["policy"] for r in rows] == ["fairshare", "maxsyseff"]
    assert float(rows[0]["sys_efficiency"]) > 0 and rows[0]["buffer_efficiency"] == ""


def test_seed_reproducible(bbsim):
    wl = example(bbsim, "variation.yaml")
    a = bbsim("run", wl, "--policy", "fairshare", "--format", "json", "--seed", "7",
              check=0).stdout
    b = bbsim("run", wl, "--policy", "fairshare", "--format", "json", "--seed", "7",
              check=0).stdout
    c = bbsim("run", wl, "--policy", "fairshare", "--format", "json", "--seed", "8",
              check=0).stdout
    strip = lambda s: [{k: v for k, v in e.items() if k not in ("wall_seconds", "decision_max_s")}
                       for e in json.loads(s)["results"]]
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


@pytest.mark.parametrize("gen", [["iosets", "--nh", "5"], ["iosets", "--eta", "0.5"],
                                 ["gainaru"], ["gainaru", "--scenario", "mixed",
                                               "--sens", "0.3"]])
def test_generators(bbsim, tmp_path, gen):
    a = bbsim("gen", *gen, "--seed", "3", check=0).stdout
    b = bbsim("gen", *gen, "--seed", "3", check=0).stdout
    c = bbsim("gen", *gen, "--seed", "4", check=0).stdout
    assert a == b and a != c
    f = tmp_path / "g.yaml"
    f.write_text(a)
    r = bbsim.json(f, ["fairshare"])
    assert r["results"][0]["events"] > 0


def test_iosets_shape(bbsim, tmp_path):
    f = bbsim.gen(tmp_path, "iosets", "--nh", "12", "--seed", "1")
    r = bbsim.json(f, ["fairshare"])
    apps = r["results"][0]["apps"]
    assert len(apps) == 60
    assert sum(a["name"].startswith("high") for a in apps) == 12
    assert sum(a["name"].startswith("medium") for a in apps) == 20
    assert sum(a["name"].startswith("low") for a in apps) == 28


def test_gantt(bbsim, tmp_path):
    svg = tmp_path / "g.svg"
    bbsim("run", example(bbsim, "small.yaml"), "--policy", "fairshare",
          "--policy", "fcfs", "--gantt", svg, check=0)
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg"
    texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
    for word in ("compute", "waiting", "share of B", "time (s)", "policy fairshare",
                 "policy fcfs", "climate", "viz#3"):
        assert word in texts, word
    rects = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
    assert len(rects) > 100
    assert any("I/O" in r.find(ns + "title").text for r in rects)
    assert any("waiting" in r.find(ns + "title").text for r in rects)  # fcfs waits


def test_gantt_labels_match_the_table(bbsim, tmp_path):
    """The chart's figures are the table's (JSON's), under the table's names with
    their definitions, and its header names the PFS's bandwidth as the PFS's and
    the buffer nodes' as theirs."""
    import re
    wl = example(bbsim, "small.yaml")
    svg = tmp_path / "g.svg"
    got = bbsim.json(wl, ["fairshare"])["results"][0]
    bbsim("run", wl, "--policy", "fairshare", "--gantt", svg, check=0)
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text or "" for t in ET.parse(svg).getroot().iter(ns + "text")]
    head = texts[0]
    assert "PFS B = " in head and "b = " in head, head
    panel = next(t for t in texts if t.startswith("policy fairshare"))
    m = re.search(r"SysEfficiency ([0-9.]+)%", panel)
    assert m and abs(float(m.group(1)) - 100 * got["sys_efficiency"]) < 0.01, panel
    m = re.search(r"Dilation ([0-9.]+) \(max over jobs of rho/rho~\)", panel)
    assert m and abs(float(m.group(1)) - got["dilation"]) < 1e-3, panel
    m = re.search(r"stretch \(time / time alone\) max ([0-9.]+)", panel)
    assert m and abs(float(m.group(1)) - got["stretch_max"]) < 1e-3, panel
    assert "upper limit" in panel


def test_gantt_buffer_header(bbsim, tmp_path):
    wl = tmp_path / "b.yaml"
    wl.write_text("platform:\n  nodes: 64\n  node_bandwidth: 1 GB/s\n"
                  "  bandwidth: 2 GB/s\n  buffers:\n    - name: bb[1-4]\n"
                  "      capacity: 200 GB\n      bandwidth: 3 GB/s\n"
                  "apps:\n  - name: a\n    nodes: 8\n    iterations: 2\n"
                  "    w: 10 s\n    io_volume: 10 GB\n")
    svg = tmp_path / "g.svg"
    bbsim("run", wl, "--policy", "fairshare", "--gantt", svg, check=0)
    ns = "{http://www.w3.org/2000/svg}"
    head = next(ET.parse(svg).getroot().iter(ns + "text")).text
    assert "PFS B = 2 GB/s" in head and "4 buffer nodes, 12 GB/s together" in head, head


def test_gantt_unwritable(bbsim):
    p = bbsim("run", example(bbsim, "small.yaml"), "--policy", "fairshare",
              "--gantt", "/nonexistent/dir/g.svg")
    assert p.returncode == 1 and "/nonexistent/dir/g.svg" in p.stderr


@pytest.mark.parametrize("name", ["small.yaml", "variation.yaml", "iosets.yaml",
                                  "gainaru.yaml"])
def test_examples_run(bbsim, name):
    r = bbsim.json(example(bbsim, name), ["fairshare", "fcfs", "mindilation",
                                          "maxsyseff", "minmax:0.5", "set10"])
    for e in r["results"]:
        assert e["sys_efficiency"] <= e["upper_limit"] + 1e-9
