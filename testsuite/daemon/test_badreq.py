# SPDX-License-Identifier: GPL-2.0-or-later
"""Every class of bad request gets a 4xx with a JSON body naming the problem."""
import socket
import threading
import time

import pytest

from harmonia_test.wait import scaled
from conftest import SLURM_UID, USER1, register


def bad(d, method, path, body=None, raw=None, uid=SLURM_UID, headers=None):
    st, js = d.request(method, path, body, uid=uid, raw=raw, headers=headers)
    assert 400 <= st < 500, (st, js)
    assert isinstance(js, dict) and js["error"]["code"] == st and js["error"]["message"]
    return st, js["error"]


def test_not_json_and_not_object(daemon):
    st, e = bad(daemon, "POST", "/v1/jobs", raw="{not json")
    assert st == 400 and "invalid JSON" in e["message"]
    st, e = bad(daemon, "POST", "/v1/jobs", raw="[1,2]")
    assert st == 400 and "object" in e["message"]
    st, e = bad(daemon, "POST", "/v1/jobs", raw='{"id":"1","id":"2","uid":1}')
    assert st == 400


def test_unknown_field_wrong_type_missing(daemon):
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1", "uid": 5, "colour": "red"})
    assert st == 400 and e["field"] == "colour"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": 1, "uid": 5})
    assert st == 400 and e["field"] == "id"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1"})
    assert st == 400 and e["field"] == "uid"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1", "uid": -3})
    assert st == 400 and e["field"] == "uid"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1", "uid": 5, "hints": {"w_iter": "ten"}})
    assert st == 400 and e["field"] == "hints.w_iter"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1", "uid": 5, "hints": {"priority": 11}})
    assert st == 400 and e["field"] == "hints.priority"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "1", "uid": 5, "hints": {"x": 1}})
    assert st == 400 and e["field"] == "hints.x"
    st, e = bad(daemon, "POST", "/v1/jobs", {"id": "../etc", "uid": 5})
    assert st == 400 and e["field"] == "id"
    # nothing was registered by any of these
    assert daemon.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"] == []


def test_bad_values(daemon):
    register(daemon, "1")
    st, e = bad(daemon, "POST", "/v1/jobs/1/allocation", {"capacity": "12 parsecs"})
    assert e["field"] == "capacity"
    st, e = bad(daemon, "POST", "/v1/jobs/1/allocation", {"capacity": -5})
    assert e["field"] == "capacity"
    st, e = bad(daemon, "POST", "/v1/jobs/1/allocation", {"capacity": 0})
    assert e["field"] == "capacity"
    st, e = bad(daemon, "POST", "/v1/jobs/1/phases", {"volume": "1GiB", "direction": "up"})
    assert e["field"] == "direction"
    st, e = bad(daemon, "POST", "/v1/jobs/1/phases", {"volume": "1GiB", "wait": "forever"})
    assert e["field"] == "wait"
    st, e = bad(daemon, "POST", "/v1/jobs/1/stage_in", {"source": "rel/path", "destination": "/b"})
    assert e["field"] == "source"
    st, e = bad(daemon, "POST", "/v1/jobs/1/stage_in", {"source": "/a/../b", "destination": "/b"})
    assert e["field"] == "source"
    st, e = bad(daemon, "GET", "/v1/phases/abc")
    assert e["field"] == "id"
    st, e = bad(daemon, "GET", "/v1/phases/1?wait=soon")
    assert e["field"] == "wait"


def test_routes_methods_media(daemon):
    st, e = bad(daemon, "GET", "/v1/nothing")
    assert st == 404
    st, e = bad(daemon, "GET", "/v2/status")
    assert st == 404
    st, e = bad(daemon, "PATCH", "/v1/jobs")
    assert st == 405
    st, e = bad(daemon, "GET", "/v1/status", raw='{"a":1}')
    assert st == 400 and "no body" in e["message"]
    st, e = bad(daemon, "POST", "/v1/jobs", raw='{"id":"1","uid":1}',
                headers={"Content-Type": "text/plain"})
    assert st == 415
    st, e = bad(daemon, "GET", "/v1/jobs/404")
    assert st == 404


def test_oversized_body_cut_off(make_daemon):
    # idle connections are closed after 30 s only: within the 10 s the test waits,
    # only the body limit can end the upload
    daemon = make_daemon(limits={"connection_timeout": "30s"})
    big = '{"id":"1","uid":1,"name":"' + "x" * 10000 + '"}'
    st, e = bad(daemon, "POST", "/v1/jobs", raw=big)
    assert st == 413
    # a chunked body growing past the limit: cut off
    s = socket.create_connection(("127.0.0.1", daemon.port))
    cred = daemon.munge.cred("POST", "/v1/jobs", uid=SLURM_UID)
    s.sendall(("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: MUNGE %s\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" % cred)
              .encode())
    try:
        for _ in range(10):
            s.sendall(b"400\r\n" + b"x" * 1024 + b"\r\n")
    except OSError:
        pass
    # answered 413, or (no Content-Length: MHD cannot answer mid-upload) closed;
    # a daemon still waiting for more of the body after 10 s fails the test
    s.settimeout(10)
    data, closed = b"", False
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                closed = True
                break
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    except socket.timeout:
        pass
    s.close()
    answered = b" 413 " in data.split(b"\r\n")[0]
    assert answered or (closed and data == b""), \
        "neither a 413 nor a closed connection (closed=%s): %r" % (closed, data[:200])
    assert "body over 4096 bytes: connection closed" in daemon.log_text()
    assert daemon.request("GET", "/v1/status", uid=USER1)[0] == 200


def test_slow_clients_do_not_harm_others(daemon):
    """Clients that stall mid-request are cut off (limits.connection_timeout = 2 s) while
    everyone else is served at normal speed."""
    slow = []
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", daemon.port))
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        slow.append(s)
    t0 = time.time()
    for i in range(20):
        assert daemon.request("GET", "/v1/status", uid=USER1)[0] == 200
    assert time.time() - t0 < scaled(2.0)
    # each stalled connection is closed by the daemon (EOF or reset) once its 2 s
    # pass: wait for that, 15 s at most for all of them (a timeout is not a close)
    deadline = time.time() + 15
    closed = 0
    for s in slow:
        s.settimeout(max(0.1, deadline - time.time()))
        try:
            if s.recv(100) == b"":
                closed += 1
        except (ConnectionResetError, BrokenPipeError):
            closed += 1
        except socket.timeout:
            pass
        s.close()
    assert closed == 20
