# SPDX-License-Identifier: GPL-2.0-or-later
"""bbmgrd with policy.id auto (doc/policies.md, "auto"): it grants phases, and the
policy route and /metrics say which policy auto runs and why."""
import pytest

from conftest import SLURM_UID, USER1, register

GiB = 1 << 30


def test_auto_runs_and_is_exposed(make_daemon):
    d = make_daemon(policy={"id": "auto"}, platform={"pfs_bandwidth": "1 GB/s"},
                    nodes=[])
    pol = d.ok("GET", "/v1/policy", uid=USER1)
    assert pol["id"] == "auto" and pol["configured"] == "auto"
    for j in ("a", "b"):
        register(d, j, hints={"w_iter": "60s", "io_volume": "2GiB", "phases": 4})
    pa = d.ok("POST", "/v1/jobs/a/phases", {"volume": "1GiB"}, uid=USER1)
    pb = d.ok("POST", "/v1/jobs/b/phases", {"volume": "1GiB"}, uid=USER1)
    assert "granted" in (pa["state"], pb["state"])
    pol = d.ok("GET", "/v1/policy", uid=USER1)
    a = pol["auto"]
    assert a["epochs"] >= 1 and a["current"] in ("fcfs", "roundrobin", "mindilation",
                                                  "maxsyseff", "minmax:0.5", "set10",
                                                  "fairshare")
    assert a["reason"].startswith("t=") and a["current"] in a["reason"]
    assert d.metric('harmonia_policy_auto_info{current="%s"}' % a["current"]) == 1
    assert d.metric("harmonia_policy_auto_epochs_total") == a["epochs"]
    # the look ahead against the run: no job has ended yet, nothing checked
    assert a["lookahead"] == {"checked": 0, "error_max": None, "error_mean": None}
    assert d.metric("harmonia_policy_auto_lookahead_checked_total") == 0
    assert d.metric("harmonia_policy_auto_lookahead_error_max") == 0
    for p in (pa, pb):
        d.ok("POST", "/v1/phases/%d/finish" % p["id"], {"bytes": GiB}, uid=USER1)
    # a live change away from auto and back keeps the jobs
    assert d.ok("PUT", "/v1/policy", {"id": "fcfs"}, uid=SLURM_UID)["id"] == "fcfs"
    assert "auto" not in d.ok("GET", "/v1/policy", uid=USER1)
    assert d.ok("PUT", "/v1/policy", {"id": "auto"}, uid=SLURM_UID)["id"] == "auto"


def test_auto_checks_a_gone_job_against_its_look_ahead(make_daemon):
    """A job whose phases the hints give (phases: 1) is projected to end by auto's
    look ahead; once it is torn down and another job asks for a phase, auto
    checks that end against the end of the job's last phase (doc/policies.md,
    "The look ahead against the run"): GET /v1/policy and /metrics count it."""
    d = make_daemon(policy={"id": "auto"}, platform={"pfs_bandwidth": "1 GB/s"},
                    nodes=[])
    register(d, "a", hints={"w_iter": "1s", "io_volume": "1MiB", "phases": 1})
    register(d, "b", hints={"w_iter": "1s", "io_volume": "1MiB", "phases": 4})
    pa = d.ok("POST", "/v1/jobs/a/phases", {"volume": "1MiB"}, uid=USER1)
    d.ok("POST", "/v1/phases/%d/finish" % pa["id"], {"bytes": 1 << 20}, uid=USER1)
    d.ok("DELETE", "/v1/jobs/a", uid=SLURM_UID)
    d.ok("POST", "/v1/jobs/b/phases", {"volume": "1MiB"}, uid=USER1)
    la = d.ok("GET", "/v1/policy", uid=USER1)["auto"]["lookahead"]
    assert la["checked"] == 1, la
    assert la["error_max"] >= 0 and la["error_mean"] == la["error_max"], la
    assert d.metric("harmonia_policy_auto_lookahead_checked_total") == 1
    assert d.metric("harmonia_policy_auto_lookahead_error_max") == \
        pytest.approx(la["error_max"])
