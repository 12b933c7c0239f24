# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole /v1 API against a real bbmgrd (doc/api.md)."""
import re
import threading
import time

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1, USER2, fcfs_one_job_holds_the_io, register
from test_mover import metrics

GiB = 1 << 30
TiB = 1 << 40


def test_status_and_version(daemon):
    st = daemon.ok("GET", "/v1/status", uid=USER1)
    assert st["policy"] == "fairshare"
    assert st["state"]["schema"] >= 2 and st["state"]["durable"] is True
    assert st["caller"] == {"uid": USER1, "gid": USER1, "admin": False}
    assert daemon.ok("GET", "/v1/status", uid=SLURM_UID)["caller"]["admin"] is True


def test_job_register_idempotent_and_hints(daemon):
    j = register(daemon, "100", user="alice", name="sim",
                 hints={"w_iter": "10m", "io_volume": "50GiB", "phases": 20, "io": "write",
                        "priority": 3})
    assert j["hints"]["w_iter"] == 600 and j["hints"]["io_volume"] == 50 * GiB
    assert j["state"] == "registered"
    again = daemon.ok("POST", "/v1/jobs", {"id": "100", "uid": USER1}, uid=SLURM_UID,
                      expect=(200,))
    assert again["id"] == "100"
    st, err = daemon.request("POST", "/v1/jobs", {"id": "100", "uid": USER2}, uid=SLURM_UID)
    assert st == 409 and err["error"]["field"] == "id"
    h = daemon.ok("PUT", "/v1/jobs/100/hints", {"w_iter": 120, "priority": 9}, uid=USER1)
    assert h["hints"]["w_iter"] == 120 and h["hints"]["priority"] == 9
    assert h["hints"]["io_volume"] == 50 * GiB
    assert daemon.ok("GET", "/v1/jobs/100", uid=USER1)["hints"]["priority"] == 9
    jobs = daemon.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"]
    assert [x["id"] for x in jobs] == ["100"]


def test_allocation_overprovision_and_limits(make_daemon):
    d = make_daemon(policy={"overprovision": 2.0})
    register(d, "1")
    a = d.ok("POST", "/v1/jobs/1/allocation", {"capacity": "200GiB", "pool": "nvme"},
             uid=SLURM_UID, expect=(201,))
    # 200 GiB fits one 1 TiB node; factor 2 spreads it on 2 nodes, 100 GiB each
    assert len(a["nodes"]) == 2 and a["capacity"] == 200 * GiB
    assert all(n["bytes"] == 100 * GiB and n["path"] == "/mnt/bb/1" for n in a["nodes"])
    # the same request again is idempotent; another one conflicts
    assert d.ok("POST", "/v1/jobs/1/allocation", {"capacity": 200 * GiB, "pool": "nvme"},
                uid=SLURM_UID, expect=(200,))["nodes"] == a["nodes"]
    st, e = d.request("POST", "/v1/jobs/1/allocation", {"capacity": "300GiB"}, uid=SLURM_UID)
    assert st == 409
    # asked node count is honoured; granularity rounds per node
    register(d, "2")
    b = d.ok("POST", "/v1/jobs/2/allocation", {"capacity": "10GiB", "nodes": 3, "pool": "nvme"},
             uid=SLURM_UID, expect=(201,))
    assert len(b["nodes"]) >= 3 and all(n["bytes"] % GiB == 0 for n in b["nodes"])
    # never fits -> 422; does not fit now -> 507
    register(d, "3")
    st, e = d.request("POST", "/v1/jobs/3/allocation", {"capacity": "5TiB", "pool": "nvme"},
                      uid=SLURM_UID)
    assert st == 422 and e["error"]["field"] == "capacity"
    st, e = d.request("POST", "/v1/jobs/3/allocation", {"capacity": "3.9TiB", "pool": "nvme"},
                      uid=SLURM_UID)
    assert st == 507, e
    st, e = d.request("POST", "/v1/jobs/3/allocation", {"capacity": "1GiB", "pool": "nope"},
                      uid=SLURM_UID)
    assert st == 404 and e["error"]["field"] == "pool"
    pools = {p["name"]: p for p in d.ok("GET", "/v1/pools", uid=USER1)["pools"]}
    assert pools["nvme"]["used"] == 200 * GiB + sum(n["bytes"] for n in b["nodes"])
    assert pools["capacity"]["free"] == 16 * TiB
    # release gives it back
    d.ok("DELETE", "/v1/jobs/1/allocation", uid=SLURM_UID)
    assert d.request("GET", "/v1/jobs/1/allocation", uid=USER1)[0] == 404
    pools = {p["name"]: p for p in d.ok("GET", "/v1/pools", uid=USER1)["pools"]}
    assert pools["nvme"]["used"] == sum(n["bytes"] for n in b["nodes"])


