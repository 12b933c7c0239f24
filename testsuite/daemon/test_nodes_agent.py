# SPDX-License-Identifier: GPL-2.0-or-later
"""bbnoded against a scripted manager: a real bbnoded process whose bbmgrd is a
small HTTP server of the test, which answers each report with what the test
wants.  What the agent does with a reply, whatever the reply: it refuses a
transfer whose buffer side is not under its mount, never makes or removes a
directory outside it, removes only directories that are not listed, and keeps a
result until a reply acknowledges it.

Runs as root (the agent makes directories for other users); skipped otherwise.
"""
import http.server
import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

from harmonia_test.wait import wait_for
from conftest import BUILDDIR, SANITIZER_MARKS, USER1, USER2, free_port
from test_mover import GID1, GID2, mkdirs, write

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent tests need root")

BBNODED = os.path.join(BUILDDIR, "bbmgr", "bbnoded")


class Manager:
    """Answers POST /v1/agents/<node> with the replies queued by the test, then
    with its default reply (no work, no directory set); keeps every request."""

    def __init__(self):
        self.requests = queue.Queue()
        self.replies = []
        self.default = (200, {"node": "bb01", "interval": 0.1, "tasks": []})
        self.lock = threading.Lock()
        self.max_body = None        # larger requests get 413 (bbmgrd's limits.max_body)
        self.refused = 0
        mgr = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                if mgr.max_body and len(raw) > mgr.max_body:
                    mgr.refused += 1
                    status, js = 413, {"error": {"message": "too large"}}
                else:
                    body = json.loads(raw)
                    mgr.requests.put((self.path, body))
                    with mgr.lock:
                        status, js = mgr.replies.pop(0) if mgr.replies else mgr.default
                data = json.dumps(js).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), H)
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, status=200, default=False, **fields):
        js = {"node": "bb01", "interval": 0.1, "tasks": []}
        js.update(fields)
        with self.lock:
            if default:
                self.default = (status, js)
            else:
                self.replies.append((status, js))

    def next(self, cond=lambda b: True, timeout=20):
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                path, body = self.requests.get(timeout=0.5)
            except queue.Empty:
                continue
            if cond(body):
                return body
        raise AssertionError("no report as expected from the agent")

    def stop(self):
        self.srv.shutdown()


@pytest.fixture
def agent(tmp_base):
    mgr = Manager()
    mount = os.path.join(tmp_base, "bb01")
    os.makedirs(mount, mode=0o755)
    conf = os.path.join(tmp_base, "bbmgr.yaml")
    with open(conf, "w") as f:
        f.write("""listen: {address: 127.0.0.1, port: %d, unix_socket: ""}
auth: {type: none}
state: {dir: %s/state}
mover: {threads: 2, chunk: 1MiB}
agents: {interval: 0.1s}
nodes:
  - {names: bb01, capacity: 1TiB, bandwidth: 1 GB/s, mount: "%s", agent: true}
""" % (mgr.port, tmp_base, mount))
    log = open(os.path.join(tmp_base, "bbnoded.log"), "a")
    p = subprocess.Popen([BBNODED, "-c", conf, "-n", "bb01", "-l", "-"], stdout=log,
                         stderr=subprocess.STDOUT)
    yield mgr, mount, p, os.path.join(tmp_base, "bbnoded.log")
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    mgr.stop()
    with open(os.path.join(tmp_base, "bbnoded.log")) as f:
        text = f.read()
    for mark in SANITIZER_MARKS:
        assert mark not in text, text


def task(tid, src, dst, stage_out=False):
    return {"id": tid, "job": "j1", "weight": 1.0, "uid": USER1, "gid": GID1,
            "stage_out": stage_out, "directory": False, "source": src, "destination": dst}


def result_of(tid):
    return lambda b: any(r["id"] == tid and r["state"] != "running" for r in b["results"])


