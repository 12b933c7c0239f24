# SPDX-License-Identifier: GPL-2.0-or-later
"""Attacks of unprivileged users on the protocol between bbmgrd and its buffer-node
agents (doc/security.md, "Buffer-node agents"), against a real bbmgrd, real
bbnoded processes and munged on loopback: what users name their files, the
connections they hold, the paths and names they give must not take a node down,
keep the agents out or make an agent act for someone else.

Runs as root (the agents act as the users); skipped otherwise.
"""
import http.client
import os
import signal
import socket
import time

import pytest

from harmonia_test.wait import scaled, wait_for
from conftest import SLURM_UID, USER1, USER2, register
from test_mover import GID1, GID2, MiB, mkdirs, stage, write, xfer
from test_nodes import agent_cluster, agents, node, new_job  # noqa: F401 (fixture)
from test_security import as_user, spawn

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent tests need root")


def final(d, tid):
    x = xfer(d, tid)
    return x if x["state"] in ("done", "failed", "cancelled") else None


def deep_unreadable(top, depth, name):
    """As its user: top/<name>/<name>/... (depth levels), a file there that its
    owner cannot read: the stage-in of top fails naming that path."""
    os.makedirs(top)
    os.chdir(top)
    for _ in range(depth):
        os.mkdir(name)
        os.chdir(name)
    with open("x", "w") as f:
        f.write("x")
    os.chmod("x", 0)


# ---------------------------------------------------------------- class 2
def test_hostile_file_names_do_not_take_the_node_down(make_daemon, agents, tmp_base, users):
    """User 1 fills a stage-in source with directories named by control
    characters (JSON writes each as 6 bytes) and an unreadable file at the bottom,
    and makes 40 such stage-ins fail together: the agent's report of their
    failures must still fit bbmgrd's limits.max_body (else 413, the same report
    for ever, the node down after agents.down_after, and user 2's stage-out from
    the node lost).  Every failure reaches bbmgrd, with a message that names the
    path with the control characters shown as '?' (cut to 1000 bytes), and user 2's stage-out is done."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, down_after="3s")
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs, 0o755, uid=0, gid=0)
    for uid, gid in ((USER1, GID1), (USER2, GID2)):
        mkdirs(os.path.join(pfs, str(uid)), 0o755, uid=uid, gid=gid)
    evil = "".join(chr(c) for c in range(1, 32)) * 8           # 248 control bytes
    tops = [os.path.join(pfs, str(USER1), "in%d" % i) for i in range(40)]
    for top in tops:
        as_user(USER1, GID1, deep_unreadable, top, 14, evil)
    # user 2's job, running on the same node, with data to stage out
    register(d, "v2", uid=USER2, gid=GID2)
    a = d.ok("POST", "/v1/jobs/v2/allocation", {"capacity": "3GiB", "nodes": 3},
             uid=SLURM_UID, expect=(201,))
    vpaths = {n["name"]: n["path"] for n in a["nodes"]}
    for p in vpaths.values():
        wait_for(lambda: os.path.isdir(p), "the agent to make " + p)
    d.ok("POST", "/v1/jobs/v2/begin", {}, uid=SLURM_UID)
    # user 1's 40 stage-ins, listed to the agent together
    paths, names = new_job(d, "e1", nodes=3, capacity="3GiB")
    e1, bb = paths[0], names[0]
    vpath = vpaths[bb]
    write(os.path.join(vpath, "result"), os.urandom(MiB), 0o600, uid=USER2, gid=GID2)
    tids = [stage(d, "e1", "stage_in", top, e1 + "/in%d" % i)
            for i, top in enumerate(tops)]
    xs = [wait_for(lambda: final(d, t), "stage-in %d to be reported failed" % t,
                   report=lambda: "%s\n%s" % (node(d, bb), by[bb].log_text()[-2000:]))
          for t in tids]
    for top, x in zip(tops, xs):
        assert x["state"] == "failed", x
        assert x["message"].startswith("stage_in %s/" % top) and "?" * 31 in x["message"], x
        assert not any(ord(ch) < 32 for ch in x["message"]), x
    assert node(d, bb)["agent"]["state"] == "up"
    # user 2's stage-out from the same node is done, its node never went down
    out = os.path.join(pfs, str(USER2), "result")
    tid = stage(d, "v2", "stage_out", os.path.join(vpath, "result"), out, "file")
    x = wait_for(lambda: final(d, tid), "user 2's stage-out")
    assert x["state"] == "done", x
    assert d.metric("harmonia_agent_down_total") == 0
    assert "answered 413" not in by[bb].log_text()


# ---------------------------------------------------------------- class 7
def unix_ok(d, method, path, body=None, uid=SLURM_UID):
    """A request on bbmgrd's unix socket (its own connections: the TCP listener may
    be full); the decoded reply, asserted 200/201."""
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(15)
            self.sock.connect(d.unix)
    c = Conn("localhost", timeout=15)
    try:
        st, js = d.request(method, path, body, uid=uid, conn=c)
    finally:
        c.close()
    assert st in (200, 201), "%s %s -> %d %s" % (method, path, st, js)
    return js


def hold_tcp(port, uid, gid, n, ready_w):
    """Child: as uid, n TCP connections to bbmgrd, each with half a request line,
    kept open (each one closed by bbmgrd is opened again); then wait to be killed."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)

    def one():
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /v1/sta")
        return s
    held = [one() for _ in range(n)]
    os.write(ready_w, b"held\n")
    while True:
        for i, s in enumerate(held):
            s.setblocking(False)
            try:
                gone = s.recv(1) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                s.close()
                try:
                    held[i] = one()
                except OSError:
                    pass
        time.sleep(0.05)