def test_phase_grant_finish(daemon):
    register(daemon, "7", nodes=4)
    daemon.ok("POST", "/v1/jobs/7/allocation", {"capacity": "100GiB"}, uid=SLURM_UID)
    p = daemon.ok("POST", "/v1/jobs/7/phases", {"volume": "10GiB", "direction": "write"},
                  uid=USER1, expect=(201,))
    assert p["state"] == "granted"
    g = p["grant"]
    assert g["bandwidth"] > 0 and g["paths"][0].endswith("/7") and g["target"] == "buffer"
    # one open phase per job
    st, e = daemon.request("POST", "/v1/jobs/7/phases", {"volume": 1}, uid=USER1)
    assert st == 409
    f = daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], {"bytes": 10 * GiB}, uid=USER1)
    assert f["state"] == "finished"
    # read back from the database; a retried finish is answered, not an error
    got = daemon.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)
    assert got["state"] == "finished" and got["bytes"] == 10 * GiB
    assert daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)["state"] == "finished"
    ph = daemon.ok("GET", "/v1/jobs/7/phases", uid=USER1)["phases"]
    assert [x["state"] for x in ph] == ["finished"]
    assert daemon.ok("GET", "/v1/jobs/7", uid=USER1)["phases_done"] == 1


def test_phase_members_of_several_nodes(daemon):
    """A phase shared by several nodes (doc/api.md): each node joins it and leaves it
    with its bytes; it stays open until the last leaves and records the sum; a node
    that left waits for the next phase; the owner only; at most 1024 members."""
    register(daemon, "8", nodes=2)
    p = daemon.ok("POST", "/v1/jobs/8/phases", {"volume": "2GiB", "member": "n1"},
                  uid=USER1, expect=(201,))
    assert p["state"] == "granted" and p["members"] == {"in": 1, "left": 0, "bytes": 0}
    join, fin = "/v1/phases/%d/join" % p["id"], "/v1/phases/%d/finish" % p["id"]
    assert daemon.ok("POST", join, {"member": "n2"}, uid=USER1)["members"]["in"] == 2
    assert daemon.ok("POST", join, {"member": "n2"}, uid=USER1)["members"]["in"] == 2
    for path in (join, fin):
        st, e = daemon.request("POST", path, {"member": "n3"}, uid=USER2)
        assert st == 403, e
    st, e = daemon.request("POST", join, {"member": "../x"}, uid=USER1)
    assert st == 400 and e["error"]["field"] == "member", e
    # n1 leaves: the phase stays open for n2
    f = daemon.ok("POST", fin, {"bytes": GiB, "member": "n1"}, uid=USER1)
    assert f["state"] == "granted", f
    assert f["members"] == {"in": 1, "left": 1, "bytes": GiB}
    f = daemon.ok("POST", fin, {"bytes": GiB, "member": "n1"}, uid=USER1)    # a retry
    assert f["members"] == {"in": 1, "left": 1, "bytes": GiB}
    assert daemon.ok("GET", "/v1/jobs/8", uid=USER1)["phase"]["state"] == "granted"
    st, e = daemon.request("POST", join, {"member": "n1"}, uid=USER1)
    assert st == 409 and "member n1 left phase" in e["error"]["message"], e
    # a node that waits for it to close is answered when n2 leaves
    result = {}
    th = threading.Thread(target=lambda: result.update(r=daemon.request(
        "GET", "/v1/phases/%d?wait=8&until=closed" % p["id"], uid=USER1)))
    th.start()
    wait_for(lambda: re.search(r"^harmonia_api_waiting_connections [1-9]", metrics(daemon),
                               re.M), "the long poll to wait in bbmgrd")
    f = daemon.ok("POST", fin, {"bytes": 3 * GiB, "member": "n2"}, uid=USER1)
    assert f["state"] == "finished" and f["bytes"] == 4 * GiB, f
    th.join(10)
    assert result["r"][0] == 200 and result["r"][1]["state"] == "finished", result
    got = daemon.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)
    assert got["state"] == "finished" and got["bytes"] == 4 * GiB
    st, e = daemon.request("POST", join, {"member": "n2"}, uid=USER1)
    assert st == 409 and "closed" in e["error"]["message"], e
    # a bounded number of members
    p = daemon.ok("POST", "/v1/jobs/8/phases", {"volume": 1, "member": "m0"}, uid=USER1,
                  expect=(201,))
    join = "/v1/phases/%d/join" % p["id"]
    for first in range(1, 1024, 40):      # batches within limits.max_body
        items = [{"method": "POST", "path": join, "body": {"member": "m%d" % i}}
                 for i in range(first, min(first + 40, 1024))]
        r = daemon.ok("POST", "/v1/batch", {"requests": items}, uid=USER1)["replies"]
        assert all(x["status"] == 200 for x in r), r[-1]
    assert r[-1]["body"]["members"]["in"] == 1024
    st, e = daemon.request("POST", join, {"member": "m1024"}, uid=USER1)
    assert st == 409 and "has 1024 members already" in e["error"]["message"], e
    # a finish without member ends it as ever
    f = daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], {"bytes": 1}, uid=USER1)
    assert f["state"] == "finished" and f["bytes"] == 1


