# SPDX-License-Identifier: GPL-2.0-or-later
"""auto's look ahead judges the candidates the way a finite run is judged
(doc/policies.md, "auto"): on Gainaru's large mixes, where mindilation is the best
policy on both SysEff and Dilation, auto stays within the goal of
doc/reproductions.md ("auto against every policy") of the best fixed policy.

Both mixes below made the previous auto switch to fcfs, roundrobin or fairshare
part-way (Dilation 1.21 against mindilation's 1.09 on the first): its copies of the
live jobs forgot their history, so the simulated mindilation ranked them on a
rho and rho~ of one phase."""
import re

import pytest

POLICIES = ["mindilation", "fcfs", "roundrobin", "fairshare", "maxsyseff", "auto"]


def assert_goal(results):
    """auto's Dilation within 1.05 x the lowest of the run, and its SysEff at least
    0.98 x the highest among the policies within that bound; returns auto's."""
    res = {r["policy"]: r for r in results}
    dmin = min(r["dilation"] for r in res.values())
    smax = max(r["sys_efficiency"] for r in res.values()
               if r["dilation"] <= 1.05 * dmin)
    a = res["auto"]
    assert a["dilation"] <= 1.05 * dmin, (a["dilation"], dmin, a["auto_reason"])
    assert a["sys_efficiency"] >= 0.98 * smax, (a["sys_efficiency"], smax,
                                                a["auto_reason"])
    return a


def assert_fairshare_bound(results):
    """auto's SysEff at least 0.95 x fairshare's, its Dilation at most 1.05 x."""
    res = {r["policy"]: r for r in results}
    a, f = res["auto"], res["fairshare"]
    assert a["dilation"] <= 1.05 * f["dilation"], (a["dilation"], f["dilation"],
                                                   a["auto_reason"])
    assert a["sys_efficiency"] >= 0.95 * f["sys_efficiency"], (
        a["sys_efficiency"], f["sys_efficiency"], a["auto_reason"])


@pytest.mark.parametrize("ratio,seed", [("0.2", 4), ("0.2", 8), ("0.35", 7),
                                        ("0.35", 10)])
def test_auto_meets_the_goal_on_gainaru(bbsim, tmp_path, ratio, seed):
    w = bbsim.gen(tmp_path, "gainaru", "--scenario", "large", "--io-ratio", ratio,
                  "--seed", seed)
    a = assert_goal(bbsim.json(w, POLICIES)["results"])
    assert a["auto_policy"] == "mindilation", a["auto_reason"]


def test_auto_is_deterministic_with_buffers(bbsim, tmp_path):
    """The look ahead runs on the buffer tier too; two runs give the same bits."""
    w = bbsim.gen(tmp_path, "harmonia", "--instances", "6", "--seed", "3")
    a = bbsim.json(w, ["auto"])["results"][0]
    b = bbsim.json(w, ["auto"])["results"][0]
    for k in ("sys_efficiency", "dilation", "auto_policy", "auto_reason",
              "auto_switches"):
        assert a[k] == b[k]
    assert a["auto_epochs"] >= 1


@pytest.mark.parametrize("pset", range(1, 11))
def test_auto_looks_ahead_as_the_run_goes_on_persched_sets(bbsim, tmp_path, pset):
    """PerSched's sets repeat their hints exactly: every job end that auto's look
    ahead projected under the policy it then ran is the run's (doc/policies.md,
    "auto", "The look ahead against the run").  Sets 1 and 4 missed by 5.8 % and
    0.02 % of the time left: the copy reported a compute of next request minus
    compute start, which rounds off the w the run reports, and identical jobs
    broke their ties the other way."""
    w = bbsim.gen(tmp_path, "persched", "--set", pset)
    a = bbsim.json(w, ["auto"])["results"][0]
    assert a["auto_lookahead_checked"] >= 1, a
    assert a["auto_lookahead_error_max"] <= 1e-6, a


HARMONIA = ["static", "harmonia-maxbw", "harmonia-minstall", "harmonia-fairness",
            "harmonia-buffer-eff", "harmonia-priority", "fairshare", "fcfs",
            "roundrobin", "mindilation", "maxsyseff", "minmax:0.5", "set10", "auto"]


