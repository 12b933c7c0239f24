# SPDX-License-Identifier: GPL-2.0-or-later
"""POST /v1/batch: several requests in one exchange, committed by one commit (doc/api.md)."""
import time

import pytest

from harmonia_test.wait import scaled
from conftest import SLURM_UID, USER1, USER2, fcfs_one_job_holds_the_io, register

GiB = 1 << 30


def item(method, path, body=None):
    it = {"method": method, "path": path}
    if body is not None:
        it["body"] = body
    return it


def batch(d, items, uid=SLURM_UID, path="/v1/batch", **kw):
    """Send a batch; returns its replies as [(status, body), ...]."""
    js = d.ok("POST", path, {"requests": items}, uid=uid, expect=(200,), **kw)
    assert set(js) == {"replies"} and len(js["replies"]) == len(items), js
    out = []
    for r in js["replies"]:
        assert set(r) == {"status", "body"}, r
        out.append((r["status"], r["body"]))
    return out


def bad_batch(d, body, uid=SLURM_UID, raw=None):
    st, js = d.request("POST", "/v1/batch", body, uid=uid, raw=raw)
    assert st == 400, (st, js)
    e = js["error"]
    assert e["code"] == 400 and e["status"] == "bad_request"
    return e


def pools(js):
    return {p["name"]: p for p in js["pools"]}


def test_register_allocate_pools_one_commit_survives_restart(daemon):
    # bbmgrd's first tick, right after it is ready, commits a prune of closed rows
    # (then one every 10 s): a write acknowledged after it (an acknowledged write is
    # committed, in order) makes sure that commit is not counted as the batch's
    register(daemon, "warm-up")
    before = daemon.metric("harmonia_state_commits_total")
    r = batch(daemon, [
        item("POST", "/v1/jobs", {"id": "b1", "uid": USER1, "name": "sim"}),
        item("POST", "/v1/jobs/b1/allocation", {"capacity": "100GiB", "pool": "nvme"}),
        item("POST", "/v1/jobs", {"id": "b2", "uid": USER2}),
        item("POST", "/v1/jobs/b2/allocation", {"capacity": "50GiB", "pool": "nvme"}),
        item("GET", "/v1/pools"),
    ])
    assert [s for s, _ in r] == [201, 201, 201, 201, 200]
    assert r[0][1]["id"] == "b1" and r[0][1]["uid"] == USER1 and r[0][1]["name"] == "sim"
    assert r[2][1]["id"] == "b2" and r[2][1]["state"] == "registered"
    a1, a2 = r[1][1], r[3][1]
    assert a1["capacity"] == 100 * GiB and a2["capacity"] == 50 * GiB
    used = sum(n["bytes"] for n in a1["nodes"] + a2["nodes"])
    assert used >= 150 * GiB
    assert pools(r[4][1])["nvme"]["used"] == used
    # one commit for the whole batch (nothing else runs in this daemon)
    assert daemon.metric("harmonia_state_commits_total") == before + 1
    # each body is what the request alone replies
    assert daemon.ok("GET", "/v1/jobs/b1/allocation", uid=SLURM_UID) == a1
    assert pools(daemon.ok("GET", "/v1/pools", uid=USER1)) == pools(r[4][1])
    # acknowledged = committed: a killed daemon comes back with all of it
    daemon.restart()
    assert daemon.ok("GET", "/v1/jobs/b1/allocation", uid=USER1) == a1
    assert daemon.ok("GET", "/v1/jobs/b2/allocation", uid=USER2) == a2
    assert daemon.ok("GET", "/v1/jobs/b1", uid=USER1)["name"] == "sim"
    assert pools(daemon.ok("GET", "/v1/pools", uid=USER1))["nvme"]["used"] == used


