# SPDX-License-Identifier: GPL-2.0-or-later
"""Attacks of users on bbmgrd (doc/security.md), against a real daemon, as two
unprivileged users (accounts made here when missing): what a user does to the files
the mover reads and writes, to buffer names, and to the daemon's limits must not let
them reach another user's data, block the mover or the daemon's stop, or exceed what
they were given.

Runs as root (the daemon acts as the users with setfsuid); skipped otherwise.
"""
import os
import signal
import stat
import subprocess
import time
import traceback

import pytest

from harmonia_test import wait
from conftest import SLURM_UID, USER1, USER2, register
from test_mover import (GID1, GID2, MiB, build_shim, compare_trees, mkdirs, mover_daemon,
                        new_job, preloaded, sparse, stage, wait_bytes, wait_xfer, write)
from test_mover_sync import wait_db_durable

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the security tests need root")


def as_user(uid, gid, fn, *args):
    """Run fn(*args) in a child process with the user's uid/gid (no other group)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn(*args)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "%s as uid %d failed" % (fn.__name__, uid)


def wait_for(cond, what, timeout=None, d=None):
    """cond() holds (harmonia_test.wait); on a timeout, bbmgrd's log tail."""
    return wait.wait_for(cond, what, timeout,
                         report=(lambda: d.log_text()[-3000:]) if d else None)


# ---------------------------------------------------------------- class 1
def test_buffer_name_reused_gets_a_new_directory(make_daemon, tmp_base, users):
    """User 1's persistent buffer 'pb' is destroyed and 'pb' created for user 2 in the
    same critical section of the daemon (one batch), while the teardown of user 1's
    directory (many files) goes on: user 2 gets an empty directory of its own, which
    the late teardown leaves alone, and nothing of user 1's."""
    d = mover_daemon(make_daemon, tmp_base)
    b = d.ok("POST", "/v1/persistent", {"name": "pb", "capacity": "1GiB"}, uid=USER1,
             expect=(201,))
    path = b["nodes"][0]["path"]

    def fill(root):
        os.makedirs(os.path.join(root, "deep"))
        for i in range(3000):
            with open(os.path.join(root, "deep" if i % 2 else "", "f%d" % i), "w") as f:
                f.write("user 1's secret\n")
    as_user(USER1, GID1, fill, path)
    r = d.ok("POST", "/v1/batch", {"requests": [
        {"method": "DELETE", "path": "/v1/persistent/pb"},
        {"method": "POST", "path": "/v1/persistent",
         "body": {"name": "pb", "capacity": "1GiB", "uid": USER2, "gid": GID2}}]},
        uid=SLURM_UID)
    assert [x["status"] for x in r["replies"]] == [200, 201], r
    assert r["replies"][1]["body"]["nodes"][0]["path"] == path
    # the old directory's teardown is over
    wait_for(lambda: "teardown: remove" in d.log_text(), "teardown of the old buffer", d=d)
    st = os.lstat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (USER2, GID2, 0o700), st
    assert os.listdir(path) == [], "user 2's new buffer holds: %s" % os.listdir(path)[:5]
    # user 1 cannot reach into it, user 2 can use it
    with pytest.raises(AssertionError):
        as_user(USER1, GID1, os.listdir, path)
    as_user(USER2, GID2, lambda: open(os.path.join(path, "mine"), "w").close())
    # destroyed for good: nothing left behind, in the trash either
    d.ok("DELETE", "/v1/persistent/pb", uid=USER2)
    wait_for(lambda: not os.path.exists(path), "teardown of user 2's buffer", d=d)
    trash = os.path.join(d.mount, "persistent", ".harmonia-trash")
    wait_for(lambda: not os.listdir(trash), "trash emptied", d=d)


