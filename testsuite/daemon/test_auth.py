# SPDX-License-Identifier: GPL-2.0-or-later
"""MUNGE authentication and authorisation across users."""
import os
import signal
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
    deadline = time.time() + 15             # until munged has exited
    while os.path.exists("/proc/%d" % daemon.munge.pid):
        assert time.time() < deadline, "munged still running"
        time.sleep(0.02)
    st, e = err(daemon.request("GET", "/v1/status", cred=cred))
    assert st == 503


# ---- connection-bound sessions (doc/api.md "Sessions")
def open_session(d, conn, uid, path="/v1/status"):
    """A MUNGE request on conn that asks for a session; returns (status, token, ttl)."""
    conn.request("GET", path, headers={"Authorization": "MUNGE " + d.munge.cred("GET", path,
                                                                              uid=uid),
                                       "Harmonia-Session": "open"})
    resp = conn.getresponse()
    resp.read()
    hdr = resp.getheader("Harmonia-Session")
    if not hdr:
        return resp.status, None, None
    tok, _, ttl = hdr.partition("; ttl=")
    return resp.status, tok, float(ttl)


def by_session(d, conn, tok, method, path, body=None):
    return err(d.request(method, path, body, auth=False, conn=conn,
                         headers={"Authorization": "Session " + tok}))


def test_session_authenticates_its_connection_as_its_user(daemon):
    register(daemon, "s1", uid=USER1)
    c = daemon.conn()
    st, tok, ttl = open_session(daemon, c, USER1)
    assert st == 200 and len(tok) == 32 and int(tok, 16) >= 0 and ttl == 300
    # the next requests on this connection: no credential, the same user's rights
    st, js = daemon.request("GET", "/v1/status", auth=False, conn=c,
                            headers={"Authorization": "Session " + tok})
    assert st == 200 and js["caller"]["uid"] == USER1 and js["caller"]["admin"] is False
    st, _ = by_session(daemon, c, tok, "GET", "/v1/jobs/s1")
    assert st == 200
    p = daemon.ok("POST", "/v1/jobs/s1/phases", {"volume": "1GiB"}, auth=False, conn=c,
                  headers={"Authorization": "Session " + tok})
    st, _ = by_session(daemon, c, tok, "POST", "/v1/phases/%d/finish" % p["id"])
    assert st == 200
    # no more than the user may do
    st, _ = by_session(daemon, c, tok, "DELETE", "/v1/jobs/s1")
    assert st == 403
    st, _ = by_session(daemon, c, tok, "POST", "/v1/jobs", {"id": "x", "uid": USER1})
    assert st == 403
    # munged decoded one credential for all of that (plus the registration's)
    assert daemon.metric('harmonia_api_auth_total{scheme="session"}') == 6
    assert daemon.metric("harmonia_api_sessions_opened_total") == 1
    c.close()


def test_session_token_means_nothing_elsewhere(daemon):
    c1, c2 = daemon.conn(), daemon.conn()
    _, tok, _ = open_session(daemon, c1, USER1)
    # another connection (a token read off the wire, or a proxy mixing users)
    st, e = by_session(daemon, c2, tok, "GET", "/v1/status")
    assert st == 401 and "no session on this connection" in e["message"]
    assert e["field"] == "Authorization"
    # another connection with its own session does not accept the first one's token
    _, tok2, _ = open_session(daemon, c2, USER2)
    assert tok2 != tok
    st, e = by_session(daemon, c2, tok, "GET", "/v1/status")
    assert st == 401 and "does not match" in e["message"]
    st, js = daemon.request("GET", "/v1/status", auth=False, conn=c2,
                            headers={"Authorization": "Session " + tok2})
    assert st == 200 and js["caller"]["uid"] == USER2
    # malformed tokens
    for bad in ("", "abc", tok + "0", "x" * 32 + " "):
        st, e = by_session(daemon, c1, bad, "GET", "/v1/status")
        assert st == 401, bad
    # the session ends with its connection: a new connection starts without one
    c1.close()
    c3 = daemon.conn()
    st, e = by_session(daemon, c3, tok, "GET", "/v1/status")
    assert st == 401 and "no session on this connection" in e["message"]
    # a MUNGE request that does not ask for a session gets no token
    c3.request("GET", "/v1/status",
               headers={"Authorization": "MUNGE " + daemon.munge.cred("GET", "/v1/status")})
    resp = c3.getresponse()
    resp.read()
    assert resp.status == 200 and resp.getheader("Harmonia-Session") is None
    for c in (c2, c3):
        c.close()


def test_session_expires_and_can_be_renewed(make_daemon):
    d = make_daemon(auth={"session_ttl": "1s"})
    c = d.conn()
    _, tok, ttl = open_session(d, c, USER1)
    assert ttl == 1
    assert by_session(d, c, tok, "GET", "/v1/status")[0] == 200
    time.sleep(1.3)
    st, e = by_session(d, c, tok, "GET", "/v1/status")
    assert st == 401 and "expired" in e["message"]
    # a refused request does not close the connection: a credential renews it
    st, tok2, _ = open_session(d, c, USER1)
    assert st == 200 and tok2 != tok
    assert by_session(d, c, tok2, "GET", "/v1/status")[0] == 200
    c.close()


def test_sessions_disabled(make_daemon):
    d = make_daemon(auth={"session_ttl": 0})
    c = d.conn()
    st, tok, _ = open_session(d, c, USER1)
    assert st == 200 and tok is None
    st, e = by_session(d, c, "0" * 32, "GET", "/v1/status")
    assert st == 401 and "disabled" in e["message"]
    c.close()


def test_session_ttl_live_reload(make_daemon):
    d = make_daemon(auth={"session_ttl": 0})
    d.conf["auth"]["session_ttl"] = "2m"
    d.write_config()
    d.proc.send_signal(signal.SIGHUP)
    for _ in range(100):
        c = d.conn()
        st, tok, ttl = open_session(d, c, USER1)
        c.close()
        if tok:
            break
        time.sleep(0.05)
    assert tok and ttl == 120