def test_transfer_outside_the_mount_refused(agent, tmp_base):
    mgr, mount, _, _ = agent
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "x"), b"data", 0o644)
    outside = os.path.join(tmp_base, "elsewhere")
    mkdirs(outside)
    mgr.reply(tasks=[task(5, os.path.join(pfs, "x"), os.path.join(outside, "x"))])
    body = mgr.next(result_of(5))
    r = [r for r in body["results"] if r["id"] == 5][0]
    assert r["state"] == "failed" and "not under its mount" in r["message"], r
    assert not os.path.exists(os.path.join(outside, "x"))


def test_directories_made_and_orphans_removed(agent, tmp_base):
    mgr, mount, _, _ = agent
    # what is on the device before: an orphan job directory, a file, a symlink to a
    # directory outside, a persistent buffer no longer listed
    orphan = os.path.join(mount, "old-job")
    mkdirs(orphan, 0o700)
    write(os.path.join(orphan, "data"), b"x", 0o600)
    write(os.path.join(mount, "a-file"), b"x", 0o600, uid=0, gid=0)
    target = os.path.join(tmp_base, "target")
    mkdirs(target)
    os.symlink(target, os.path.join(mount, "link"))
    os.makedirs(os.path.join(mount, "persistent"))
    mkdirs(os.path.join(mount, "persistent", "gone"), 0o700)    # a buffer is its user's
    os.makedirs(os.path.join(mount, "persistent", "kept"))
    mgr.reply(dirs_gen="g1", dirs=[
        {"name": "j1", "uid": USER1, "gid": GID1},
        {"name": "kept", "persistent": True, "uid": USER1, "gid": GID1}])
    body = mgr.next(lambda b: b.get("dirs") == "g1")
    st = os.stat(os.path.join(mount, "j1"))
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (USER1, GID1, 0o700)
    wait_for(lambda: not os.path.exists(orphan), "the orphan directory to be removed")
    assert not os.path.exists(os.path.join(mount, "persistent", "gone"))
    assert os.path.isdir(os.path.join(mount, "persistent", "kept"))
    assert os.path.isfile(os.path.join(mount, "a-file"))       # not a directory: left
    assert os.path.islink(os.path.join(mount, "link")) and os.path.isdir(target)
    assert body["status"]["free_bytes"] > 0


def test_directory_of_a_name_used_again_removed_again(agent, tmp_base):
    """A job id comes back (a job released after a failed stage-in, a requeued
    job): its directory, removed when it left the set, is made again, and removed
    again when it leaves the set a second time (not taken for the removal of the
    first time, still under way)."""
    mgr, mount, _, _ = agent
    d = os.path.join(mount, "4242")
    for gen in ("r1", "r3"):
        mgr.reply(dirs_gen=gen, dirs=[{"name": "4242", "uid": USER1, "gid": GID1}])
        mgr.next(lambda b: b.get("dirs") == gen)
        assert os.path.isdir(d)
        write(os.path.join(d, "data"), b"x", 0o600)
        gone = "r%d" % (int(gen[1]) + 1)
        mgr.reply(dirs_gen=gone, dirs=[])
        mgr.next(lambda b: b.get("dirs") == gone)
        wait_for(lambda: not os.path.exists(d), "the directory of set %s to be removed" % gone)


