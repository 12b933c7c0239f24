# SPDX-License-Identifier: GPL-2.0-or-later
"""The burst-buffer tier in bbsim (doc/buffer-tier.md): runs with buffers, the JSON
fields, the device ordering (nvme < ssd < hdd), static against fairshare with
over-provisioning on the harmonia generator, earlier results unchanged (golden
file generated before the buffer tier), bad buffer/device input refused."""
import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden", "examples.json")
# The policies and seed the golden file was made with (before the buffer tier).
GOLDEN_POLICIES = ["fairshare", "fcfs", "static", "roundrobin", "mindilation",
                   "maxsyseff", "minmax:0.5", "mindilation-priority", "set10",
                   "set-fairshare", "priority-sharing"]

PLAT = ("platform:\n  nodes: 64\n  node_bandwidth: 1 GB/s\n  bandwidth: 2 GB/s\n")
BUF = ("  buffers:\n    - name: bb[1-4]\n      capacity: 200 GB\n"
       "      bandwidth: 2 GB/s\n      device: {dev}\n")
APPS = ("apps:\n  - name: a\n    nodes: 8\n    iterations: 6\n"
        "    w: {{dist: uniform, min: 10 s, max: 15 s}}\n    io_volume: 25 GB\n"
        "    count: 8\n")


def workload(tmp_path, dev="ssd", extra="", name="b.yaml"):
    f = tmp_path / name
    f.write_text(PLAT + extra + BUF.format(dev=dev) + APPS.format())
    return f


def test_golden_without_buffers(bbsim):
    """Platforms without buffers give bit-identical results (10 digits in JSON)."""
    with open(GOLDEN) as fh:
        golden = json.load(fh)
    for ex, want in sorted(golden.items()):
        got = bbsim.json(os.path.join(bbsim.examples, ex), GOLDEN_POLICIES,
                         "--seed", "7")
        for r in got["results"]:
            r.pop("wall_seconds", None)
            r.pop("decision_max_s", None)
        got["workload"] = ex
        assert got == want, ex


def test_run_with_buffers_json(bbsim, tmp_path):
    d = bbsim.json(workload(tmp_path), ["fairshare", "static", "fcfs"])
    assert d["platform"]["buffers"] == 4
    for r in d["results"]:
        assert 0 < r["buffer_efficiency"] <= 1
        assert r["if_mean"] >= 1 - 1e-9 and r["if_max"] >= r["if_mean"]
        assert r["buffer_full_time"] >= 0 and r["alloc_wait"] >= 0
        assert len(r["devices"]) == 4
        names = [x["name"] for x in r["devices"]]
        assert names == ["bb1", "bb2", "bb3", "bb4"]
        for x in r["devices"]:
            assert x["device"] == "ssd"
            assert 0 <= x["concurrency_mean"] <= x["concurrency_max"]
            assert x["bytes_written"] >= x["bytes_drained"] >= 0
            assert x["occupancy_max"] <= x["capacity"] * (1 + 1e-9)
        total = sum(x["bytes_written"] for x in r["devices"])
        assert abs(total - 8 * 6 * 25e9) < 1e-6 * total
        for a in r["apps"]:
            assert a["if_mean"] >= 1 - 1e-9 and a["if_max"] >= a["if_mean"] - 1e-12
            assert a["buffer_nodes"] >= 1
    pol = {r["policy"]: r for r in d["results"]}
    # static is DataWarp-like: one node each (no over-provisioning); the others x2
    assert all(a["buffer_nodes"] == 1 for a in pol["static"]["apps"])
    assert all(a["buffer_nodes"] == 2 for a in pol["fairshare"]["apps"])
    assert pol["fcfs"]["devices"][0]["concurrency_max"] == 1   # exclusive per node
    # table output shows the buffer block
    p = bbsim("run", workload(tmp_path), "--policy", "static", check=0)
    assert "burst buffers: 4 nodes" in p.stdout and "BufEff%" in p.stdout
    p = bbsim("run", workload(tmp_path), "--policy", "static", "--format", "csv",
              check=0)
    assert p.stdout.splitlines()[1].split(",")[9] != ""