# ---------------------------------------------------------------- class 2
def test_requeued_job_id_gets_a_clean_buffer(make_daemon, tmp_base, users):
    """Slurm keeps the id of a requeued job.  Job rq's stage-out is done but its fsyncs
    are held up (a shim delays fsync under 'out-slow'), so the teardown of its buffer
    waits, when rq is registered again: the new incarnation gets an empty buffer
    directory and a working stage-in; the first one's late teardown leaves it alone."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src1, src2 = os.path.join(pfs, "run1"), os.path.join(pfs, "run2")
    mkdirs(src1)
    mkdirs(src2)
    write(os.path.join(src1, "old"), os.urandom(MiB + 1), 0o640)
    write(os.path.join(src2, "new"), os.urandom(2 * MiB + 3), 0o640)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=1.0):
        d = mover_daemon(make_daemon, tmp_base)
    bb = new_job(d, "rq")
    assert wait_xfer(d, stage(d, "rq", "stage_in", src1, bb + "/in"))["state"] == "done"
    out = stage(d, "rq", "stage_out", bb + "/in", os.path.join(pfs, "out-slow"))
    x = wait_xfer(d, out)
    assert x["state"] == "done" and x["durable"] is False, x
    d.ok("DELETE", "/v1/jobs/rq", uid=SLURM_UID)
    # requeued: the same id again, at once
    assert new_job(d, "rq") == bb
    assert os.listdir(bb) == [], "the new incarnation's buffer holds %s" % os.listdir(bb)
    tid = stage(d, "rq", "stage_in", src2, bb + "/in2")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    # the first incarnation's stage-out becomes durable, then its buffer goes
    wait_db_durable(d, out)
    wait_for(lambda: "teardown: remove" in d.log_text(), "late teardown", d=d)
    assert os.path.isdir(bb), "the late teardown removed the new incarnation's buffer"
    assert sorted(os.listdir(bb)) == ["in2"]
    assert compare_trees(src2, bb + "/in2", owner=(USER1, GID1)) == 1
    assert compare_trees(src1, os.path.join(pfs, "out-slow")) == 1
    # the new incarnation works to its end
    out2 = stage(d, "rq", "stage_out", bb + "/in2", os.path.join(pfs, "out2"))
    assert wait_xfer(d, out2)["state"] == "done"
    d.ok("DELETE", "/v1/jobs/rq", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb), "teardown of the second incarnation", d=d)


# ---------------------------------------------------------------- class 3
def test_fifo_put_in_place_of_a_staged_file(make_daemon, tmp_base, users):
    """After the walk, the user replaces the files not yet copied by FIFOs: the mover
    does not open them (an open of a FIFO without a writer blocks), the transfer fails
    naming the file, another job's transfer still runs, and SIGTERM stops the daemon
    at once."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="4 MB/s", threads=2, depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    for i in range(12):
        write(os.path.join(src, "f%02d" % i), os.urandom(MiB), 0o644)
    try:
        bb = new_job(d, "ff")
        tid = stage(d, "ff", "stage_in", src, bb + "/in")
        wait_bytes(d, tid, MiB // 2)     # walked; copies under way

        def swap(src, dst):
            for name in sorted(os.listdir(src)):
                if name.startswith("f") and not os.path.exists(os.path.join(dst, name)):
                    tmp = os.path.join(src, ".fifo-" + name)
                    os.mkfifo(tmp)
                    os.replace(tmp, os.path.join(src, name))
        as_user(USER1, GID1, swap, src, bb + "/in")
        x = wait_xfer(d, tid, timeout=20)
        assert x["state"] == "failed", x
        assert "replaced during the transfer" in x["message"], x
        # the mover still serves
        other = os.path.join(pfs, "other")
        write(other, os.urandom(100 * 1024), 0o644)
        bb2 = new_job(d, "ok")
        assert wait_xfer(d, stage(d, "ok", "stage_in", other, bb2 + "/o", "file"))["state"] \
            == "done"
        t0 = time.time()
        assert d.stop() == 0
        assert time.time() - t0 < 10
    finally:
        if d.proc and d.proc.poll() is None:
            d.kill()


# ---------------------------------------------------------------- class 4
def pool_used(d):
    return d.ok("GET", "/v1/pools/nvme", uid=SLURM_UID)["used"]


def held(d):
    return d.ok("GET", "/v1/status", uid=SLURM_UID)["held"]


def tamper(out):
    """What a user may do to a stage-out's destination once it is done."""
    names = sorted(os.listdir(out))
    os.unlink(os.path.join(out, names[0]))
    os.mkfifo(os.path.join(out, ".fifo"))
    os.replace(os.path.join(out, ".fifo"), os.path.join(out, names[1]))
    os.symlink("/etc/passwd", os.path.join(out, ".link"))
    os.replace(os.path.join(out, ".link"), os.path.join(out, names[2]))


def test_buffer_on_disk_stays_counted(make_daemon, tmp_base, users):
    """A job's buffer kept after its end for a stage-out stays counted in its pool,
    with the reason shown to the administrator, also across a restart: while the
    stage-out's fsyncs are pending (the user tampering with its destination
    meanwhile: a file removed, one replaced by a FIFO, one by a symlink), then freed
    once it is durable and the buffer gone; for good when it could not be made
    durable."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    for i in range(4):
        write(os.path.join(src, "f%d" % i), os.urandom(300 * 1024 + i), 0o644)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=1.5,
                   HARMONIA_SHIM_FSYNC_EIO="out-eio"):
        d = mover_daemon(make_daemon, tmp_base)
    GiB = 1 << 30
    bb = new_job(d, "h1")
    assert wait_xfer(d, stage(d, "h1", "stage_in", src, bb + "/in"))["state"] == "done"
    out = os.path.join(pfs, "out-slow")
    tid = stage(d, "h1", "stage_out", bb + "/in", out)
    x = wait_xfer(d, tid)
    assert x["state"] == "done" and x["durable"] is False, x
    as_user(USER1, GID1, tamper, out)
    d.ok("DELETE", "/v1/jobs/h1", uid=SLURM_UID)
    assert os.path.isdir(bb)
    assert pool_used(d) == GiB, "the buffer on disk is not counted"
    h = held(d)
    assert [e["job"] for e in h] == ["h1"] and h[0]["bytes"] == GiB, h
    assert "durable" in h[0]["reason"], h
    wait_db_durable(d, tid)
    wait_for(lambda: not os.path.exists(bb) and pool_used(d) == 0, "buffer freed", d=d)
    assert held(d) == []

    # could not be made durable: kept, counted, across a restart
    bb = new_job(d, "h2")
    assert wait_xfer(d, stage(d, "h2", "stage_in", src, bb + "/in"))["state"] == "done"
    tid = stage(d, "h2", "stage_out", bb + "/in", os.path.join(pfs, "out-eio"))
    wait_for(lambda: wait_xfer(d, tid)["state"] == "failed", "not durable", d=d)
    d.ok("DELETE", "/v1/jobs/h2", uid=SLURM_UID)
    assert pool_used(d) == GiB
    d.restart()
    assert pool_used(d) == GiB, "a restart forgot the kept buffer"
    h = held(d)
    assert [(e["job"], e["kept"]) for e in h] == [("h2", True)], h
    assert "could not be made durable" in h[0]["reason"]
    assert os.path.isdir(bb + "/in")


def test_destroyed_persistent_buffer_on_disk_stays_counted(make_daemon, tmp_base, users):
    """The same for a persistent buffer destroyed while a stage-out from it (of a
    job that has ended) is still being made durable."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "f"), os.urandom(MiB), 0o644)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=1.5):
        d = mover_daemon(make_daemon, tmp_base)
    GiB = 1 << 30
    b = d.ok("POST", "/v1/persistent", {"name": "keep", "capacity": "1GiB"}, uid=USER1,
             expect=(201,))
    path = b["nodes"][0]["path"]
    register(d, "pj", uid=USER1, gid=GID1)
    d.ok("POST", "/v1/persistent/keep/use", {"job": "pj"}, uid=SLURM_UID)
    assert wait_xfer(d, stage(d, "pj", "stage_in", src, path + "/in"))["state"] == "done"
    tid = stage(d, "pj", "stage_out", path + "/in", os.path.join(pfs, "out-slow"))
    x = wait_xfer(d, tid)
    assert x["state"] == "done" and x["durable"] is False, x
    d.ok("DELETE", "/v1/jobs/pj", uid=SLURM_UID)
    d.ok("DELETE", "/v1/persistent/keep", uid=USER1)
    assert os.path.isdir(path)
    assert pool_used(d) == GiB, "the destroyed buffer on disk is not counted"
    assert [e["job"] for e in held(d)] == ["persistent:keep"], held(d)
    wait_db_durable(d, tid)
    wait_for(lambda: not os.path.exists(path) and pool_used(d) == 0, "buffer freed", d=d)
    assert held(d) == []


# ---------------------------------------------------------------- class 5
def test_stage_in_larger_than_the_allocation(make_daemon, tmp_base, users):
    """A (sparse) source of 3 GiB into an allocation of 1 GiB is refused before any
    byte is written, with the reason."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="20 MB/s")
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    sparse(os.path.join(pfs, "huge"), 3 << 30)
    bb = new_job(d, "big")
    x = wait_xfer(d, stage(d, "big", "stage_in", os.path.join(pfs, "huge"), bb + "/h", "file"),
                  timeout=15)
    assert x["state"] == "failed", x
    assert "more than the capacity of the buffer" in x["message"], x
    assert os.listdir(bb) == []


def test_holes_and_hard_links_kept(make_daemon, tmp_base, users):
    """A sparse file's holes stay holes in the copy (it does not take its apparent
    size from the buffer), and hard links within the staged tree stay links, both
    ways."""
    d = mover_daemon(make_daemon, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    src = os.path.join(pfs, "in")
    mkdirs(pfs)
    mkdirs(src)
    sparse(os.path.join(src, "sparse"), 256 * MiB)
    with open(os.path.join(src, "sparse"), "r+b") as f:
        f.seek(100 * MiB)
        f.write(b"middle")
    write(os.path.join(src, "a"), os.urandom(3 * MiB), 0o640)
    mkdirs(os.path.join(src, "sub"))
    os.link(os.path.join(src, "a"), os.path.join(src, "sub", "b"))
    bb = new_job(d, "sp")
    x = wait_xfer(d, stage(d, "sp", "stage_in", src, bb + "/in"))
    assert x["state"] == "done", x
    assert compare_trees(src, bb + "/in", owner=(USER1, GID1)) == 3
    st = os.stat(bb + "/in/sparse")
    assert st.st_size == 256 * MiB and st.st_blocks * 512 < 16 * MiB, \
        "the copy of a sparse file takes %d bytes" % (st.st_blocks * 512)
    a, b = os.stat(bb + "/in/a"), os.stat(bb + "/in/sub/b")
    assert (a.st_ino, a.st_nlink) == (b.st_ino, 2), "hard link copied as two files"
    out = os.path.join(pfs, "out")
    x = wait_xfer(d, stage(d, "sp", "stage_out", bb + "/in", out))
    assert x["state"] == "done", x
    assert os.stat(out + "/a").st_ino == os.stat(out + "/sub/b").st_ino
    assert os.stat(out + "/sparse").st_blocks * 512 < 16 * MiB


def test_entries_per_transfer_capped(make_daemon, tmp_base, users):
    d = mover_daemon(make_daemon, tmp_base, max_entries=50)
    pfs = os.path.join(tmp_base, "pfs")
    src = os.path.join(pfs, "many")
    mkdirs(pfs)
    mkdirs(src)
    for i in range(80):
        write(os.path.join(src, "e%d" % i), b"x", 0o644)
    bb = new_job(d, "many")
    x = wait_xfer(d, stage(d, "many", "stage_in", src, bb + "/m"))
    assert x["state"] == "failed" and "mover.max_entries" in x["message"], x


def test_persistent_limits_per_user(make_daemon, tmp_base, users):
    """Enforced by bbmgrd whoever calls: a user calling the API directly, or an
    administrator creating on a user's behalf."""
    d = make_daemon(limits={"persistent_per_user": 2,
                            "persistent_capacity_per_user": "3TiB"})
    d.ok("POST", "/v1/persistent", {"name": "a1", "capacity": "1TiB", "pool": "nvme"},
         uid=USER1, expect=(201,))
    st, js = d.request("POST", "/v1/persistent",
                       {"name": "a2", "capacity": "3TiB", "pool": "capacity"}, uid=USER1)
    assert st == 403 and js["error"]["field"] == "capacity", js
    d.ok("POST", "/v1/persistent", {"name": "a2", "capacity": "1TiB", "pool": "nvme"},
         uid=USER1, expect=(201,))
    st, js = d.request("POST", "/v1/persistent", {"name": "a3", "capacity": "1GiB"},
                       uid=USER1)
    assert st == 403 and "persistent_per_user" in js["error"]["message"], js
    st, js = d.request("POST", "/v1/persistent",
                       {"name": "a3", "capacity": "1GiB", "uid": USER1, "gid": GID1},
                       uid=SLURM_UID)
    assert st == 403, js
    # another user is not affected; a destroyed buffer frees its share
    d.ok("POST", "/v1/persistent", {"name": "b1", "capacity": "1GiB"}, uid=USER2,
         expect=(201,))
    d.ok("DELETE", "/v1/persistent/a1", uid=USER1)
    d.ok("POST", "/v1/persistent", {"name": "a3", "capacity": "1GiB"}, uid=USER1,
         expect=(201,))