def test_item_errors_do_not_stop_the_others(daemon):
    items = [
        item("GET", "/v1/nothing"),
        item("DELETE", "/v1/pools"),
        item("POST", "/v1/jobs", {"id": "e1", "uid": USER1, "colour": "red"}),
        item("POST", "/v1/jobs", {"id": "e2", "uid": USER1}),
        item("GET", "/v1/status", {}),
        item("POST", "/v1/jobs/e2/allocation", {"capacity": "1GiB", "pool": "nope"}),
        item("GET", "/v1/jobs/e404"),
        item("POST", "/v1/jobs", {"id": "e3", "uid": USER1}),
    ]
    r = batch(daemon, items)
    assert [s for s, _ in r] == [404, 405, 400, 201, 400, 404, 404, 201]
    assert r[0][1]["error"]["message"] == "no such resource: /v1/nothing"
    assert r[1][1]["error"]["message"] == "method DELETE not allowed on /v1/pools"
    assert r[2][1]["error"]["field"] == "colour"
    assert r[4][1]["error"]["message"] == "GET /v1/status takes no body"
    assert r[5][1]["error"]["field"] == "pool"
    assert r[6][1]["error"]["field"] == "id"
    # the error bodies are exactly those of the same requests alone
    for i in (0, 1, 2, 5, 6):
        st, js = daemon.request(items[i]["method"], items[i]["path"], items[i].get("body"),
                                uid=SLURM_UID)
        assert (st, js) == r[i], i
    st, js = daemon.request("GET", "/v1/status", uid=SLURM_UID, raw="{}")
    assert (st, js) == r[4]
    # nothing rolled back: the good items are there, the bad one is not
    ids = sorted(j["id"] for j in daemon.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"])
    assert ids == ["e2", "e3"]


def test_admin_checks_per_item(daemon):
    register(daemon, "u1", uid=USER1)
    register(daemon, "u2", uid=USER2)
    r = batch(daemon, [
        item("POST", "/v1/jobs", {"id": "x", "uid": USER1}),
        item("GET", "/v1/status"),
        item("GET", "/v1/jobs/u1"),
        item("GET", "/v1/jobs/u2"),
        item("GET", "/v1/jobs"),
        item("PUT", "/v1/jobs/u1/hints", {"priority": 7}),
        item("DELETE", "/v1/jobs/u1"),
    ], uid=USER1)
    assert [s for s, _ in r] == [403, 200, 200, 403, 200, 200, 403]
    assert r[0][1]["error"]["message"] == \
        "only SlurmUser and root may do this (you are uid %d)" % USER1
    assert r[1][1]["caller"] == {"uid": USER1, "gid": USER1, "admin": False}
    assert r[3][1]["error"]["message"] == "job u2 belongs to another user"
    assert [j["id"] for j in r[4][1]["jobs"]] == ["u1"]
    assert r[5][1]["hints"]["priority"] == 7
    assert daemon.request("GET", "/v1/jobs/x", uid=SLURM_UID)[0] == 404
    assert daemon.ok("GET", "/v1/jobs/u1", uid=USER1)["state"] == "registered"
    # the same items as the administrator
    r = batch(daemon, [item("GET", "/v1/status"), item("DELETE", "/v1/jobs/u2")])
    assert r[0][1]["caller"]["admin"] is True and r[1] == (200, {"id": "u2", "state": "ended"})


def test_later_items_see_earlier_ones(daemon):
    r = batch(daemon, [
        item("GET", "/v1/jobs/s1"),
        item("POST", "/v1/jobs", {"id": "s1", "uid": USER1}),
        item("GET", "/v1/jobs/s1"),
        item("POST", "/v1/jobs", {"id": "s1", "uid": USER1}),
        item("POST", "/v1/jobs/s1/begin", {"nodes": 2}),
        item("POST", "/v1/jobs/s1/allocation", {"capacity": "10GiB"}),
        item("GET", "/v1/jobs/s1"),
        item("DELETE", "/v1/jobs/s1"),
        item("GET", "/v1/jobs/s1"),
        item("GET", "/v1/pools"),
    ])
    assert [s for s, _ in r] == [404, 201, 200, 200, 200, 201, 200, 200, 200, 200]
    assert r[8][1]["state"] == "ended", r[8]      # its last state
    assert r[2][1]["state"] == "registered"
    assert r[4][1]["state"] == "running" and r[4][1]["nodes"] == 2
    assert r[6][1]["allocation"]["capacity"] == 10 * GiB
    assert all(p["used"] == 0 for p in r[9][1]["pools"])
    assert daemon.ok("GET", "/v1/jobs/s1", uid=SLURM_UID)["state"] == "ended"


def test_items_never_long_poll_nor_see_query(make_daemon):
    d, pa = fcfs_one_job_holds_the_io(make_daemon)
    t0 = time.time()
    r = batch(d, [item("POST", "/v1/jobs/b/phases", {"volume": "1GiB", "wait": 5}),
                  item("GET", "/v1/jobs")], path="/v1/batch?state=running&wait=5")
    assert time.time() - t0 < scaled(2)      # the items did not wait 5 s
    assert r[0][0] == 201 and r[0][1]["state"] == "waiting"
    # the batch's query arguments are not the items': every job is listed
    assert sorted(j["id"] for j in r[1][1]["jobs"]) == ["a", "b"]
    t0 = time.time()
    r = batch(d, [item("GET", "/v1/phases/%d" % r[0][1]["id"])], uid=USER2)
    assert time.time() - t0 < scaled(2) and r[0][0] == 200 and r[0][1]["state"] == "waiting"
    d.ok("POST", "/v1/phases/%d/finish" % pa["id"], uid=USER1)


def test_log_and_metric(daemon):
    n0 = daemon.metric("harmonia_api_batch_items_total")
    assert n0 == 0
    r = batch(daemon, [item("POST", "/v1/jobs", {"id": "m1", "uid": USER1}),
                       item("GET", "/v1/jobs/m1"), item("GET", "/v1/nothing")])
    assert [s for s, _ in r] == [201, 200, 404]
    assert daemon.metric("harmonia_api_batch_items_total") == 3
    # a refused batch runs nothing and counts nothing
    bad_batch(daemon, {"requests": [item("GET", "/v1/status"), item("GET", "/status")]})
    assert daemon.metric("harmonia_api_batch_items_total") == 3
    batch(daemon, [item("GET", "/v1/status")], uid=USER1)
    assert daemon.metric("harmonia_api_batch_items_total") == 4
    text = daemon.log_text()
    assert "api: batch item 0: POST /v1/jobs -> 201" in text
    assert "api: batch item 1: GET /v1/jobs/m1 -> 200" in text
    assert "api: batch item 2: GET /v1/nothing -> 404" in text
    assert "api: POST /v1/batch -> 200" in text


GOOD = {"method": "POST", "path": "/v1/jobs", "body": {"id": "z0", "uid": USER1}}

WHOLE_BATCH_ERRORS = [
    # (body, field, message)
    ({}, "requests", "is required"),
    ({"requests": {"method": "GET"}}, "requests", "must be an array"),
    ({"requests": "GET /v1/status"}, "requests", "must be an array"),
    ({"requests": []}, "requests", "must hold 1 to 256 requests"),
    ({"requests": [GOOD], "atomic": True}, "atomic", "unknown field (known: requests)"),
    ({"requests": [GOOD, "GET /v1/status"]}, "requests[1]", "must be an object"),
    ({"requests": [GOOD, ["GET", "/v1/status"]]}, "requests[1]", "must be an object"),
    ({"requests": [GOOD, {"path": "/v1/status"}]}, "requests[1].method", "is required"),
    ({"requests": [GOOD, {"method": 1, "path": "/v1/status"}]}, "requests[1].method",
     "must be a string"),
    ({"requests": [GOOD, {"method": "PATCH", "path": "/v1/status"}]}, "requests[1].method",
     "must be one of GET, POST, PUT, DELETE"),
    ({"requests": [GOOD, {"method": "get", "path": "/v1/status"}]}, "requests[1].method",
     "must be one of GET, POST, PUT, DELETE"),
    ({"requests": [GOOD, {"method": "GET"}]}, "requests[1].path", "is required"),
    ({"requests": [GOOD, {"method": "GET", "path": None}]}, "requests[1].path",
     "must be a string"),
    ({"requests": [GOOD, {"method": "GET", "path": "/metrics"}]}, "requests[1].path",
     "must start with /v1/"),
    ({"requests": [GOOD, {"method": "GET", "path": "v1/status"}]}, "requests[1].path",
     "must start with /v1/"),
    ({"requests": [GOOD, {"method": "GET", "path": "/v2/status"}]}, "requests[1].path",
     "must start with /v1/"),
    ({"requests": [GOOD, {"method": "GET", "path": "/v1/jobs?state=running"}]},
     "requests[1].path", "query strings are not supported in a batch"),
    ({"requests": [GOOD, {"method": "POST", "path": "/v1/batch",
                          "body": {"requests": [GOOD]}}]},
     "requests[1].path", "a batch cannot contain a batch"),
    ({"requests": [GOOD, {"method": "GET", "path": "/v1//batch/"}]},
     "requests[1].path", "a batch cannot contain a batch"),
    ({"requests": [GOOD, {"method": "POST", "path": "/v1/jobs", "body": "{}"}]},
     "requests[1].body", "must be an object"),
    ({"requests": [GOOD, {"method": "POST", "path": "/v1/jobs", "body": None}]},
     "requests[1].body", "must be an object"),
    ({"requests": [GOOD, {"method": "GET", "path": "/v1/status", "query": "x=1"}]},
     "requests[1].query", "unknown field (known: method, path, body)"),
    ({"requests": [GOOD] * 256 + [GOOD]}, "requests", "must hold 1 to 256 requests"),
]


@pytest.fixture
def big_daemon(make_daemon):
    return make_daemon(limits={"max_body": "1MiB"})


@pytest.mark.parametrize("body,field,message", WHOLE_BATCH_ERRORS,
                         ids=[m + " " + f for _, f, m in WHOLE_BATCH_ERRORS])
def test_whole_batch_errors(big_daemon, body, field, message):
    n0 = big_daemon.metric("harmonia_api_batch_items_total")
    e = bad_batch(big_daemon, body)
    assert (e["field"], e["message"]) == (field, message)
    # nothing ran: the valid item before the bad one did not register its job
    assert big_daemon.request("GET", "/v1/jobs/z0", uid=SLURM_UID)[0] == 404
    assert big_daemon.metric("harmonia_api_batch_items_total") == n0


def test_whole_batch_errors_body(daemon):
    e = bad_batch(daemon, None)
    assert e["message"] == "a JSON body is required" and e["field"] is None
    e = bad_batch(daemon, None, raw='{"requests": [1, 2], "requests": []}')
    assert "invalid JSON" in e["message"]
    st, js = daemon.request("GET", "/v1/batch", uid=SLURM_UID)
    assert st == 405
    assert daemon.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"] == []


def test_limits(big_daemon):
    d = big_daemon
    items = [item("POST", "/v1/jobs", {"id": "j%d" % i, "uid": USER1}) for i in range(256)]
    r = batch(d, items)
    assert [s for s, _ in r] == [201] * 256
    assert len(d.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"]) == 256
    assert d.metric("harmonia_api_batch_items_total") == 256


def test_too_large(daemon):
    # limits.max_body is 4 KiB here: a batch over it is refused like any request
    items = [item("GET", "/v1/jobs/%d" % i) for i in range(200)]
    st, js = daemon.request("POST", "/v1/batch", {"requests": items}, uid=SLURM_UID)
    assert st == 413 and js["error"]["code"] == 413
    assert daemon.metric("harmonia_api_batch_items_total") == 0