def test_device_ordering(bbsim, tmp_path):
    """Same workload on nvme, ssd, hdd: If and completion time nvme < ssd < hdd."""
    out = {}
    for dev in ("nvme", "ssd", "hdd"):
        f = bbsim.gen(tmp_path, "harmonia", "--instances", "8", "--device", dev,
                      "--bandwidth", "8 GB/s", "--seed", "3", name=dev + ".yaml")
        out[dev] = {r["policy"]: r for r in
                    bbsim.json(f, ["static", "fairshare"])["results"]}
    for pol in ("static", "fairshare"):
        ifm = [out[d][pol]["if_mean"] for d in ("nvme", "ssd", "hdd")]
        comp = [sum(a["end"] - a["release"] for a in out[d][pol]["apps"])
                for d in ("nvme", "ssd", "hdd")]
        assert ifm[0] < ifm[1] < ifm[2], (pol, ifm)
        assert comp[0] < comp[1] < comp[2], (pol, comp)


def test_static_vs_overprovisioned(bbsim, tmp_path):
    """Harmonia's comparison point: fairshare routing phases over an
    over-provisioned allocation against static (DataWarp-like) nodes."""
    f = bbsim.gen(tmp_path, "harmonia", "--instances", "8", "--device", "hdd",
                  "--bandwidth", "8 GB/s", "--seed", "1")
    r = {x["policy"]: x for x in bbsim.json(f, ["static", "fairshare"])["results"]}
    mean_comp = {p: sum(a["end"] - a["release"] for a in r[p]["apps"]) / 8
                 for p in r}
    assert mean_comp["fairshare"] < mean_comp["static"]
    assert r["fairshare"]["if_mean"] < r["static"]["if_mean"]
    assert r["fairshare"]["stall_time"] < r["static"]["stall_time"]


def test_harmonia_generator(bbsim, tmp_path):
    for prof in ("compute", "balanced", "io", "only-io"):
        f = bbsim.gen(tmp_path, "harmonia", "--profile", prof, "--instances", "2",
                      "--seed", "5", name=prof + ".yaml")
        text = f.read_text()
        assert "buffers:" in text and "over_provisioning" in text
        d = bbsim.json(f, ["fairshare"])
        assert len(d["results"][0]["apps"]) == 2
    # same seed, same file
    a = bbsim("gen", "harmonia", "--seed", "9", check=0).stdout
    b = bbsim("gen", "harmonia", "--seed", "9", check=0).stdout
    assert a == b
    for bad in (["--instances", "9"], ["--instances", "1"], ["--profile", "x"],
                ["--device", "tape"], ["--over-provisioning", "0.5"]):
        p = bbsim("gen", "harmonia", *bad)
        assert p.returncode == 1, bad


def test_buffer_full_stall_in_gantt(bbsim, tmp_path):
    f = bbsim.gen(tmp_path, "harmonia", "--instances", "8", "--profile", "only-io",
                  "--seed", "2")
    svg = tmp_path / "g.svg"
    d = bbsim.json(f, ["static"], "--gantt", svg)
    assert d["results"][0]["buffer_full_time"] > 0
    text = svg.read_text()
    assert "buffer full (stall" in text and 'fill="url(#full)"' in text


def test_hostlist_and_count(bbsim, tmp_path):
    f = tmp_path / "h.yaml"
    f.write_text(PLAT + "  buffers:\n    - name: io[01-02,07]\n      capacity: 1 TB\n"
                 "      bandwidth: 1 GB/s\n    - name: x\n      count: 2\n"
                 "      capacity: 1 TB\n      bandwidth: 1 GB/s\n" + APPS.format())
    d = bbsim.json(f, ["fairshare"])
    assert [x["name"] for x in d["results"][0]["devices"]] == \
        ["io01", "io02", "io07", "x1", "x2"]