def test_name_used_again_gets_a_new_directory(agent, tmp_base):
    """The directory of a name that never leaves the set is kept while bbmgrd
    says it is the same buffer (the same "inc"), and replaced by a new, empty one
    when it names another incarnation: a requeued job's new allocation, made
    before the agent's next report, does not get its first run's files; a
    persistent name destroyed and made again by another user within one report
    does not give that user the first owner's directory."""
    mgr, mount, _, _ = agent
    d = os.path.join(mount, "4243")
    mgr.reply(dirs_gen="i1", dirs=[{"name": "4243", "uid": USER1, "gid": GID1, "inc": 1000.5}])
    mgr.next(lambda b: b.get("dirs") == "i1")
    write(os.path.join(d, "first-run"), b"x", 0o600)
    # held open so that its inode number cannot be given to a new directory
    # once the agent removes it: a new directory then has another number
    first = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    ino = os.fstat(first).st_ino
    # the same allocation, listed again: kept as it is
    mgr.reply(dirs_gen="i2", dirs=[{"name": "4243", "uid": USER1, "gid": GID1, "inc": 1000.5}])
    mgr.next(lambda b: b.get("dirs") == "i2")
    assert os.stat(d).st_ino == ino and os.listdir(d) == ["first-run"]
    # the job requeued: a new allocation of the same id, the name never left the set
    mgr.reply(dirs_gen="i3", dirs=[{"name": "4243", "uid": USER1, "gid": GID1, "inc": 2000.25}])
    mgr.next(lambda b: b.get("dirs") == "i3")
    st = os.stat(d)
    assert st.st_ino != ino and os.listdir(d) == [], "the requeued job got its first run's files"
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (USER1, GID1, 0o700)
    trash = os.path.join(mount, ".harmonia-trash")
    wait_for(lambda: os.path.isdir(trash) and not os.listdir(trash),
             "the first run's directory to be removed from the trash")
    assert os.fstat(first).st_nlink == 0, "the first run's directory was not removed"
    os.close(first)
    # a persistent name made again by another user within one report
    pb = os.path.join(mount, "persistent", "pb")
    mgr.reply(dirs_gen="i4", dirs=[{"name": "pb", "persistent": True, "uid": USER1, "gid": GID1,
                                    "inc": 3000.0}])
    mgr.next(lambda b: b.get("dirs") == "i4")
    write(os.path.join(pb, "secret"), b"x", 0o600)
    mgr.reply(dirs_gen="i5", dirs=[{"name": "pb", "persistent": True, "uid": USER2, "gid": GID2,
                                    "inc": 3001.0}])
    mgr.next(lambda b: b.get("dirs") == "i5")
    st = os.stat(pb)
    assert (st.st_uid, st.st_gid) == (USER2, GID2) and os.listdir(pb) == [], \
        "the second owner got the first owner's directory"


def test_trash_left_by_a_stopped_agent_is_emptied_at_start(agent, tmp_base):
    """An agent stopped while it removed a directory from its trash (a stop does
    not wait for a removal: 5 s at most) leaves it there; the next agent on the
    mount removes what is in the trash when it starts, as the directory's owner."""
    mgr, mount, p, log = agent
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    left = []
    for parent in (mount, os.path.join(mount, "persistent")):
        t = os.path.join(parent, ".harmonia-trash")
        os.makedirs(t, mode=0o711, exist_ok=True)
        d = os.path.join(t, "777")
        mkdirs(os.path.join(d, "sub"), 0o700)
        write(os.path.join(d, "sub", "data"), b"x" * 100, 0o600)
        left.append(d)
    conf = os.path.join(tmp_base, "bbmgr.yaml")
    with open(log, "a") as out:
        p2 = subprocess.Popen([BBNODED, "-c", conf, "-n", "bb01", "-l", "-"], stdout=out,
                              stderr=subprocess.STDOUT)
    try:
        for d in left:
            wait_for(lambda: not os.path.exists(d), "%s to be removed" % d)
    finally:
        p2.send_signal(signal.SIGTERM)
        p2.wait(timeout=20)
    with open(log) as f:
        assert "left in the trash by an earlier run: removed" in f.read()


def test_bad_directory_set_removes_nothing(agent, tmp_base):
    """A set with a name that is not one directory is refused whole: nothing made
    outside the mount, nothing removed."""
    mgr, mount, _, log = agent
    keep = os.path.join(mount, "live")
    mkdirs(keep, 0o700)
    mgr.reply(dirs_gen="g2", dirs=[{"name": "../escape", "uid": USER1, "gid": GID1}])
    # the agent does not take the set: it keeps asking with its old generation
    mgr.next(lambda b: True)
    mgr.next(lambda b: b.get("dirs") != "g2")
    assert os.path.isdir(keep)
    assert not os.path.exists(os.path.join(os.path.dirname(mount), "escape"))
    with open(log) as f:
        assert "bad directory" in f.read()


