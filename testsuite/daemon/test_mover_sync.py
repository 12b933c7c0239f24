# SPDX-License-Identifier: GPL-2.0-or-later
"""The mover's copy pipeline (doc/mover.md): one-chunk files finished in the task that
copied them, transfers fsync'd before done in batches before their renames,
mover.durable_stage_in, and stage-outs made durable after done (the transfer's
"durable" flag), with the job's buffer kept until then, also across a crash.  What
must hold whatever the batching: a file under its final name is complete, with its
mode and owner; no partial file outlives a transfer; stage-outs and stage-ins into
persistent buffers become durable (fsync'd).

Runs as root (the daemon acts as uid 1001 with setfsuid); skipped otherwise.
"""
import hashlib
import os
import re
import sqlite3
import stat
import time

import pytest

from harmonia_test.wait import WaitTimeout, wait_for
from conftest import SLURM_UID, USER1
from test_mover import (GID1, MiB, build_shim, compare_trees, metrics, mkdirs, mover_daemon,
                        new_job, partials, preloaded, stage, wait_bytes, wait_xfer, write,
                        xfer)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the mover tests need root")

KiB = 1 << 10


def many_files(root, nsmall=150, seed=7):
    """nsmall files of 0-64 KiB spread over nested directories (several SYNC batches),
    a few multi-chunk files (chunks of 1 MiB in these tests), modes 0600-0755."""
    mkdirs(root)
    modes = (0o600, 0o640, 0o644, 0o755)
    for i in range(nsmall):
        d = os.path.join(root, "d%d" % (i % 5), "e%d" % (i % 3))
        if not os.path.isdir(d):
            mkdirs(os.path.join(root, "d%d" % (i % 5)))
            mkdirs(d, 0o750)
        size = (i * 977 + seed) % (64 * KiB) if i % 10 else 0
        write(os.path.join(d, "s%03d" % i), os.urandom(size), modes[i % 4])
    for i, size in enumerate((MiB + 17, 3 * MiB, 5 * MiB - 1)):
        write(os.path.join(root, "big%d" % i), os.urandom(size), modes[i % 4])
    return nsmall + 3


def wait_durable(d, tid, timeout=None):
    def durable():
        x = xfer(d, tid)
        assert x["state"] == "done", x
        return x if x["durable"] else None
    return wait_for(durable, "transfer %d to be durable" % tid, timeout,
                    report=lambda: d.log_text()[-3000:])


def db_xfer(d, tid):
    """(state, durable) of transfer tid in the daemon's database (jobs that ended are no
    longer served by the API)."""
    db = sqlite3.connect(os.path.join(d.state, "state.db"), timeout=5)
    try:
        return db.execute("SELECT state, durable FROM transfers WHERE id=?", (tid,)).fetchone()
    finally:
        db.close()


def wait_db_durable(d, tid, timeout=None):
    def durable():
        row = db_xfer(d, tid)
        assert row[0] == "done", row
        return row == ("done", 1)
    wait_for(durable, "transfer %d durable in the database" % tid, timeout,
             report=lambda: "%s\n%s" % (db_xfer(d, tid), d.log_text()[-3000:]))


def wait_gone(path, timeout=None):
    """True once path is gone; False if it stays (the caller's assert says why)."""
    try:
        wait_for(lambda: not os.path.exists(path), "%s to be removed" % path, timeout)
        return True
    except WaitTimeout:
        return False


def teardown_waits(d, job, tid):
    """The job ended, and bbmgrd holds its buffer until stage-out tid is durable:
    GET /v1/status lists it as held, with the reason (what an admin sees)."""
    def held():
        for h in d.ok("GET", "/v1/status", uid=SLURM_UID).get("held", []):
            if h["job"] == job and "(first: transfer %d)" % tid in h["reason"]:
                return h
        return None
    h = wait_for(held, "bbmgrd to hold the buffer of job %s for stage-out %d" % (job, tid),
                 report=lambda: d.log_text()[-3000:])
    assert h["reason"].startswith("waits for ") and not h["kept"], h