def test_phase_member_rejoins_the_phase_it_left(daemon):
    """A member that left a phase still open joins it again with rejoin (a node whose
    detected phase ended too soon): it is in again, what it reported stays counted
    and its next leave adds its new bytes; without rejoin it is refused as ever,
    and a closed phase is refused either way."""
    register(daemon, "9", nodes=2)
    p = daemon.ok("POST", "/v1/jobs/9/phases", {"volume": "4GiB", "member": "n1"},
                  uid=USER1, expect=(201,))
    join, fin = "/v1/phases/%d/join" % p["id"], "/v1/phases/%d/finish" % p["id"]
    daemon.ok("POST", join, {"member": "n2"}, uid=USER1)
    daemon.ok("POST", fin, {"bytes": GiB, "member": "n1"}, uid=USER1)
    st, e = daemon.request("POST", join, {"member": "n1", "rejoin": False}, uid=USER1)
    assert st == 409 and "member n1 left phase" in e["error"]["message"], e
    st, e = daemon.request("POST", join, {"member": "n1", "rejoin": "yes"}, uid=USER1)
    assert st == 400 and e["error"]["field"] == "rejoin", e
    r = daemon.ok("POST", join, {"member": "n1", "rejoin": True}, uid=USER1)
    assert r["state"] == "granted" and r["members"] == {"in": 2, "left": 0, "bytes": GiB}, r
    assert r["grant"]["bandwidth"] > 0, r
    # a member in it already: rejoin changes nothing
    r = daemon.ok("POST", join, {"member": "n2", "rejoin": True}, uid=USER1)
    assert r["members"] == {"in": 2, "left": 0, "bytes": GiB}, r
    f = daemon.ok("POST", fin, {"bytes": GiB, "member": "n1"}, uid=USER1)
    assert f["state"] == "granted" and f["members"] == {"in": 1, "left": 1, "bytes": 2 * GiB}
    f = daemon.ok("POST", fin, {"bytes": 2 * GiB, "member": "n2"}, uid=USER1)
    assert f["state"] == "finished" and f["bytes"] == 4 * GiB, f
    st, e = daemon.request("POST", join, {"member": "n1", "rejoin": True}, uid=USER1)
    assert st == 409 and "closed" in e["error"]["message"], e