def test_results_kept_until_acknowledged(agent, tmp_base):
    mgr, mount, _, _ = agent
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "x"), os.urandom(1 << 20), 0o644)
    mgr.reply(dirs_gen="g1", dirs=[{"name": "j1", "uid": USER1, "gid": GID1}],
              tasks=[task(7, os.path.join(pfs, "x"), os.path.join(mount, "j1", "x"))])
    # every report is refused from now on: the result comes again each time
    mgr.reply(503, default=True, error={"message": "busy"})
    for _ in range(3):
        b = mgr.next(result_of(7))
        r = [r for r in b["results"] if r["id"] == 7][0]
        assert r["state"] == "done" and r["bytes_done"] == 1 << 20, r
    # acknowledged (200) and no longer listed: not sent again, not run again
    mgr.reply(200, default=True, dirs_gen="g1", tasks=[])
    mgr.next(lambda b: not any(r["id"] == 7 for r in b["results"]))
    b = mgr.next(lambda b: True)
    assert not b["results"], b
    with open(os.path.join(mount, "j1", "x"), "rb") as f, open(os.path.join(pfs, "x"), "rb") as g:
        assert f.read() == g.read()


def test_refused_report_makes_progress(agent, tmp_base):
    """bbmgrd refuses the agent's report as too large (413: its limits.max_body is
    smaller than the agent's, or results quote long file names): the agent sends
    fewer results at a time until they fit, and every result gets through."""
    mgr, mount, _, log = agent
    outside = os.path.join(tmp_base, "elsewhere" + "x" * 200)
    mkdirs(outside)
    mgr.max_body = 2500
    mgr.reply(tasks=[task(100 + i, "/pfs/x", os.path.join(outside, "x%d" % i))
                     for i in range(30)])
    seen = set()
    wait_for(lambda: seen.update(r["id"] for r in mgr.next()["results"]
                                 if r["state"] == "failed") or len(seen) == 30,
             "every refused transfer reported", timeout=30)
    assert mgr.refused > 0
    with open(log) as f:
        assert "refused a report of" in f.read()


def test_task_it_cannot_run_is_failed_once(agent, tmp_base):
    """A listed task the agent cannot take (a path with a '.' component: the one
    path rule) is failed with the reason, once, and not logged at every report."""
    mgr, mount, _, log = agent
    mgr.reply(200, default=True, dirs_gen="g1", dirs=[{"name": "j1", "uid": USER1, "gid": GID1}],
              tasks=[task(41, "/pfs/./x", os.path.join(mount, "j1", "x"))])
    b = mgr.next(result_of(41))
    r = [r for r in b["results"] if r["id"] == 41][0]
    assert r["state"] == "failed" and "'.' or '..'" in r["message"], r
    for _ in range(10):         # a second listing of it changes nothing
        b = mgr.next()
        assert not any(r["id"] == 41 for r in b["results"]), b
    with open(log) as f:
        assert f.read().count("transfer 41 refused") == 1


def test_root_and_system_uids_refused(agent, tmp_base):
    """Whatever answers on bbmgrd's address cannot make the agent act as root or as
    a system account (uid below agents.min_uid): the task fails saying so, and
    nothing is read or made; a directory for such a uid is not made."""
    mgr, mount, _, log = agent
    secret = os.path.join(tmp_base, "secret")
    write(secret, b"root's", 0o600, uid=0, gid=0)
    os.makedirs(os.path.join(mount, "j0"), mode=0o700)
    tasks = []
    for tid, uid, gid in ((51, 0, 0), (52, 100, 100), (53, USER1, 0)):
        t = task(tid, secret, os.path.join(mount, "j0", "copy%d" % tid))
        t.update(uid=uid, gid=gid)
        tasks.append(t)
    mgr.reply(dirs_gen="g1", dirs=[{"name": "j0", "uid": 0, "gid": 0},
                                   {"name": "sys", "uid": 5, "gid": 5}], tasks=tasks)
    seen = {}
    wait_for(lambda: seen.update({r["id"]: r for r in mgr.next()["results"]}) or
             all(t in seen for t in (51, 52, 53)), "the three tasks answered")
    for t in (51, 52, 53):
        assert seen[t]["state"] == "failed" and "agents.min_uid" in seen[t]["message"], seen[t]
        assert not os.path.exists(os.path.join(mount, "j0", "copy%d" % t))
    assert not os.path.exists(os.path.join(mount, "sys"))
    with open(log) as f:
        assert "for uid 5 gid 5 refused" in f.read()