@pytest.mark.parametrize("instances,seed", [("6", 1), ("6", 5), ("8", 15)])
def test_auto_meets_the_goal_on_the_buffer_tier_at_the_hints(bbsim, tmp_path,
                                                            instances, seed):
    """When the jobs repeat their hints (every compute time at the middle of the
    benchmark's random range: scripts/repro-auto's harmonia-hint family), the
    look ahead's model is the run's, buffer nodes included: auto meets the goal
    against every policy, static and harmonia-* too.  8 instances, seed 15 needs
    the buffer nodes' live fill in the look ahead (they hold 800 GB of the
    1.6 TB written): with every simulation starting them empty, auto ended 2.8 %
    of SysEff below S* there."""
    w = bbsim.gen(tmp_path, "harmonia", "--instances", instances, "--seed", seed)
    text = re.sub(r"w: \{dist: uniform, min: ([0-9.]+) s, max: ([0-9.]+) s\}",
                  lambda m: f"w: {(float(m[1]) + float(m[2])) / 2:.6f} s",
                  w.read_text())
    assert "dist:" not in text
    w.write_text(text)
    assert_goal(bbsim.json(w, HARMONIA)["results"])


@pytest.mark.parametrize("seed", [16, 28, 74, 98])
def test_auto_keeps_fairshares_bound_on_the_buffer_tier_at_the_hints(
        bbsim, tmp_path, seed):
    """The Harmonia benchmark at 8 instances, every job at its hints: the look
    ahead's copy of a pending phase stays on the buffer nodes the run placed it
    on.  Placed again on the copy's state, the copies of a later epoch wrote to
    other nodes than the run: at t = 263 of seed 16 the copy of fairshare in
    force ended inst7 at 461 s where the run ends it at 421, so auto left
    fairshare for mindilation, and ended at 1.084 x fairshare's Dilation (seeds
    28, 74, 98: 1.059, 1.084, 1.104)."""
    w = bbsim.gen(tmp_path, "harmonia", "--instances", "8", "--seed", seed)
    text = re.sub(r"w: \{dist: uniform, min: ([0-9.]+) s, max: ([0-9.]+) s\}",
                  lambda m: f"w: {(float(m[1]) + float(m[2])) / 2:.6f} s",
                  w.read_text())
    assert "dist:" not in text
    w.write_text(text)
    res = bbsim.json(w, ["fairshare", "auto"])["results"]
    assert_fairshare_bound(res)
    # every job end the look ahead projected is the run's (0.75 x the time left
    # at the projection, at worst, on seed 16 before)
    a = [r for r in res if r["policy"] == "auto"][0]
    assert a["auto_lookahead_checked"] >= 4, a
    assert a["auto_lookahead_error_max"] <= 1e-6, a


# Seed 164 of the core's fuzzer (testsuite/unit/test_sim_fuzz, SIMFUZZ_DUMP=164),
# every job at constant hints: at a3's arrival auto switched from mindilation to
# set10, whose look ahead had a0 first, but the switch kept a3's 44 GB grant at its
# rate for 61 s more (a0's cycle is 1.1 s): Dilation 3.22 against fairshare's 1.99.
FUZZ_164 = """platform:
  nodes: 106
  node_bandwidth: 106859384 B/s
  bandwidth: 400599185 B/s
apps:
  - {name: a0, nodes: 16, iterations: 6, release: 69.676846644 s,
     w: 0.029916694 s, io_volume: 1905698899 B}
  - {name: a1, nodes: 27, iterations: 1, release: 45.844273744 s,
     w: 0.355493275 s, io_volume: 8141334 B}
  - {name: a2, nodes: 12, iterations: 1, release: 6.838863761 s,
     w: 0.642767380 s, io_volume: 737170718 B, priority: 8}
  - {name: a3, nodes: 51, iterations: 22, release: 19.978821291 s,
     w: 0.005507165 s, io_volume: 44291427531 B}
"""


def test_auto_is_never_far_worse_than_fairshare(bbsim, tmp_path):
    """The fairshare guard (doc/policies.md, "auto"): a switch whose kept grants
    would hold a job back for many of its cycles cuts them; auto's SysEff is then
    at least 0.95 x fairshare's and its Dilation at most 1.05 x."""
    w = tmp_path / "fuzz164.yaml"
    w.write_text(FUZZ_164)
    assert_fairshare_bound(bbsim.json(w, ["fairshare", "auto"])["results"])