def test_fcfs_wait_and_long_poll(make_daemon):
    # no buffer tier and B = b: one job saturates the I/O system, fcfs serialises
    d, pa = fcfs_one_job_holds_the_io(make_daemon)
    t0 = time.time()
    pb = d.ok("POST", "/v1/jobs/b/phases", {"volume": "1GiB", "wait": 0.3}, uid=USER2)
    assert pb["state"] == "waiting" and time.time() - t0 >= 0.25
    result = {}

    def poll():
        result["r"] = d.request("GET", "/v1/phases/%d?wait=8" % pb["id"], uid=USER2)
        result["t"] = time.time()
    th = threading.Thread(target=poll)
    th.start()
    # the long poll is parked in the daemon (its gauge), and stays there
    wait_for(lambda: re.search(r"^harmonia_api_waiting_connections [1-9]", metrics(d),
                               re.M), "the long poll to wait in bbmgrd")
    assert th.is_alive()
    t_fin = time.time()
    d.ok("POST", "/v1/phases/%d/finish" % pa["id"], uid=USER1)
    th.join(10)
    st, got = result["r"]
    assert st == 200 and got["state"] == "granted"
    assert result["t"] - t_fin < 1.0
    sched = d.ok("GET", "/v1/schedule", uid=USER1)
    assert [p["state"] for p in sched["phases"]] == ["granted"]


def test_job_end_with_open_phase_grants_the_next(make_daemon):
    """A job ended while its phase is open leaves the scheduler, and the phase that
    waited behind it is granted by that same request (the decision after the end
    used to fail: the end read the scheduler's clock before closing the phase)."""
    d = make_daemon(policy={"id": "fcfs"}, platform={"pfs_bandwidth": "1 GB/s"}, nodes=[])
    for round_ in range(3):
        a, b = "ea%d" % round_, "eb%d" % round_
        register(d, a)
        register(d, b, uid=USER2)
        pa = d.ok("POST", "/v1/jobs/%s/phases" % a, {"volume": "1GiB"}, uid=USER1)
        assert pa["state"] == "granted"
        pb = d.ok("POST", "/v1/jobs/%s/phases" % b, {"volume": "1GiB"}, uid=USER2)
        assert pb["state"] == "waiting"
        d.ok("DELETE", "/v1/jobs/%s" % a, uid=SLURM_UID)
        assert d.ok("GET", "/v1/phases/%d" % pa["id"], uid=SLURM_UID)["state"] == "cancelled"
        assert d.ok("GET", "/v1/phases/%d" % pb["id"], uid=USER2)["state"] == "granted"
        d.ok("DELETE", "/v1/jobs/%s" % b, uid=SLURM_UID)
    text = d.log_text()
    assert "decide failed" not in text and "could not leave" not in text, text[-2000:]


