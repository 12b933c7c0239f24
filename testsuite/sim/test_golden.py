# SPDX-License-Identifier: GPL-2.0-or-later
"""How testsuite/sim/golden/examples.json is made, and a few of its values
derived by hand.

The golden file holds, for every workload of sim/examples/, bbsim's JSON output
('bbsim run EXAMPLE --format json --seed 7' with the eleven policies of
GOLDEN_POLICIES, in that order), each run's 'wall_seconds' and 'decision_max_s'
(times measured, not results) removed and the
'workload' key set to the example's file name, all in one object keyed by file
name, written by json.dumps(..., indent=1, sort_keys=True).  make_golden() below
is that recipe; test_recipe_makes_the_file checks it gives the file byte for
byte, so a change of bbsim's results shows as a change of this file in review.

The values checked by hand come from the workload and the formulas of
doc/workload-format.md and doc/reproductions.md, not from bbsim:
  per phase, alone: io = io_volume / (nodes x node_bandwidth);
  io_dedicated = iterations x io; work = iterations x w; w_iter = w + io;
  rho = work / (work + io_dedicated);
  upper_limit = sum(nodes x rho) / platform nodes;
  end >= release + work + io_dedicated (equal when the job never waits).
"""
import json
import os

import pytest

from test_buffers import GOLDEN, GOLDEN_POLICIES


def make_golden(bbsim, examples):
    """The golden file's text, made as described above."""
    out = {}
    for ex in examples:
        got = bbsim.json(os.path.join(bbsim.examples, ex), GOLDEN_POLICIES, "--seed", "7")
        for r in got["results"]:
            r.pop("wall_seconds", None)
            r.pop("decision_max_s", None)   # a time, like wall_seconds
        got["workload"] = ex
        out[ex] = got
    return json.dumps(out, indent=1, sort_keys=True)


def test_recipe_makes_the_file(bbsim):
    with open(GOLDEN) as fh:
        text = fh.read()
    assert make_golden(bbsim, sorted(json.loads(text))) == text


# sim/examples/gainaru.yaml: 1056 nodes at 12.5 MB/s, a file system of 8 GB/s.
#   big:  512 nodes, 20 x (120 s + 160 GB): 512 x 12.5 MB/s = 6.4 GB/s, io = 25 s
#   mid:  256 nodes, 40 x (60 s + 40 GB), released at 15 s, two of them: 3.2 GB/s,
#         io = 12.5 s
#   tiny: 32 nodes, 100 x (20 s + 2 GB), released at 5 s: 0.4 GB/s, io = 5 s
HAND = {
    # name: (nodes, phases, release, bytes, io_dedicated, work, w_iter, rho)
    "big": (512, 20, 0.0, 20 * 160e9, 20 * 25.0, 20 * 120.0, 145.0, 2400 / 2900),
    "mid#1": (256, 40, 15.0, 40 * 40e9, 40 * 12.5, 40 * 60.0, 72.5, 2400 / 2900),
    "mid#2": (256, 40, 15.0, 40 * 40e9, 40 * 12.5, 40 * 60.0, 72.5, 2400 / 2900),
    "tiny": (32, 100, 5.0, 100 * 2e9, 100 * 5.0, 100 * 20.0, 25.0, 2000 / 2500),
}
UPPER = (512 * 2400 / 2900 + 2 * 256 * 2400 / 2900 + 32 * 0.8) / 1056


def approx(x):
    return pytest.approx(x, rel=1e-9)


@pytest.fixture(scope="module")
def gainaru():
    with open(GOLDEN) as fh:
        return json.load(fh)["gainaru.yaml"]


def test_gainaru_platform(gainaru):
    assert gainaru["platform"] == {"bandwidth": 8e9, "node_bandwidth": 12.5e6,
                                   "nodes": 1056}
    assert gainaru["seed"] == 7
    assert [r["policy"] for r in gainaru["results"]] == GOLDEN_POLICIES


def test_gainaru_apps_by_hand(gainaru):
    """What an application is, whatever the policy."""
    for r in gainaru["results"]:
        assert sorted(a["name"] for a in r["apps"]) == sorted(HAND), r["policy"]
        for a in r["apps"]:
            nodes, phases, release, nbytes, io, work, w_iter, rho = HAND[a["name"]]
            assert (a["nodes"], a["phases"]) == (nodes, phases), (r["policy"], a["name"])
            assert a["release"] == approx(release)
            assert a["bytes"] == approx(nbytes)
            assert a["io_dedicated"] == approx(io)
            assert a["work"] == approx(work)
            assert a["w_iter"] == approx(w_iter)
            # the file keeps 10 digits
            assert a["rho"] == pytest.approx(rho, abs=1e-10)
            assert a["end"] >= release + work + io - 1e-6, (r["policy"], a["name"])


def test_gainaru_upper_limit_by_hand(gainaru):
    for r in gainaru["results"]:
        assert r["upper_limit"] == pytest.approx(UPPER, abs=1e-10), r["policy"]
        assert r["sys_efficiency"] <= UPPER + 1e-9, r["policy"]


def test_gainaru_fairshare_never_waits(gainaru):
    """Under fairshare the four never slow each other down (dilation 1): each
    ends at release + work + io_dedicated: 2900, 2915, 2915 and 2505 s."""
    r = next(r for r in gainaru["results"] if r["policy"] == "fairshare")
    ends = {a["name"]: a["end"] for a in r["apps"]}
    assert ends == {"big": approx(2900.0), "mid#1": approx(2915.0),
                    "mid#2": approx(2915.0), "tiny": approx(2505.0)}
    assert r["makespan"] == approx(2915.0)
