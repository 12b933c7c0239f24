# SPDX-License-Identifier: GPL-2.0-or-later
"""Every class of bad workload is refused with "FILE:LINE:COL: reason" and exit 1;
random mutations of valid files never crash or hang bbsim."""
import random

import pytest

PLAT = "platform:\n  nodes: 512\n  node_bandwidth: 50 MB/s\n  bandwidth: 3 GB/s\n"
APP = "  - name: {n}\n    nodes: 10\n    iterations: 2\n    w: 10 s\n    io_volume: 1 GB\n"

CASES = [
    ("unknown_key", PLAT + "apps:\n" + APP.format(n="a") + APP.format(n="b")
     + "  - name: c\n    nodes: 10\n    foo: 1\n",
     "18:5: unknown key 'foo' in apps[2]"),
    ("unknown_platform_key", PLAT + "  speed: 3\napps: []\n",
     "5:3: unknown key 'speed' in platform"),
    ("zero_bandwidth", "platform:\n  nodes: 512\n  node_bandwidth: 50 MB/s\n"
     "  bandwidth: 0 GB/s\napps: []\n", "4:14: bandwidth must be > 0"),
    ("negative_bandwidth", "platform:\n  nodes: 512\n  node_bandwidth: -50 MB/s\n"
     "  bandwidth: 3 GB/s\n", "3:19: node_bandwidth must be > 0"),
    ("missing_unit", PLAT + "apps:\n  - name: a\n    nodes: 10\n    iterations: 2\n"
     "    w: 12\n    io_volume: 1 GB\n", "9:8: missing unit in '12'"),
    ("missing_unit_size", PLAT + "apps:\n  - name: a\n    nodes: 10\n"
     "    iterations: 2\n    w: 1 s\n    io_volume: 128.2\n",
     "10:16: missing unit in '128.2'"),
    ("missing_unit_bw", "platform:\n  nodes: 512\n  node_bandwidth: 50\n",
     "3:19: missing unit in '50'"),
    ("too_big", PLAT + "apps:\n  - name: x\n    nodes: 600\n    iterations: 2\n"
     "    w: 12 s\n    io_volume: 1 GB\n",
     "7:12: app 'x' needs 600 nodes but the platform has 512"),
    # together too: the model runs every job at once on its own
    # nodes, so 2 x 300 nodes on 512 would give SysEff above 1
    ("too_big_together", PLAT + "apps:\n  - name: x\n    nodes: 300\n"
     "    iterations: 2\n    w: 12 s\n    io_volume: 1 GB\n    count: 2\n",
     "7:12: apps need 600 nodes together with app 'x' (nodes x count, summed) but "
     "the platform has 512: every job keeps its own nodes for its whole run"),
    ("yaml_syntax", PLAT + "apps: [\n  - name: x\n",
     "6:3: YAML syntax error: "),
    ("yaml_tab", "platform:\n  nodes: 512\n\tbad: 1\n", "3:1: YAML syntax error: "),
    ("yaml_unclosed_quote", 'platform:\n  nodes: "512\n', "YAML syntax error: "),
    ("alias", "platform: &p\n  nodes: 1\napps: *p\n",
     "1:11: anchors and aliases are not supported"),
    ("not_a_mapping", "- 1\n- 2\n", "1:1: a workload must be a mapping"),
    ("missing_platform", "apps: []\n", "1:1: missing key 'platform'"),
    ("empty_apps", PLAT + "apps: []\n", "5:1: 'apps' is empty"),
    ("bad_int", PLAT + "apps:\n  - name: a\n    nodes: ten\n",
     "7:12: 'nodes' must be an integer, not 'ten'"),
    ("bad_dist", PLAT + "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
     "    w: {dist: normal, mean: 10 s}\n    io_volume: 1 GB\n",
     "9:8: missing key 'sd' in w"),
    ("dist_unknown_key", PLAT + "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
     "    w: {dist: uniform, min: 1 s, max: 2 s, mode: 1 s}\n    io_volume: 1 GB\n",
     "9:44: unknown key 'mode' in w"),
    ("list_length", PLAT + "apps:\n  - name: a\n    nodes: 1\n    iterations: 3\n"
     "    w: [1 s, 2 s]\n    io_volume: 1 GB\n",
     "9:8: apps[0]: 'w' has 2 values but iterations is 3"),
    ("duplicate_app", PLAT + "apps:\n" + APP.format(n="a") + APP.format(n="a"),
     "11:11: duplicate app name 'a' (first at line 6)"),
    ("bad_io", PLAT + "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
     "    w: 1 s\n    io_volume: 1 GB\n    io: append\n",
     "11:9: 'io' must be write or read"),
    ("empty", "", "1:1: empty workload"),
    ("buffers_unknown_device", PLAT + "  buffers:\n    - name: bb\n"
     "      capacity: 1 TB\n      bandwidth: 5 GB/s\n      device: tape\napps:\n"
     + APP.format(n="a"), "6:7: buffers[0]: unknown device 'tape'"),
]


@pytest.mark.parametrize("name,text,msg", CASES, ids=[c[0] for c in CASES])
def test_refused(bbsim, tmp_path, name, text, msg):
    f = tmp_path / (name + ".yaml")
    f.write_text(text)
    p = bbsim("run", f, "--policy", "fairshare")
    assert p.returncode == 1, p.stdout
    assert p.stdout == ""
    err = p.stderr.strip()
    assert err.startswith(f"bbsim: {f}:"), err
    assert msg in err, err
    if msg[0].isdigit():
        assert err.startswith(f"bbsim: {f}:{msg}"), err
    assert len(p.stderr.splitlines()) == 1


def test_missing_file(bbsim, tmp_path):
    p = bbsim("run", tmp_path / "nope.yaml", "--policy", "fairshare")
    assert p.returncode == 1 and "No such file" in p.stderr


def test_mutations_never_crash(bbsim, tmp_path):
    """A small in-suite fuzz: byte flips, truncations and splices of the examples
    (the libFuzzer harness testsuite/fuzz/fuzz_workload.c goes much further)."""
    import os
    seeds = [open(os.path.join(bbsim.examples, n), "rb").read()
             for n in sorted(os.listdir(bbsim.examples)) if n.endswith(".yaml")]
    rng = random.Random(1234)
    alphabet = b" :-[]{}\n\t#&*!|>'\"0123456789.,sGBMK/apnodesw_"
    f = tmp_path / "m.yaml"
    for i in range(60):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            op = rng.random()
            pos = rng.randrange(len(data))
            if op < 0.4:
                data[pos] = rng.choice(alphabet)
            elif op < 0.6:
                data = data[:pos]
            elif op < 0.8:
                data[pos:pos] = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
            else:
                data[pos:pos] = rng.choice(seeds)[: rng.randint(0, 200)]
            if not data:
                data = bytearray(b"x")
        f.write_bytes(bytes(data))
        p = bbsim("run", f, "--policy", "fairshare", timeout=20)
        assert p.returncode in (0, 1), (i, p.returncode, p.stderr, bytes(data)[:300])
        if p.returncode == 1:
            assert p.stderr.startswith("bbsim: "), p.stderr