def test_policy_change_keeps_jobs(make_daemon):
    # no buffer tier and B = b: one job saturates the I/O system, fcfs serialises
    d = make_daemon(policy={"id": "fcfs"}, platform={"pfs_bandwidth": "1 GB/s"}, nodes=[])
    register(d, "a")
    register(d, "b")
    pa = d.ok("POST", "/v1/jobs/a/phases", {"volume": "1GiB"}, uid=USER1)
    pb = d.ok("POST", "/v1/jobs/b/phases", {"volume": "1GiB"}, uid=USER1)
    assert pb["state"] == "waiting"
    pol = d.ok("PUT", "/v1/policy", {"id": "fairshare"}, uid=SLURM_UID)
    assert pol["id"] == "fairshare" and pol["override"] is True
    assert d.ok("GET", "/v1/phases/%d" % pb["id"], uid=USER1)["state"] == "granted"
    assert d.ok("GET", "/v1/phases/%d" % pa["id"], uid=USER1)["state"] == "granted"
    st, e = d.request("PUT", "/v1/policy", {"id": "no-such-policy"}, uid=SLURM_UID)
    assert st == 400 and e["error"]["field"] == "id"
    assert len(d.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"]) == 2
    # the override survives a restart
    d.restart()
    assert d.ok("GET", "/v1/policy", uid=USER1)["id"] == "fairshare"


def test_stage_in_timing_and_mover_api(make_daemon):
    # one buffer node: every allocation shares it
    d = make_daemon(pools=[{"name": "nvme", "granularity": "1GiB"}],
                    nodes=[{"names": "bb1", "capacity": "1TiB", "bandwidth": "1 GB/s",
                            "mount": "/mnt/bb", "pool": "nvme"}])
    register(d, "w")
    register(d, "s")
    register(d, "s2")
    # no allocation, no granted phase: a stage-in starts at once
    x = d.ok("POST", "/v1/jobs/s/stage_in", {"source": "/pfs/in", "destination": "/bb/s/in",
                                             "type": "directory", "size": "1GiB"},
             uid=SLURM_UID, expect=(201,))
    assert x["start"] - x["requested"] < 0.5
    d.ok("POST", "/v1/jobs/w/allocation", {"capacity": "100GiB"}, uid=SLURM_UID)
    d.ok("POST", "/v1/jobs/s2/allocation", {"capacity": "10GiB"}, uid=SLURM_UID)
    p = d.ok("POST", "/v1/jobs/w/phases", {"volume": "20GB"}, uid=USER1)
    assert p["state"] == "granted"
    bw = p["grant"]["bandwidth"]
    y = d.ok("POST", "/v1/jobs/s2/stage_in", {"source": "/pfs/a", "destination": "/bb/a"},
             uid=SLURM_UID)
    # shares the node with a granted phase: starts when that phase should end
    assert y["state"] == "queued"
    assert abs((y["start"] - p["grant"]["start"]) - 20e9 / bw) < 1.0
    # scheduled mode, no mover: the first one is done once its start passed
    for _ in range(50):
        s = d.ok("GET", "/v1/jobs/s/stage_in", uid=USER1)
        if s["state"] == "done":
            break
        time.sleep(0.05)
    assert s["state"] == "done" and s["transfers"][0]["type"] == "directory"
    sched = d.ok("GET", "/v1/schedule?horizon=60", uid=USER1)
    assert [t["id"] for t in sched["transfers"]] == [y["id"]]
    # the mover's API: progress, then an outcome
    u = d.ok("PUT", "/v1/transfers/%d" % y["id"],
             {"state": "running", "bytes_done": 100, "bytes_total": 1000}, uid=SLURM_UID)
    assert u["state"] == "running" and u["bytes_done"] == 100
    assert d.ok("GET", "/v1/jobs/s2/stage_in", uid=USER1)["state"] == "running"
    u = d.ok("PUT", "/v1/transfers/%d" % y["id"], {"state": "failed", "message": "EIO"},
             uid=SLURM_UID)
    assert u["state"] == "failed" and u["message"] == "EIO"
    assert d.ok("GET", "/v1/jobs/s2/stage_in", uid=USER1)["state"] == "failed"
    st, e = d.request("PUT", "/v1/transfers/%d" % y["id"], {"state": "done"}, uid=SLURM_UID)
    assert st == 409
    assert d.request("PUT", "/v1/transfers/%d" % y["id"], {"state": "done"}, uid=USER1)[0] == 403
    out = d.ok("POST", "/v1/jobs/s/stage_out", {"source": "/bb/s/out", "destination": "/pfs/o"},
               uid=SLURM_UID, expect=(201,))
    assert out["kind"] == "stage_out"


def test_stage_immediate(make_daemon):
    d = make_daemon(stage={"mode": "immediate"})
    register(d, "i")
    x = d.ok("POST", "/v1/jobs/i/stage_in", {"source": "/p/x", "destination": "/b/x"},
             uid=SLURM_UID)
    assert x["state"] == "done"


def test_persistent_buffers(daemon):
    b = daemon.ok("POST", "/v1/persistent", {"name": "ckpt", "capacity": "1TiB", "pool": "nvme"},
                  uid=USER1, expect=(201,))
    assert b["uid"] == USER1 and b["nodes"][0]["path"] == "/mnt/bb/persistent/ckpt"
    # created on behalf of a user by SlurmUser
    b2 = daemon.ok("POST", "/v1/persistent", {"name": "other", "capacity": "1GiB", "uid": USER2},
                   uid=SLURM_UID, expect=(201,))
    assert b2["uid"] == USER2
    st, e = daemon.request("POST", "/v1/persistent", {"name": "ckpt", "capacity": "2TiB"},
                           uid=USER1)
    assert st == 409
    st, e = daemon.request("POST", "/v1/persistent", {"name": "x", "capacity": 1, "uid": 0},
                           uid=USER1)
    assert st == 403
    names = sorted(x["name"] for x in daemon.ok("GET", "/v1/persistent", uid=USER2)["persistent"])
    assert names == ["ckpt", "other"]
    register(daemon, "9")
    register(daemon, "10", uid=USER2)
    daemon.ok("POST", "/v1/persistent/ckpt/use", {"job": "9"}, uid=USER1)
    st, e = daemon.request("POST", "/v1/persistent/ckpt/use", {"job": "10"}, uid=USER2)
    assert st == 403
    assert daemon.ok("GET", "/v1/jobs/9", uid=USER1)["persistent"] == ["ckpt"]
    st, e = daemon.request("DELETE", "/v1/persistent/ckpt", uid=USER2)
    assert st == 403
    st, e = daemon.request("DELETE", "/v1/persistent/ckpt", uid=USER1)
    assert st == 409     # in use
    daemon.ok("DELETE", "/v1/persistent/ckpt/use/9", uid=USER1)
    daemon.ok("DELETE", "/v1/persistent/ckpt", uid=USER1)
    assert daemon.request("GET", "/v1/persistent/ckpt", uid=USER1)[0] == 404
    daemon.ok("DELETE", "/v1/persistent/other", uid=SLURM_UID)


def test_nodes_drain_resume(daemon):
    nodes = daemon.ok("GET", "/v1/nodes", uid=USER1)["nodes"]
    assert [n["name"] for n in nodes] == ["bb01", "bb02", "bb03", "bb04", "hd1", "hd2"]
    n = daemon.ok("POST", "/v1/nodes/hd1/drain", {"reason": "disk swap"}, uid=SLURM_UID)
    assert n["state"] == "drained" and n["reason"] == "disk swap"
    register(daemon, "5")
    a = daemon.ok("POST", "/v1/jobs/5/allocation", {"capacity": "1TiB", "pool": "capacity"},
                  uid=SLURM_UID)
    assert [x["name"] for x in a["nodes"]] == ["hd2"]
    assert daemon.ok("POST", "/v1/nodes/hd1/resume", uid=SLURM_UID)["state"] == "up"
    assert daemon.request("POST", "/v1/nodes/nope/drain", uid=SLURM_UID)[0] == 404
    # drained state survives a restart
    daemon.ok("POST", "/v1/nodes/bb02/drain", uid=SLURM_UID)
    daemon.restart()
    assert daemon.ok("GET", "/v1/nodes/bb02", uid=USER1)["state"] == "drained"


def test_job_end_releases_and_history(daemon):
    register(daemon, "h1", user="alice", name="climate")
    daemon.ok("POST", "/v1/jobs/h1/allocation", {"capacity": "10GiB"}, uid=SLURM_UID)
    for _ in range(3):
        p = daemon.ok("POST", "/v1/jobs/h1/phases", {"volume": "2GiB"}, uid=USER1)
        daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)
        time.sleep(0.05)
    daemon.ok("DELETE", "/v1/jobs/h1", uid=SLURM_UID)
    # its last state stays readable, to its owner and the administrators
    last = daemon.ok("GET", "/v1/jobs/h1", uid=USER1)
    assert last["state"] == "ended" and last["ended"] > 0, last
    assert last["allocation"] is None and last["phase"] is None, last
    assert last["phases_done"] == 3 and last["bytes"] == 6 * GiB, last
    assert daemon.ok("GET", "/v1/jobs/h1", uid=SLURM_UID) == last
    st, e = daemon.request("GET", "/v1/jobs/h1", uid=USER2)
    assert st == 403 and e["error"]["message"] == "job h1 belongs to another user", e
    # nothing but reading: the ended job cannot be changed
    assert daemon.request("PUT", "/v1/jobs/h1/hints", {"priority": 2}, uid=USER1)[0] == 404
    assert daemon.request("POST", "/v1/jobs/h1/phases", {"volume": "1GiB"},
                          uid=USER1)[0] == 404
    # kept in memory only: not after a restart
    daemon.restart()
    assert daemon.request("GET", "/v1/jobs/h1", uid=USER1)[0] == 404
    assert all(n["used"] == 0 for n in daemon.ok("GET", "/v1/nodes", uid=USER1)["nodes"])
    h = daemon.ok("GET", "/v1/history?user=alice&name=climate", uid=SLURM_UID)
    assert h["jobs"] == 1 and h["io_volume"] == 2 * GiB and h["w_iter"] > 0