def test_user_batch_bounded(make_daemon, users):
    """A user's batch of 256 listings of 1000 nodes would hold the daemon's lock and
    build a reply of tens of MiB: the items past the user's share are not run (503,
    to send again), and the reply stays within a few MiB.  An administrator's batch
    is not cut."""
    import json
    nodes = [{"names": "n[0001-1000]", "capacity": "1TiB", "bandwidth": "1 GB/s",
              "mount": "/nonexistent", "pool": "nvme"}]
    d = make_daemon(nodes=nodes, pools=[{"name": "nvme", "granularity": "1GiB"}],
                    limits={"max_body": "64KiB"})
    body = {"requests": [{"method": "GET", "path": "/v1/nodes"}] * 256}
    st, text = d.request("POST", "/v1/batch", body, uid=USER1,
                         headers={"Accept": "application/json"})
    assert st == 200
    js = text if isinstance(text, dict) else json.loads(text)
    size = len(json.dumps(js))
    codes = [x["status"] for x in js["replies"]]
    assert len(codes) == 256 and codes[0] == 200, codes[:3]
    assert codes[-1] == 503 and "send the items from this one again" in \
        js["replies"][-1]["body"]["error"]["message"], codes[-5:]
    assert size < 8 << 20, "a user's batch built a reply of %d bytes" % size
    js = d.ok("POST", "/v1/batch", {"requests": body["requests"][:20]}, uid=SLURM_UID)
    assert [x["status"] for x in js["replies"]] == [200] * 20