def test_users_connections_do_not_lock_the_agents_out(make_daemon, agents, tmp_base, users):
    """bbmgrd restarts; before its agents reconnect, user 1 holds
    limits.max_connections TCP connections to it (and opens each again when one is
    closed).  The agents, connecting from privileged ports (root's), are still
    served: every node's agent reports, none is marked down, a stage-in on an agent
    runs to its end."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, down_after="3s",
                          limits={"max_connections": 6, "connection_timeout": "120s",
                                  "request_deadline": "120s"})
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "data"), os.urandom(4 * MiB), 0o644)
    for a in by.values():
        a.proc.send_signal(signal.SIGSTOP)
    d.restart()
    r, w = os.pipe()
    pid = spawn(hold_tcp, d.port, USER1, GID1, 6, w)
    try:
        assert os.read(r, 16) == b"held\n"
        # the TCP listener is full for anybody else
        with pytest.raises((OSError, http.client.HTTPException)):
            d.request("GET", "/v1/status", uid=USER2, timeout=3)
        for a in by.values():
            a.proc.send_signal(signal.SIGCONT)
        for n in by:
            wait_for(lambda: (lambda a: a["state"] == "up" and a.get("polls", 0) > 0)(
                unix_ok(d, "GET", "/v1/nodes/" + n)["agent"]),
                "the agent of %s to report to the restarted bbmgrd" % n,
                report=lambda: d.log_text()[-3000:])
        register_unix = {"id": "c1", "uid": USER1, "gid": GID1}
        unix_ok(d, "POST", "/v1/jobs", register_unix)
        al = unix_ok(d, "POST", "/v1/jobs/c1/allocation", {"capacity": "1GiB", "nodes": 1})
        path = al["nodes"][0]["path"]
        wait_for(lambda: os.path.isdir(path), "its agent to make " + path)
        tid = unix_ok(d, "POST", "/v1/jobs/c1/stage_in", {
            "source": os.path.join(pfs, "data"), "destination": path + "/data",
            "type": "file"})["id"]
        x = wait_for(lambda: (lambda x: x if x["state"] != "running" and x["state"] != "queued"
                              else None)(unix_ok(d, "GET", "/v1/transfers/%d" % tid)),
                     "the stage-in on the agent")
        assert x["state"] == "done", x
        st = unix_ok(d, "GET", "/v1/status")
        assert st["agents"]["down"] == [], st["agents"]
        assert "limits.max_connections reached" in d.log_text()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


# ---------------------------------------------------------------- class 8
def test_one_path_rule(make_daemon, agents, tmp_base, users):
    """A stage path with a '.' component (or a newline) is refused by
    bbmgrd, naming the rule, as the directives and the agents refuse it: it never
    becomes a task the agent cannot run."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, start=("bb01", "bb02", "bb03"))
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "x"), b"data", 0o644)
    paths, _ = new_job(d, "p1")
    for src, dst in ((pfs + "/./x", paths[0] + "/x"), (pfs + "/x", paths[0] + "/./x"),
                     (pfs + "/x", paths[0] + "/a\nb")):
        st, js = d.request("POST", "/v1/jobs/p1/stage_in", {"source": src, "destination": dst,
                                                          "type": "file"}, uid=SLURM_UID)
        assert st == 400, js
        assert "'.' or '..' components" in js["error"]["message"], js
    # the same paths without the '.' component run
    tid = stage(d, "p1", "stage_in", pfs + "/x", paths[0] + "/x", "file")
    x = wait_for(lambda: final(d, tid), "the stage-in")
    assert x["state"] == "done", x


# ---------------------------------------------------------------- class 6
def test_reserved_buffer_names_refused(make_daemon, agents, tmp_base, users):
    """User 1 asks for persistent buffers of names the mounts keep for themselves
    (.harmonia-trash, .harmonia-x, ...) or that are not one plain name: bbmgrd
    refuses them with the one name rule of the directives (a letter first), so no
    agent ever gets one; a plain name is made on its agent for its owner."""
    d, by = agent_cluster(make_daemon, agents, tmp_base)
    for name in (".harmonia-trash", ".harmonia-x", ".harmonia-spare", ".hidden", "..", ".",
                 "-x", "_x", "9lives", "a/b", "x" * 64):
        st, js = d.request("POST", "/v1/persistent", {"name": name, "capacity": "1GiB"},
                           uid=USER1)
        assert st == 400, (name, js)
        assert "must be a letter" in js["error"]["message"], js
    b = d.ok("POST", "/v1/persistent", {"name": "ok.name-1_x", "capacity": "1GiB"}, uid=USER1,
             expect=(201,))
    path = b["nodes"][0]["path"]
    wait_for(lambda: os.path.isdir(path), "the agent to make " + path)
    assert os.stat(path).st_uid == USER1
    assert not any(n.startswith(".harmonia-t") or n == ".harmonia-x"
                   for n in os.listdir(os.path.dirname(path)))