def test_learned_figures_shown_and_recorded(daemon):
    """The job's "learned": its finished phases only (a phase still open at the end,
    cancelled then, does not stretch w_iter), the same figures its end records."""
    register(daemon, "l1", user="alice", name="lrn")
    j = daemon.ok("GET", "/v1/jobs/l1", uid=USER1)
    assert j["learned"] == {"w_iter": None, "io_volume": None, "phases": 0}, j
    req = []
    for _ in range(3):
        p = daemon.ok("POST", "/v1/jobs/l1/phases", {"volume": "2GiB"}, uid=USER1)
        req.append(p["requested"])
        daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], {"bytes": "1GiB"}, uid=USER1)
        time.sleep(0.2)
    time.sleep(1.0)
    daemon.ok("POST", "/v1/jobs/l1/phases", {"volume": "2GiB"}, uid=USER1)   # left open
    lj = daemon.ok("GET", "/v1/jobs/l1", uid=USER1)["learned"]
    w = (req[-1] - req[0]) / 2
    assert lj["phases"] == 3 and lj["io_volume"] == GiB, lj
    assert abs(lj["w_iter"] - w) < 1e-3, (lj, w)
    daemon.ok("DELETE", "/v1/jobs/l1", uid=SLURM_UID)
    h = daemon.ok("GET", "/v1/history?user=alice&name=lrn", uid=SLURM_UID)
    assert abs(h["w_iter"] - w) < 1e-3 and h["io_volume"] == GiB, (h, w)
    assert daemon.ok("GET", "/v1/jobs/l1", uid=USER1)["learned"] == lj


def test_metrics(daemon):
    register(daemon, "m")
    p = daemon.ok("POST", "/v1/jobs/m/phases", {"volume": "1GiB"}, uid=USER1)
    st, text = daemon.request("GET", "/metrics", auth=False)
    assert st == 200
    for name in ("harmonia_jobs{state=\"running\"} 1", "harmonia_phases{state=\"granted\"} 1",
                 "harmonia_node_capacity_bytes{node=\"bb01\"", "harmonia_decision_seconds_bucket",
                 "harmonia_api_requests_total{code=\"201\"}", "harmonia_stall_seconds_total",
                 "harmonia_phase_bytes_total", "harmonia_node_load_bytes_per_second"):
        assert name in text, name
    daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)


def test_unix_socket(daemon):
    import http.client
    import socket as so

    class UConn(http.client.HTTPConnection):
        def connect(self):
            self.sock = so.socket(so.AF_UNIX, so.SOCK_STREAM)
            self.sock.connect(daemon.unix)
    c = UConn("localhost")
    st, js = daemon.request("GET", "/v1/status", conn=c)
    assert st == 200 and js["policy"] == "fairshare"