def final_files(root):
    """Regular files under their final names (no partial file)."""
    out = []
    for dirpath, _, filenames in os.walk(root):
        out += [os.path.join(dirpath, n) for n in filenames if ".harmonia-partial" not in n]
    return out


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_complete(src_root, dst_root, seen):
    """Every file under its final name in dst_root is a complete copy (content and mode
    of the source).  seen caches the files already checked."""
    for t in final_files(dst_root):
        if t in seen:
            continue
        s = os.path.join(src_root, os.path.relpath(t, dst_root))
        try:
            st = os.lstat(t)
            data = digest(t)
        except FileNotFoundError:
            continue    # the transfer was cancelled and tore it down
        assert data == digest(s), "%s is under its final name but incomplete" % t
        assert stat.S_IMODE(st.st_mode) == stat.S_IMODE(os.lstat(s).st_mode), t
        seen.add(t)


@pytest.mark.parametrize("durable_in", [False, True])
def test_stage_in_and_out_many_files(make_daemon, tmp_base, durable_in):
    d = mover_daemon(make_daemon, tmp_base, durable_stage_in=durable_in)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    n = many_files(os.path.join(pfs, "in"))
    bb = new_job(d, "s1")
    tid = stage(d, "s1", "stage_in", os.path.join(pfs, "in"), bb + "/in")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert x["bytes_done"] == x["bytes_total"], x
    assert compare_trees(os.path.join(pfs, "in"), bb + "/in", owner=(USER1, GID1)) == n
    tid2 = stage(d, "s1", "stage_out", bb + "/in", os.path.join(pfs, "out"))
    x = wait_xfer(d, tid2)
    assert x["state"] == "done", x
    assert compare_trees(bb + "/in", os.path.join(pfs, "out"), owner=(USER1, GID1)) == n
    assert not partials(bb) and not partials(pfs)
    text = metrics(d)
    assert re.search(r"^harmonia_mover_files_total %d$" % (2 * n), text, re.M), text
    # which copies were fsync'd: stage-out always (after done), stage-in as configured
    log = d.log_text()
    assert re.search(r"transfer %d of job s1: stage_in .*, %s\)" % (
        tid, "fsync'd before done" if durable_in else "not fsync'd"), log)
    assert re.search(r"transfer %d of job s1: stage_out .*, fsync'd after done\)" % tid2, log)
    assert xfer(d, tid)["durable"] is durable_in
    wait_durable(d, tid2)
    assert ("stage-in into job buffers %s" % ("fsync'd" if durable_in else "not fsync'd")
            in log)


