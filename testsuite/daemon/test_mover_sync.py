# SPDX-License-Identifier: GPL-2.0-or-later
"""The mover's copy pipeline (doc/mover.md): one-chunk files finished in the task that
copied them, durable transfers fsync'd in batches before their renames, and
mover.durable_stage_in.  What must hold whatever the batching: a file under its final
name is complete, with its mode and owner; no partial file outlives a transfer;
stage-outs and stage-ins into persistent buffers are durable (fsync'd).

Runs as root (the daemon acts as uid 1001 with setfsuid); skipped otherwise.
"""
import hashlib
import os
import re
import stat
import time

import pytest

from conftest import SLURM_UID, USER1
from test_mover import (GID1, MiB, compare_trees, metrics, mkdirs, mover_daemon, new_job,
                        partials, stage, wait_bytes, wait_xfer, write, xfer)

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
    # which copies were fsync'd: stage-out always, stage-in as configured
    log = d.log_text()
    assert re.search(r"transfer %d of job s1: stage_in .*, %s\)" % (
        tid, "durable" if durable_in else "not fsync'd"), log)
    assert re.search(r"transfer %d of job s1: stage_out .*, durable\)" % tid2, log)
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
    assert re.search(r"transfer %d of job p1: stage_in .*, durable\)" % tid, d.log_text())


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
    t0 = time.time()
    while time.time() - t0 < 60:
        check_complete(src, dst, seen)
        if xfer(d, tid)["state"] in ("done", "failed", "cancelled"):
            break
        time.sleep(0.02)
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
    t0 = time.time()
    while xfer(d, tid)["state"] != "cancelled" and time.time() - t0 < 10:
        time.sleep(0.05)
    assert xfer(d, tid)["state"] == "cancelled"
    t0 = time.time()
    while partials(out) and time.time() - t0 < 5:
        time.sleep(0.05)
    assert not partials(out)
    check_complete(bb + "/in", out, set())
    assert len(final_files(out)) < len(final_files(bb + "/in"))
