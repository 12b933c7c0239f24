# SPDX-License-Identifier: GPL-2.0-or-later
"""Directions of the papers' results that hold on bbsim's generated workloads
(fixed seeds, means over seeds).  Only directions that genuinely hold are asserted;
doc/reproductions.md lists the figures, including the claims that do not hold here.
"""
import pytest

import repro

GSEEDS = range(1, 11)
ISEEDS = range(1, 9)
NH = [0, 10, 20, 30, 40]
ETAS = [0.0, 0.1, 0.25, 0.5, 1.0]
TOL = 1e-6


@pytest.fixture(scope="module", params=list(repro.GAINARU_SCENARIOS))
def gainaru(request, bbsim):
    mean, runs = repro.gainaru(request.param, GSEEDS)
    return request.param, mean, runs


@pytest.fixture(scope="module")
def iosets(bbsim):
    pols = ["fairshare", "fcfs", "set10"]
    return {nh: repro.iosets(nh, ISEEDS, pols)[0] for nh in NH}


@pytest.fixture(scope="module")
def eta(bbsim):
    pols = ["fairshare", "set10"]
    return {e: repro.iosets_eta(e, ISEEDS, pols)[0] for e in ETAS}


def test_upper_limit(gainaru):
    _, _, runs = gainaru
    for r in runs:
        for e in r:
            assert e["sys_efficiency"] <= e["upper_limit"] + 1e-9, e["policy"]
            assert e["dilation"] >= 1 - 1e-9


def test_mindilation_vs_maxsyseff(gainaru):
    sc, m, _ = gainaru
    assert m["mindilation"]["dilation"] < m["maxsyseff"]["dilation"], sc
    # mindilation beats congestion (fairshare) on its own objective
    assert m["mindilation"]["dilation"] < m["fairshare"]["dilation"], sc
    if sc == "mixed-0.35":
        # Fig. 6c; on the 20% mixes the SysEfficiency gap is within noise (see doc)
        assert m["maxsyseff"]["sys_efficiency"] > m["mindilation"]["sys_efficiency"]
    if sc in ("mixed-0.35", "large-0.2"):
        assert m["maxsyseff"]["sys_efficiency"] > m["fairshare"]["sys_efficiency"]


# minmax:0.75 falls just outside the bracket on these mixes (SysEfficiency up to
# 0.2 points below both ends on the 20% mixes): reported in doc/reproductions.md.
@pytest.mark.parametrize("gamma", ["0.25", "0.5"])
def test_minmax_between(gainaru, gamma):
    sc, m, _ = gainaru
    mm = m["minmax:" + gamma]
    for k in ("dilation", "sys_efficiency"):
        lo = min(m["mindilation"][k], m["maxsyseff"][k])
        hi = max(m["mindilation"][k], m["maxsyseff"][k])
        assert lo - TOL <= mm[k] <= hi + TOL, (sc, gamma, k, lo, mm[k], hi)


def test_priority_no_better(gainaru):
    sc, m, _ = gainaru
    assert m["mindilation-priority"]["dilation"] >= m["mindilation"]["dilation"] - TOL
    assert (m["maxsyseff-priority"]["sys_efficiency"]
            <= m["maxsyseff"]["sys_efficiency"] + TOL)
    assert (m["minmax:0.5-priority"]["sys_efficiency"]
            <= m["minmax:0.5"]["sys_efficiency"] + TOL)


def set10_beats_fairshare(iosets, metric, up_to_nh):
    """set10's metric is below fairshare's in every IO-Sets run with NH <= up_to_nh,
    and on average over all of them."""
    for nh in NH:
        if nh <= up_to_nh:
            assert iosets[nh]["set10"][metric] < iosets[nh]["fairshare"][metric], nh
    mean = lambda p: sum(iosets[nh][p][metric] for nh in NH) / len(NH)
    assert mean("set10") < mean("fairshare")


def test_set10_stretch(iosets):
    for nh in NH:
        m = iosets[nh]
        # exclusive access is the worst on max stretch; set10 never worse than it
        assert m["fairshare"]["stretch_max"] < m["fcfs"]["stretch_max"], nh
        assert m["set10"]["stretch_max"] < m["fcfs"]["stretch_max"], nh
    set10_beats_fairshare(iosets, "stretch_max", 20)


def test_set10_io_slowdown(iosets):
    set10_beats_fairshare(iosets, "io_slowdown_mean", 30)


def test_eta_noise(eta):
    for e in ETAS:
        m = eta[e]
        assert m["set10"]["io_slowdown_mean"] < m["fairshare"]["io_slowdown_mean"], e
        if e <= 0.25:
            assert m["set10"]["stretch_max"] < m["fairshare"]["stretch_max"], e