def test_stage_in_into_persistent_buffer_is_durable(make_daemon, tmp_base):
    d = mover_daemon(make_daemon, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "data"), os.urandom(2 * MiB + 5), 0o640)
    new_job(d, "p1")
    b = d.ok("POST", "/v1/persistent", {"name": "keep", "capacity": "1GiB", "pool": "nvme"},
             uid=USER1, expect=(201,))
    path = b["nodes"][0]["path"]
    assert path.startswith(d.mount + "/persistent/")
    d.ok("POST", "/v1/persistent/keep/use", {"job": "p1"}, uid=USER1)
    tid = stage(d, "p1", "stage_in", os.path.join(pfs, "data"), path + "/data", "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert digest(path + "/data") == digest(os.path.join(pfs, "data"))
    assert os.stat(path + "/data").st_uid == USER1
    assert re.search(r"transfer %d of job p1: stage_in .*, fsync'd before done\)" % tid,
                     d.log_text())
    assert x["durable"] is True, x


@pytest.mark.parametrize("kind", ["stage_in", "stage_out"])
def test_no_final_name_before_the_copy_is_complete(make_daemon, tmp_base, kind):
    """Rate-capped so that the copy takes a few seconds: the destination is scanned
    all along; whatever has its final name must be the whole file with its mode."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="20 MB/s", depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    n = many_files(src, nsmall=120, seed=3)
    bb = new_job(d, "s2")
    if kind == "stage_out":
        # the buffer side gets the tree first (uncapped copies would be as good)
        tid = stage(d, "s2", "stage_in", src, bb + "/in")
        assert wait_xfer(d, tid, timeout=60)["state"] == "done"
        src, dst = bb + "/in", os.path.join(pfs, "out")
    else:
        dst = bb + "/in"
    tid = stage(d, "s2", kind, src, dst)
    seen = set()

    def watched():
        check_complete(src, dst, seen)     # at every moment of the copy
        return xfer(d, tid)["state"] in ("done", "failed", "cancelled")
    wait_for(watched, "the copy to end, watched", interval=0.02)
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert 0 < len(seen) or n == 0
    check_complete(src, dst, seen)
    assert len(seen) == n
    assert compare_trees(src, dst, owner=(USER1, GID1)) == n
    assert not partials(bb) and not partials(pfs)


def test_cancel_with_files_waiting_for_their_fsync(make_daemon, tmp_base):
    """A stage-out (durable) cancelled mid-way: files verified but not yet fsync'd and
    renamed are removed with the partial ones; those already renamed are complete."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="10 MB/s", depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    many_files(src, nsmall=200, seed=11)
    for i in range(4):
        write(os.path.join(src, "late%d" % i), os.urandom(4 * MiB), 0o644)
    bb = new_job(d, "s3")
    tid = stage(d, "s3", "stage_in", src, bb + "/in")
    assert wait_xfer(d, tid, timeout=120)["state"] == "done"
    out = os.path.join(pfs, "out")
    tid = stage(d, "s3", "stage_out", bb + "/in", out)
    wait_bytes(d, tid, 3 * MiB)
    d.ok("PUT", "/v1/transfers/%d" % tid, {"state": "cancelled", "message": "test"},
         uid=SLURM_UID)
    wait_xfer(d, tid, states=("cancelled",))
    wait_for(lambda: not partials(out), "the cancelled copy's partial files to go")
    check_complete(bb + "/in", out, set())
    assert len(final_files(out)) < len(final_files(bb + "/in"))


@pytest.mark.parametrize("before", [False, True])
def test_stage_out_done_then_durable(make_daemon, tmp_base, before):
    """Default: a stage-out is done once complete, verified and in place, then its
    fsyncs run and 'durable' becomes true.  durable_before_done: durable at done."""
    d = mover_daemon(make_daemon, tmp_base, durable_before_done=before)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    n = many_files(os.path.join(pfs, "in"), nsmall=40)
    bb = new_job(d, "o1")
    tid = stage(d, "o1", "stage_in", os.path.join(pfs, "in"), bb + "/in")
    assert wait_xfer(d, tid)["state"] == "done"
    tid = stage(d, "o1", "stage_out", bb + "/in", os.path.join(pfs, "out"))
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert compare_trees(bb + "/in", os.path.join(pfs, "out"), owner=(USER1, GID1)) == n
    if before:
        assert x["durable"] is True, x
        assert re.search(r"transfer %d of job o1: stage_out .*, fsync'd before done\)" % tid,
                         d.log_text())
    else:
        wait_durable(d, tid)
        assert re.search(r"mover: transfer %d durable: %d files and \d+ directories fsync'd"
                         % (tid, n), d.log_text())
    assert db_xfer(d, tid) == ("done", 1)
    js = d.ok("GET", "/v1/jobs/o1/stage_out", uid=USER1)
    assert js["state"] == "done" and js["transfers"][0]["durable"] is True, js
    assert not partials(pfs)


def test_buffer_kept_until_stage_out_is_durable(make_daemon, tmp_base):
    """The fsyncs of the stage-out are slowed down (a shim delays fsync under
    'out-slow'): the job ends while they go on; its buffer directory stays until the
    stage-out is durable, then goes."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "a"), os.urandom(2 * MiB + 3), 0o640)
    write(os.path.join(src, "b"), os.urandom(1000), 0o644)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=1.0):
        d = mover_daemon(make_daemon, tmp_base)
    bb = new_job(d, "o2")
    tid = stage(d, "o2", "stage_in", src, bb + "/in")
    assert wait_xfer(d, tid)["state"] == "done"
    out = os.path.join(pfs, "out-slow")
    tid = stage(d, "o2", "stage_out", bb + "/in", out)
    x = wait_xfer(d, tid)
    assert x["state"] == "done" and x["durable"] is False, x      # 3 fsyncs of 1 s to go
    assert compare_trees(src, out) == 2     # visible, complete, verified
    d.ok("DELETE", "/v1/jobs/o2", uid=SLURM_UID)
    teardown_waits(d, "o2", tid)
    # not the administrator's to release: it goes by itself once durable
    st, js = d.request("DELETE", "/v1/held/o2", uid=SLURM_UID)
    assert st == 409 and "goes by itself once durable" in js["error"]["message"], (st, js)
    assert os.path.isdir(bb), "buffer removed before the stage-out was durable"
    assert db_xfer(d, tid) == ("done", 0)
    assert wait_gone(bb), "buffer not removed after the stage-out became durable"
    wait_db_durable(d, tid)
    log = d.log_text()
    durable_at = log.index("mover: transfer %d durable" % tid)
    assert durable_at < log.index("teardown: removed %s" % bb), log[-3000:]


def test_crash_before_durable_then_restart(make_daemon, tmp_base):
    """SIGKILL while the fsyncs of two done stage-outs are held up (by the shim): job e1
    had ended (its buffer waits), job e2 still runs.  At the restart both are made
    durable again from their buffers (a destination file lost meanwhile is copied
    again); e1's buffer is then removed, e2's stays until e2 ends."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    n = many_files(src, nsmall=30, seed=5)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=60):
        d = mover_daemon(make_daemon, tmp_base)
    bbs, tids = {}, {}
    for job in ("e1", "e2"):
        bbs[job] = new_job(d, job)
        tid = stage(d, job, "stage_in", src, bbs[job] + "/in")
        assert wait_xfer(d, tid)["state"] == "done"
        tids[job] = stage(d, job, "stage_out", bbs[job] + "/in",
                          os.path.join(pfs, "out-slow-" + job))
        x = wait_xfer(d, tids[job])
        assert x["state"] == "done" and x["durable"] is False, x
    d.ok("DELETE", "/v1/jobs/e1", uid=SLURM_UID)
    teardown_waits(d, "e1", tids["e1"])
    assert os.path.isdir(bbs["e1"])
    assert db_xfer(d, tids["e1"]) == ("done", 0)
    d.kill()
    # what a crash of the machine could leave: a file under its final name is gone
    lost = final_files(os.path.join(pfs, "out-slow-e1"))[0]
    os.unlink(lost)
    d.start()       # without the shim
    wait_db_durable(d, tids["e1"])
    assert wait_gone(bbs["e1"]), "the ended job's buffer was not removed after recovery"
    x = wait_durable(d, tids["e2"])
    assert x["state"] == "done", x
    assert os.path.isdir(bbs["e2"])     # e2 still runs
    for job in ("e1", "e2"):
        assert compare_trees(src, os.path.join(pfs, "out-slow-" + job),
                             owner=(USER1, GID1)) == n
    assert not partials(pfs)
    log = d.log_text()
    for job in ("e1", "e2"):
        assert "recovery: stage-out %d of job %s was done but not yet durable" % (
            tids[job], job) in log
    # the lost file was copied again, the others only fsync'd
    assert re.search(r"mover: transfer %d: \d+ bytes already complete" % tids["e1"], log)
    d.ok("DELETE", "/v1/jobs/e2", uid=SLURM_UID)
    assert wait_gone(bbs["e2"])


def test_stage_out_not_durable_keeps_its_buffer(make_daemon, tmp_base):
    """fsync fails (the shim returns EIO under 'out-eio') after the stage-out is done:
    the transfer turns failed ('not durable: ...'), and the job's buffer, which may
    hold the only good copy, is not removed when the job ends."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "a"), os.urandom(MiB + 7), 0o640)
    with preloaded(so, HARMONIA_SHIM_FSYNC_EIO="out-eio"):
        d = mover_daemon(make_daemon, tmp_base)
    bb = new_job(d, "o3")
    tid = stage(d, "o3", "stage_in", src, bb + "/in")
    assert wait_xfer(d, tid)["state"] == "done"
    tid = stage(d, "o3", "stage_out", bb + "/in", os.path.join(pfs, "out-eio"))
    x = wait_xfer(d, tid, states=("failed",))
    assert x["durable"] is False, x
    assert x["message"].startswith("not durable: ") and "Input/output error" in x["message"], x
    d.ok("DELETE", "/v1/jobs/o3", uid=SLURM_UID)
    wait_for(lambda: "teardown: %s is kept" % bb in d.log_text(), "the teardown to keep " + bb,
             report=lambda: d.log_text()[-3000:])
    assert os.path.isdir(bb + "/in"), "the buffer of a stage-out that is not durable was removed"
    assert db_xfer(d, tid) == ("failed", None)
    # `bbmgr release o3`: only an administrator; then the buffer goes, its space is free
    st, js = d.request("DELETE", "/v1/held/o3", uid=USER1)
    assert st == 403, (st, js)
    st, js = d.request("DELETE", "/v1/held/nosuchjob", uid=SLURM_UID)
    assert st == 404 and "no buffer of 'nosuchjob' is held" in js["error"]["message"], (st, js)
    js = d.ok("DELETE", "/v1/held/o3", uid=SLURM_UID)
    assert js["released"] is True and js["bytes"] > 0, js
    assert wait_gone(bb), "the released buffer was not removed"
    assert d.ok("GET", "/v1/status", uid=SLURM_UID)["held"] == []
