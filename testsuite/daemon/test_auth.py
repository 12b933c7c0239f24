# SPDX-License-Identifier: GPL-2.0-or-later
"""MUNGE authentication and authorisation across users."""
import subprocess
import time

from conftest import SLURM_UID, USER1, USER2, BBMGRD, register


def err(st_js):
    st, js = st_js
    return st, (js.get("error", {}) if isinstance(js, dict) else {})


def test_credential_required(daemon):
    st, e = err(daemon.request("GET", "/v1/status", auth=False))
    assert st == 401 and "missing credential" in e["message"]
    st, e = err(daemon.request("GET", "/v1/status", auth=False,
                               headers={"Authorization": "Bearer abc"}))
    assert st == 401 and "scheme" in e["message"]
    st, e = err(daemon.request("GET", "/v1/status", cred="MUNGE:garbage:"))
    assert st == 401 and "invalid credential" in e["message"]


def test_replayed_credential_refused(daemon):
    cred = daemon.munge.cred("GET", "/v1/status", uid=USER1)
    assert daemon.request("GET", "/v1/status", cred=cred)[0] == 200
    st, e = err(daemon.request("GET", "/v1/status", cred=cred))
    assert st == 401 and "replayed" in e["message"]


def test_expired_credential_refused(daemon):
    cred = daemon.munge.cred("GET", "/v1/status", uid=USER1, ttl=1)
    time.sleep(2.2)
    st, e = err(daemon.request("GET", "/v1/status", cred=cred))
    assert st == 401 and "expired" in e["message"]


def test_credential_bound_to_request(daemon):
    cred = daemon.munge.cred("GET", "/v1/jobs", uid=SLURM_UID)
    st, e = err(daemon.request("DELETE", "/v1/jobs/1", cred=cred))
    assert st == 401 and "another request" in e["message"]


def test_two_users(daemon):
    register(daemon, "j1", uid=USER1)
    register(daemon, "j2", uid=USER2)
    # users cannot do what slurmctld does
    assert daemon.request("POST", "/v1/jobs", {"id": "x", "uid": USER1}, uid=USER1)[0] == 403
    assert daemon.request("POST", "/v1/jobs/j1/allocation", {"capacity": "1GiB"},
                          uid=USER1)[0] == 403
    assert daemon.request("DELETE", "/v1/jobs/j1", uid=USER1)[0] == 403
    assert daemon.request("POST", "/v1/jobs/j1/stage_in", {"source": "/a", "destination": "/b"},
                          uid=USER1)[0] == 403
    assert daemon.request("POST", "/v1/nodes/bb01/drain", uid=USER1)[0] == 403
    assert daemon.request("PUT", "/v1/policy", {"id": "fcfs"}, uid=USER1)[0] == 403
    # the owner acts on its job's phases and reads its state
    assert daemon.request("GET", "/v1/jobs/j1", uid=USER1)[0] == 200
    p1 = daemon.ok("POST", "/v1/jobs/j1/phases", {"volume": "1GiB"}, uid=USER1)
    # another user gets 403 on all of it
    assert daemon.request("GET", "/v1/jobs/j1", uid=USER2)[0] == 403
    assert daemon.request("POST", "/v1/jobs/j1/phases", {"volume": 1}, uid=USER2)[0] == 403
    assert daemon.request("GET", "/v1/phases/%d" % p1["id"], uid=USER2)[0] == 403
    assert daemon.request("POST", "/v1/phases/%d/finish" % p1["id"], uid=USER2)[0] == 403
    assert daemon.request("PUT", "/v1/jobs/j1/hints", {"priority": 10}, uid=USER2)[0] == 403
    assert daemon.request("GET", "/v1/jobs/j1/stage_in", uid=USER2)[0] == 403
    # listing shows each user their own jobs only
    assert [j["id"] for j in daemon.ok("GET", "/v1/jobs", uid=USER2)["jobs"]] == ["j2"]
    assert sorted(j["id"] for j in daemon.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"]) == \
        ["j1", "j2"]
    # root and SlurmUser may do everything
    assert daemon.request("GET", "/v1/phases/%d" % p1["id"], uid=0)[0] == 200
    assert daemon.request("POST", "/v1/phases/%d/finish" % p1["id"], uid=SLURM_UID)[0] == 200
    assert daemon.request("POST", "/v1/nodes/bb01/drain", uid=0)[0] == 200
    # finished phases (read from the database) keep their owner check
    assert daemon.request("GET", "/v1/phases/%d" % p1["id"], uid=USER2)[0] == 403
    assert daemon.request("GET", "/v1/phases/%d" % p1["id"], uid=USER1)[0] == 200
    # history: own user name only (uids here have no account: refused)
    assert daemon.request("GET", "/v1/history?user=root", uid=USER1)[0] == 403


def test_metrics_private(make_daemon):
    d = make_daemon(auth={"metrics_public": False})
    assert d.request("GET", "/metrics", auth=False)[0] == 401
    assert d.request("GET", "/metrics", uid=USER1)[0] == 403
    assert d.request("GET", "/metrics", uid=SLURM_UID)[0] == 200


def test_auth_none_only_on_loopback(make_daemon):
    d = make_daemon(start=False, auth={"type": "none"}, listen={"address": "0.0.0.0"})
    r = subprocess.run([BBMGRD, "--check", "-c", d.config], capture_output=True, text=True)
    assert r.returncode == 1 and "loopback" in r.stderr
    d = make_daemon(auth={"type": "none"})
    st, js = d.request("GET", "/v1/status", auth=False)
    assert st == 200 and js["auth"] == "none" and js["caller"]["admin"] is True


def test_munged_down_is_503(daemon):
    cred = daemon.munge.cred("GET", "/v1/status", uid=USER1)
    daemon.munge.stop()
    time.sleep(0.3)
    st, e = err(daemon.request("GET", "/v1/status", cred=cred))
    assert st == 503