def test_closed_rows_are_not_kept_for_ever(make_daemon, users):
    """A loop of phase requests does not grow state.db without bound: closed phases,
    finished transfers and ended jobs go after limits.keep_closed (or beyond
    limits.keep_closed_count)."""
    import sqlite3
    d = make_daemon(limits={"keep_closed": "3s", "keep_closed_count": 1000})
    t0 = time.monotonic()
    for j in range(3):
        register(d, "loop%d" % j)
        for _ in range(20):
            p = d.ok("POST", "/v1/jobs/loop%d/phases" % j, {"volume": "1GiB"}, uid=USER1,
                     expect=(201,))
            d.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)
        d.ok("POST", "/v1/jobs/loop%d/stage_in" % j,
             {"source": "/pfs/x", "destination": "/mnt/bb/x"}, uid=SLURM_UID, expect=(201,))
        wait_for(lambda: d.ok("GET", "/v1/jobs/loop%d/stage_in" % j,
                              uid=SLURM_UID)["state"] == "done", "transfer done", d=d)
        d.ok("DELETE", "/v1/jobs/loop%d" % j, uid=SLURM_UID)
    db = os.path.join(d.state, "state.db")

    def rows():
        c = sqlite3.connect(db, timeout=5)
        try:
            return [c.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                    for t in ("phases", "transfers", "jobs")]
        finally:
            c.close()
    # nothing closed is older than keep_closed yet: every row is there (unless this
    # machine took longer than that to make them)
    seen = rows()
    if time.monotonic() - t0 < 3:
        assert seen == [60, 3, 3], seen
    wait_for(lambda: rows() == [0, 0, 0], "closed rows removed", d=d)