BAD = [
    ("bad_hostlist", "  buffers:\n    - name: bb[3-1]\n      capacity: 1 TB\n"
     "      bandwidth: 1 GB/s\n", "6:13: bad host list 'bb[3-1]': a range goes down"),
    ("unbalanced", "  buffers:\n    - name: bb[1-2\n      capacity: 1 TB\n"
     "      bandwidth: 1 GB/s\n", "6:13: bad host list 'bb[1-2': unbalanced '['"),
    ("count_mismatch", "  buffers:\n    - name: bb[1-2]\n      count: 3\n"
     "      capacity: 1 TB\n      bandwidth: 1 GB/s\n",
     "7:14: count is 3 but 'bb[1-2]' names 2 node(s)"),
    ("dup_node", "  buffers:\n    - name: bb[1-2]\n      capacity: 1 TB\n"
     "      bandwidth: 1 GB/s\n    - name: bb2\n      capacity: 1 TB\n"
     "      bandwidth: 1 GB/s\n", "9:13: duplicate buffer node 'bb2' (first at line 6)"),
    ("zero_capacity", "  buffers:\n    - name: bb\n      capacity: 0 GB\n"
     "      bandwidth: 1 GB/s\n", "7:17: capacity must be > 0"),
    ("no_bandwidth", "  buffers:\n    - name: bb\n      capacity: 1 GB\n",
     "6:7: missing key 'bandwidth' in buffers[0]"),
    ("msca1", "  devices:\n    - name: d\n      msca: [0.5, 1]\n",
     "7:14: 'msca' starts with MSCA(1), which is 0 by definition"),
    ("msca_neg", "  devices:\n    - name: d\n      msca: [0, -1]\n",
     "7:17: 'msca' values must be numbers > -1"),
    ("msca_read_long", "  devices:\n    - name: d\n      msca: [0]\n      msca_read: ["
     + ", ".join(["0"] * 17) + "]\n", "8:18: 'msca_read' has 17 values; at most 16"),
    ("device_no_curve", "  devices:\n    - name: d\n",
     "6:7: device 'd' needs 'msca'"),
    ("dup_device", "  devices:\n    - name: d\n      msca: [0]\n    - name: d\n"
     "      msca: [0]\n", "8:13: duplicate device 'd' (first at line 6)"),
    ("overprov", "  over_provisioning: 0.5\n  buffers:\n    - name: bb\n"
     "      capacity: 1 TB\n      bandwidth: 1 GB/s\n",
     "5:22: 'over_provisioning' must be a number in [1, 1000]"),
    ("overprov_no_buffers", "  over_provisioning: 2\n",
     "5:3: 'over_provisioning' needs 'buffers:'"),
]


@pytest.mark.parametrize("name,plat,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_buffer_input(bbsim, tmp_path, name, plat, msg):
    f = tmp_path / (name + ".yaml")
    f.write_text(PLAT + plat + APPS.format())
    p = bbsim("run", f, "--policy", "fairshare")
    assert p.returncode == 1, p.stdout
    assert msg in p.stderr, p.stderr
    assert str(f) + ":" in p.stderr


def test_bad_app_buffer_keys(bbsim, tmp_path):
    f = tmp_path / "a.yaml"
    f.write_text(PLAT + "apps:\n  - name: a\n    nodes: 8\n    iterations: 1\n"
                 "    w: 1 s\n    io_volume: 1 GB\n    buffer_capacity: 1 GB\n")
    p = bbsim("run", f, "--policy", "fairshare")
    assert p.returncode == 1
    assert "11:5: apps[0]: 'buffer_capacity' needs platform 'buffers:'" in p.stderr
    # a request larger than the whole tier is refused at the app's position
    f.write_text(PLAT + BUF.format(dev="nvme") + "apps:\n  - name: a\n    nodes: 8\n"
                 "    iterations: 1\n    w: 1 s\n    io_volume: 1 GB\n"
                 "    buffer_capacity: 2 TB\n")
    p = bbsim("run", f, "--policy", "fairshare")
    assert p.returncode == 1
    assert ":11:5: app 'a' cannot get buffer nodes even on an empty tier" in p.stderr