def test_lost_and_found_is_not_an_orphan(agent, tmp_base):
    """The root-owned lost+found at the root of the agent's mount (what mkfs makes)
    is never removed as an orphan; an orphan job directory beside it is."""
    mgr, mount, _, log = agent
    lf = os.path.join(mount, "lost+found")
    os.makedirs(lf, mode=0o700)
    write(os.path.join(lf, "#1234"), b"recovered", 0o600, uid=0, gid=0)
    rootdir = os.path.join(mount, "4711")
    os.makedirs(rootdir, mode=0o700)
    orphan = os.path.join(mount, "4712")
    mkdirs(orphan, 0o700)
    mgr.reply(dirs_gen="g1", dirs=[{"name": "j1", "uid": USER1, "gid": GID1}])
    mgr.next(lambda b: b.get("dirs") == "g1")
    wait_for(lambda: not os.path.exists(orphan), "the orphan to be removed")
    # (the removals of one pass are queued together: had lost+found been taken for
    # an orphan, it would be logged by now)
    with open(log) as f:
        text = f.read()
    assert "4712 is no longer in bbmgrd's state" in text
    assert "lost+found is no longer" not in text and "4711 is no longer" not in text
    assert os.path.exists(os.path.join(lf, "#1234"))
    assert os.path.isdir(rootdir)


def usage_figures(body):
    return {("p" if "persistent" in u else "j", u.get("persistent") or u.get("job")): u
            for u in body.get("usage", [])}


def test_usage_measured_reported_and_dropped_for_an_older_manager(agent, tmp_base):
    """The agent measures each buffer directory of its set (a file of two links
    once, a symbolic link not followed) and reports it ("usage", with the
    directory's identity); a manager that refuses the key (an older bbmgrd: 400
    naming it) gets the next reports without it, and accepts them."""
    mgr, mount, _, log = agent
    mgr.reply(dirs_gen="u1", dirs=[{"name": "j7", "uid": USER1, "gid": GID1},
                                   {"name": "pb", "persistent": True, "uid": USER1,
                                    "gid": GID1}])
    mgr.next(lambda b: b.get("dirs") == "u1")
    j7, pb = os.path.join(mount, "j7"), os.path.join(mount, "persistent", "pb")
    write(os.path.join(j7, "a"), b"z" * (3 << 20), 0o600)
    os.link(os.path.join(j7, "a"), os.path.join(j7, "a2"))
    write(os.path.join(tmp_base, "outside"), b"o" * (8 << 20), 0o600)
    os.symlink(tmp_base, os.path.join(j7, "up"))
    write(os.path.join(pb, "b"), b"y" * (1 << 20), 0o600)
    body = mgr.next(lambda b: usage_figures(b).get(("j", "j7"), {}).get("used", 0) >= 3 << 20)
    u = usage_figures(body)[("j", "j7")]
    st = os.stat(j7)
    assert u["used"] < 4 << 20 and (u["dev"], u["ino"]) == (st.st_dev, st.st_ino), u
    mgr.next(lambda b: usage_figures(b).get(("p", "pb"), {}).get("used", 0) >= 1 << 20)
    # a bbmgrd older than the key
    mgr.reply(status=400, error={"code": 400, "field": "usage", "message": "unknown field"})
    mgr.next(lambda b: "usage" in b)
    for _ in range(5):
        assert "usage" not in mgr.next(), "usage sent again to a manager that refused it"
    with open(log) as f:
        assert "does not take the measured use of buffers" in f.read()