# ---------------------------------------------------------------- class 6
def unix_get(path, sock, d, uid, timeout=5):
    """GET path over the unix socket sock as uid (credential made for uid); status."""
    import http.client
    import socket as so

    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = so.socket(so.AF_UNIX, so.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(sock)
    c = Conn("localhost", timeout=timeout)
    try:
        c.request("GET", path, headers={"Authorization": "MUNGE " + d.munge.cred(
            "GET", path, uid=uid)})
        return c.getresponse().status
    finally:
        c.close()


def hold_connections(sock, uid, gid, n, ready_w, extra_result_w=None):
    """Child: as uid, open n connections that send half a request line, report, then
    try one more and report whether it was closed at once; then wait to be killed."""
    import socket as so
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    held = []
    for _ in range(n):
        s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        s.connect(sock)
        s.sendall(b"GET /v1/sta")
        held.append(s)
    os.write(ready_w, b"held\n")
    if extra_result_w is not None:
        s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        s.settimeout(3)
        s.connect(sock)
        try:
            s.sendall(b"GET /v1/sta")
            closed = s.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        except OSError:
            closed = False
        os.write(extra_result_w, b"closed\n" if closed else b"open\n")
    time.sleep(120)


def spawn(fn, *args):
    pid = os.fork()
    if pid == 0:
        try:
            fn(*args)
        finally:
            os._exit(0)
    return pid


def test_connection_limits(make_daemon, tmp_base, users):
    """A user holding connections on the unix socket (half a request each) is capped
    per uid; slurmctld's requests (the SlurmUser) still get through, on the unix
    socket and on the admin socket, which users cannot even open; a connection that
    trickles its request is closed at the request deadline, long before the
    inactivity timeout."""
    import socket as so
    admin = os.path.join(tmp_base, "admin.sock")
    d = make_daemon(listen={"admin_socket": admin},
                    limits={"max_connections": 6, "max_connections_per_uid": 4,
                            "request_deadline": "2s", "connection_timeout": "30s"})
    st = os.lstat(admin)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (SLURM_UID, 0o600), st
    pids = []
    try:
        r, w = os.pipe()
        r2, w2 = os.pipe()
        pids.append(spawn(hold_connections, d.unix, USER1, GID1, 4, w, w2))
        assert os.read(r, 16) == b"held\n"
        assert os.read(r2, 16) == b"closed\n", "a 5th connection of the same uid was served"
        # the refusal is logged (the log line may follow the close by a moment)
        wait_for(lambda: "limits.max_connections_per_uid" in d.log_text(),
                 "the per-uid refusal logged", timeout=10, d=d)
        # the SlurmUser still gets through on the unix socket
        assert unix_get("/v1/status", d.unix, d, SLURM_UID) == 200
        # another user's two connections fill the socket's 6; the admin socket serves
        pids.append(spawn(hold_connections, d.unix, USER2, GID2, 2, w))
        assert os.read(r, 16) == b"held\n"
        assert unix_get("/v1/status", admin, d, SLURM_UID) == 200
        # users cannot open the admin socket

        def try_admin():
            s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
            try:
                s.connect(admin)
            except PermissionError:
                return
            raise AssertionError("a user connected to the admin socket")
        as_user(USER2, GID2, try_admin)
        # the held connections trickle nothing more: closed at the 2 s deadline
        wait_for(lambda: unix_get("/v1/status", d.unix, d, USER1) == 200,
                 "user 1 served again after the deadline closed its connections",
                 timeout=10, d=d)
        # a client sending a byte every 0.3 s is cut at the deadline, not at 30 s
        s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        s.connect(d.unix)
        t0 = time.time()
        closed = False
        for ch in b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            try:
                s.sendall(bytes([ch]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.3)
        s.close()
        assert closed and time.time() - t0 < 6, "trickling connection kept %.1f s" % (
            time.time() - t0)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


# ---------------------------------------------------------------- class 7
def thread_status(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                text = f.read()
        except FileNotFoundError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        out.append((fields["Uid"].split(), int(fields["CapEff"].strip(), 16)))
    return out


def test_mover_threads_keep_no_privilege_as_the_user(make_daemon, tmp_base, users):
    """While a worker acts as the job's user (its fsuid), it has no effective
    capability (CAP_SYS_RESOURCE included: the user's quota and the reserved blocks
    apply); bbmgrd's soft open-files limit is its hard one."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="4 MB/s", threads=2)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "data"), os.urandom(16 * MiB), 0o644)
    bb = new_job(d, "cap")
    tid = stage(d, "cap", "stage_in", os.path.join(pfs, "data"), bb + "/d", "file")
    wait_bytes(d, tid, MiB)
    as_user_threads = [cap for uid, cap in thread_status(d.proc.pid) if uid[3] == str(USER1)]
    assert as_user_threads, "no thread acts as uid %d" % USER1
    assert all(cap == 0 for cap in as_user_threads), \
        "effective capabilities of threads acting as the user: %s" % [
            "%x" % c for c in as_user_threads]
    assert any(cap for uid, cap in thread_status(d.proc.pid) if uid[3] == "0")
    with open("/proc/%d/limits" % d.proc.pid) as f:
        line = [ln for ln in f if ln.startswith("Max open files")][0]
    soft, hard = line.split()[3:5]
    assert soft == hard, line
    assert wait_xfer(d, tid)["state"] == "done"
