# SPDX-License-Identifier: GPL-2.0-or-later
"""Every policy id libhsched lists (bbsim run --help) runs in bbsim on workloads with
and without buffers and its metrics appear in the JSON; the policies that plan ahead
report their schedules (period, computation time; DP placements), auto its epochs;
runs are deterministic."""
import json

import pytest

ALL = ["fairshare", "fcfs", "static", "roundrobin", "roundrobin-priority",
       "mindilation", "mindilation-priority", "maxsyseff", "maxsyseff-priority",
       "minmax:0.5", "minmax:0.5-priority", "set10", "set:2", "set-fairshare",
       "priority-sharing", "periodic-throu", "periodic-cong", "persched",
       "harmonia-maxbw", "harmonia-minstall", "harmonia-fairness",
       "harmonia-buffer-eff", "harmonia-priority", "auto"]
PERIODIC = ["periodic-throu", "periodic-cong", "persched"]
CONTRACT = ["policy", "sys_efficiency", "upper_limit", "dilation", "stretch_max",
            "utilization", "io_slowdown_mean", "fairness", "stall_time",
            "buffer_efficiency", "makespan", "events", "apps"]
NOWALL = ("wall_seconds", "schedule_compute_s", "schedule_compute_max_s",
          "dp_decision_s_mean", "decision_max_s")


@pytest.fixture(scope="module", params=["plain", "buffers"])
def workload(request, bbsim, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    if request.param == "plain":
        return bbsim.gen(d, "gainaru", "--large", "4", "--horizon", "5000s",
                         "--seed", "2")
    return bbsim.gen(d, "harmonia", "--instances", "6", "--iterations", "4",
                     "--seed", "2")


def test_all_is_every_listed_id(bbsim):
    """ALL is the list bbsim's help prints (libhsched's ids), parameters filled in."""
    p = bbsim("run", "--help", check=0)
    line = [l for l in p.stdout.splitlines()
            if l.startswith("Policy ids known to libhsched:")]
    assert len(line) == 1, p.stdout
    ids = line[0].split(":", 1)[1].split()
    ids = [i.replace("<gamma>", "0.5").replace("<base>", "2") for i in ids]
    assert ids == ALL


def test_every_policy_runs(bbsim, workload):
    d = bbsim.json(workload, ALL)
    assert [r["policy"] for r in d["results"]] == ALL
    plain = "buffers" not in d["platform"]
    for r in d["results"]:
        for k in CONTRACT:
            assert k in r, (r["policy"], k)
        assert r["sys_efficiency"] <= r["upper_limit"] + 1e-9
        assert (r["buffer_efficiency"] is None) == plain
        if r["policy"] in PERIODIC:
            assert r["period"] > 0 and r["schedule_compute_s"] >= 0
            assert r["schedules"] >= 1 and r["schedule_work"] > 0
        elif r["policy"].startswith("harmonia-"):
            assert r["schedules"] >= 1 and 0 <= r["dp_exact"] <= r["schedules"]
            assert r["dp_decision_s_mean"] >= 0
        elif r["policy"] == "auto":
            assert r["auto_epochs"] >= 1 and r["auto_policy"] in ALL
            assert "schedules" not in r and "period" not in r
        else:
            assert "schedules" not in r and "period" not in r


def test_deterministic(bbsim, workload):
    pols = PERIODIC + ["harmonia-maxbw", "harmonia-buffer-eff"]
    a = bbsim.json(workload, pols)
    b = bbsim.json(workload, pols)
    for d in (a, b):
        for r in d["results"]:
            for k in NOWALL:
                r.pop(k, None)
    assert a == b


def test_table_reports_schedules(bbsim, workload):
    p = bbsim("run", workload, "--policy", "persched", "--policy", "harmonia-maxbw",
              check=0)
    assert "persched: period " in p.stdout and "patterns computed in" in p.stdout
    assert "harmonia-maxbw: " in p.stdout and "DP placements" in p.stdout
