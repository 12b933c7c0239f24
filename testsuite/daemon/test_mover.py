# SPDX-License-Identifier: GPL-2.0-or-later
"""The data mover (stage.mode: mover): real copies between a directory standing in
for the PFS and one standing in for the buffer nodes' mount, as the job's user.

Runs as root (the daemon acts as uid 1001 with setfsuid); skipped otherwise.
"""
import contextlib
import hashlib
import os
import re
import shutil
import stat
import subprocess
import time

import pytest

from harmonia_test.wait import wait_for
from conftest import BBMGRD, SLURM_UID, USER1, register

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the mover tests need root")

MiB = 1 << 20
GID1 = 1001      # the gids of USER1's and USER2's files
GID2 = 1002


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write(path, data, mode, uid=USER1, gid=GID1):
    with open(path, "wb") as f:
        f.write(data)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def sparse(path, size, uid=USER1, gid=GID1):
    with open(path, "wb") as f:
        f.truncate(size)
        f.write(b"x")       # not all zeros
    os.chown(path, uid, gid)


def mkdirs(path, mode=0o755, uid=USER1, gid=GID1):
    os.makedirs(path, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def partials(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found += [os.path.join(dirpath, n) for n in filenames + dirnames
                  if ".harmonia-partial" in n]
    return found


# An LD_PRELOAD shim for fault injection, built by the tests that use it (the daemon
# has no fault hooks of its own).  For file descriptors whose path contains
# $HARMONIA_SHIM_CORRUPT, pwrite writes the data with one byte changed (the caller's
# buffer is left alone); fsync of those whose path contains $HARMONIA_SHIM_FSYNC_MATCH
# first sleeps $HARMONIA_SHIM_FSYNC_SECONDS, and fails with EIO for those whose path
# contains $HARMONIA_SHIM_FSYNC_EIO.
SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int matches(int fd, const char *var)
{
    const char *want = getenv(var);
    char link[64], path[4096];
    ssize_t n;
    if (!want || !*want)
        return 0;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    if ((n = readlink(link, path, sizeof(path) - 1)) < 0)
        return 0;
    path[n] = 0;
    return strstr(path, want) != NULL;
}

static ssize_t shim_pwrite(const char *name, int fd, const void *buf, size_t len, off_t off)
{
    ssize_t (*real)(int, const void *, size_t, off_t) = dlsym(RTLD_NEXT, name);
    unsigned char *copy;
    if (len > 0 && matches(fd, "HARMONIA_SHIM_CORRUPT") && (copy = malloc(len))) {
        memcpy(copy, buf, len);
        copy[len / 2] ^= 0x5a;
        ssize_t r = real(fd, copy, len, off);
        int e = errno;
        free(copy);
        errno = e;
        return r;
    }
    return real(fd, buf, len, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    return shim_pwrite("pwrite", fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    return shim_pwrite("pwrite64", fd, buf, len, off);
}

int fsync(int fd)
{
    int (*real)(int) = dlsym(RTLD_NEXT, "fsync");
    const char *s = getenv("HARMONIA_SHIM_FSYNC_SECONDS");
    if (matches(fd, "HARMONIA_SHIM_FSYNC_EIO")) {
        errno = EIO;
        return -1;
    }
    if (s && matches(fd, "HARMONIA_SHIM_FSYNC_MATCH")) {
        double d = atof(s);
        struct timespec ts = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    return real(fd);
}
"""


def build_shim(base):
    """Compile SHIM_C into base/shim.so (skips the test without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the fault-injection shim")
    src, so = os.path.join(base, "shim.c"), os.path.join(base, "shim.so")
    with open(src, "w") as f:
        f.write(SHIM_C)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", so, src, "-ldl"], check=True)
    return so


def asan_runtime():
    """The ASan runtime bbmgrd is linked with (sanitizer builds), else None: it must
    come first in LD_PRELOAD."""
    out = subprocess.run(["ldd", BBMGRD], capture_output=True, text=True).stdout
    m = re.search(r"libasan\.so\S*\s*=>\s*(\S+)", out)
    return m.group(1) if m else None


@contextlib.contextmanager
def preloaded(so, **env):
    """Daemons started inside get the shim (and env); nothing else does."""
    keys = ["LD_PRELOAD"] + list(env)
    saved = {k: os.environ.get(k) for k in keys}
    os.environ["LD_PRELOAD"] = " ".join(p for p in (asan_runtime(), so) if p)
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def mover_daemon(make_daemon, base, **mover):
    mount = os.path.join(base, "bb")
    os.makedirs(mount, exist_ok=True)
    conf = {"threads": 4, "chunk": "1MiB", "depth": 16}
    conf.update(mover)
    policy = conf.pop("policy", "fairshare")
    d = make_daemon(
        stage={"mode": "mover"}, mover=conf,
        policy={"id": policy, "overprovision": 1.0},
        pools=[{"name": "nvme", "granularity": "1GiB"}],
        nodes=[{"names": "bb[01-02]", "capacity": "1TiB", "bandwidth": "2 GB/s",
                "mount": mount, "pool": "nvme"}])
    d.mount = mount
    return d


def new_job(d, jobid, **kw):
    register(d, jobid, uid=USER1, gid=GID1, **kw)
    a = d.ok("POST", "/v1/jobs/%s/allocation" % jobid, {"capacity": "1GiB"}, uid=SLURM_UID,
             expect=(201,))
    return a["nodes"][0]["path"]


def stage(d, jobid, kind, src, dst, typ="directory"):
    return d.ok("POST", "/v1/jobs/%s/%s" % (jobid, kind),
                {"source": src, "destination": dst, "type": typ}, uid=SLURM_UID,
                expect=(201,))["id"]


def xfer(d, tid):
    return d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID)


def wait_xfer(d, tid, states=("done", "failed", "cancelled"), timeout=None):
    return wait_for(lambda: (lambda x: x if x["state"] in states else None)(xfer(d, tid)),
                    "transfer %d to end (%s)" % (tid, "/".join(states)), timeout,
                    report=lambda: "%s\n%s" % (xfer(d, tid), d.log_text()[-3000:]))


def wait_bytes(d, tid, at_least, timeout=None):
    return wait_for(lambda: (lambda x: x if x["bytes_done"] >= at_least
                             or x["state"] not in ("running", "queued") else None)(xfer(d, tid)),
                    "transfer %d to copy %d bytes" % (tid, at_least), timeout,
                    report=lambda: "%s\n%s" % (xfer(d, tid), d.log_text()[-3000:]))


def metrics(d):
    st, text = d.request("GET", "/metrics", auth=False)
    assert st == 200
    return text


def job_bytes(text):
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^harmonia_mover_job_bytes_total\{job="([^"]+)"\} (\d+)$', text, re.M)}


def build_tree(root):
    """Files of several sizes and modes, nested directories, a symlink, a FIFO."""
    mkdirs(root)
    mkdirs(os.path.join(root, "sub", "deeper"), 0o750)
    os.chmod(os.path.join(root, "sub"), 0o755)
    write(os.path.join(root, "empty"), b"", 0o640)
    write(os.path.join(root, "one"), b"1", 0o600)
    write(os.path.join(root, "sub", "four"), os.urandom(4 * MiB + 1), 0o755)
    write(os.path.join(root, "sub", "deeper", "twenty"), os.urandom(20 * MiB), 0o640)
    # readable by the user through the "other" bits, owned by root: the copy is the user's
    write(os.path.join(root, "sub", "rootfile"), b"root's data\n", 0o644, uid=0, gid=0)
    os.symlink("sub/four", os.path.join(root, "link"))
    os.lchown(os.path.join(root, "link"), USER1, GID1)
    os.symlink("/etc/passwd", os.path.join(root, "sub", "abs"))
    os.mkfifo(os.path.join(root, "fifo"))
    t = 1.6e9
    os.utime(os.path.join(root, "sub", "deeper", "twenty"), (t, t + 0.123456789))


def compare_trees(src, dst, owner=None):
    """Byte for byte, modes, symlinks (not followed), times of regular files."""
    n = 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for name in dirnames + filenames:
            s = os.path.join(src, rel, name)
            t = os.path.join(dst, rel, name)
            ss = os.lstat(s)
            if stat.S_ISFIFO(ss.st_mode):
                assert not os.path.lexists(t), "special file copied: %s" % t
                continue
            ts = os.lstat(t)
            assert stat.S_IFMT(ss.st_mode) == stat.S_IFMT(ts.st_mode), t
            if stat.S_ISLNK(ss.st_mode):
                assert os.readlink(s) == os.readlink(t), t
            else:
                assert stat.S_IMODE(ss.st_mode) == stat.S_IMODE(ts.st_mode), \
                    "%s: mode %o != %o" % (t, stat.S_IMODE(ts.st_mode), stat.S_IMODE(ss.st_mode))
            if stat.S_ISREG(ss.st_mode):
                assert sha(s) == sha(t), "content of %s differs" % t
                assert ss.st_mtime_ns == ts.st_mtime_ns, t
                n += 1
            if owner:
                assert (ts.st_uid, ts.st_gid) == owner, "%s owned by %d:%d" % (
                    t, ts.st_uid, ts.st_gid)
    return n


def test_stage_in_and_out_tree(make_daemon, tmp_base):
    d = mover_daemon(make_daemon, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    build_tree(os.path.join(pfs, "in"))
    bb = new_job(d, "m1")
    # the daemon made the job's buffer directory for its user
    st = os.stat(bb)
    assert bb == os.path.join(d.mount, "m1")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (USER1, GID1, 0o700)

    tid = stage(d, "m1", "stage_in", os.path.join(pfs, "in"), bb + "/in")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    total = 1 + 4 * MiB + 1 + 20 * MiB + len(b"root's data\n")
    assert x["bytes_total"] == total and x["bytes_done"] == total, x
    assert "fifo" in (x["message"] or ""), x        # skipped with a note
    assert compare_trees(os.path.join(pfs, "in"), bb + "/in", owner=(USER1, GID1)) == 5
    assert not partials(bb)
    js = d.ok("GET", "/v1/jobs/m1/stage_in", uid=USER1)
    assert js["state"] == "done"

    # stage-out back to a PFS directory the user owns
    tid = stage(d, "m1", "stage_out", bb + "/in", os.path.join(pfs, "out"))
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert compare_trees(bb + "/in", os.path.join(pfs, "out"), owner=(USER1, GID1)) == 5
    assert not partials(pfs)

    # single file, into an existing directory
    tid = stage(d, "m1", "stage_in", os.path.join(pfs, "in", "sub", "four"), bb, "file")
    assert wait_xfer(d, tid)["state"] == "done"
    assert sha(os.path.join(bb, "four")) == sha(os.path.join(pfs, "in", "sub", "four"))
    assert os.stat(os.path.join(bb, "four")).st_uid == USER1

    text = metrics(d)
    assert re.search(r'^harmonia_mover_transfers_total\{outcome="done"\} 3$', text, re.M)
    assert job_bytes(text)["m1"] >= 2 * total

    # teardown removes the buffer directory and everything in it
    d.ok("DELETE", "/v1/jobs/m1", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb), "the teardown of " + bb)


def test_refused_and_failed_transfers(make_daemon, tmp_base):
    d = mover_daemon(make_daemon, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "secret"), b"s" * 5000, 0o600, uid=0, gid=0)
    mkdirs(os.path.join(pfs, "tree"))
    write(os.path.join(pfs, "tree", "ok"), b"fine", 0o644)
    write(os.path.join(pfs, "tree", "hidden"), b"no", 0o600, uid=0, gid=0)
    write(os.path.join(pfs, "data"), os.urandom(3 * MiB), 0o644)
    bb = new_job(d, "m2")

    # the source is not readable by the job's user
    tid = stage(d, "m2", "stage_in", os.path.join(pfs, "secret"), bb + "/secret", "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "failed", x
    assert os.path.join(pfs, "secret") in x["message"] and "Permission denied" in x["message"]
    tid = stage(d, "m2", "stage_in", os.path.join(pfs, "tree"), bb + "/tree")
    x = wait_xfer(d, tid)
    assert x["state"] == "failed" and "hidden" in x["message"], x
    assert not os.path.exists(bb + "/secret") and not os.path.exists(bb + "/tree/hidden")

    # the destination is outside the job's allocation
    outside = os.path.join(tmp_base, "elsewhere")
    tid = stage(d, "m2", "stage_in", os.path.join(pfs, "data"), outside, "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "failed" and "outside the job's buffers" in x["message"], x
    assert not os.path.exists(outside)
    # another job's directory is outside too
    other = new_job(d, "m2b")
    tid = stage(d, "m2", "stage_in", os.path.join(pfs, "data"), other + "/x", "file")
    assert wait_xfer(d, tid)["state"] == "failed"
    # stage-out from outside the buffers
    tid = stage(d, "m2", "stage_out", os.path.join(pfs, "data"), os.path.join(pfs, "o"), "file")
    assert wait_xfer(d, tid)["state"] == "failed"
    # a destination the user cannot write (stage-out into a root-owned PFS directory)
    mkdirs(os.path.join(pfs, "rootonly"), 0o755, uid=0, gid=0)
    tid = stage(d, "m2", "stage_in", os.path.join(pfs, "data"), bb + "/data", "file")
    assert wait_xfer(d, tid)["state"] == "done"
    tid = stage(d, "m2", "stage_out", bb + "/data", os.path.join(pfs, "rootonly", "d"), "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "failed" and "Permission denied" in x["message"], x
    assert not os.listdir(os.path.join(pfs, "rootonly"))
    assert not partials(bb) and not partials(pfs)
    js = d.ok("GET", "/v1/jobs/m2/stage_in", uid=SLURM_UID)
    assert js["state"] == "failed"


def test_cancel_mid_copy(make_daemon, tmp_base):
    d = mover_daemon(make_daemon, tmp_base, max_rate="50 MB/s", depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    sparse(os.path.join(pfs, "big"), 200 * MiB)
    bb = new_job(d, "m3")

    # cancelled through the API: the mover stops and removes its partial file
    tid = stage(d, "m3", "stage_in", os.path.join(pfs, "big"), bb + "/big", "file")
    x = wait_bytes(d, tid, 10 * MiB)
    assert x["state"] == "running", x
    assert partials(bb)
    d.ok("PUT", "/v1/transfers/%d" % tid, {"state": "cancelled", "message": "test"},
         uid=SLURM_UID)
    wait_for(lambda: not partials(bb), "the cancelled copy's partial files to go")
    assert not os.path.exists(bb + "/big")
    assert xfer(d, tid)["state"] == "cancelled"

    # ending the job cancels its transfers (and tears its directory down)
    tid = stage(d, "m3", "stage_in", os.path.join(pfs, "big"), bb + "/big2", "file")
    wait_bytes(d, tid, 5 * MiB)
    d.ok("DELETE", "/v1/jobs/m3", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb), "the teardown of " + bb)
    x = d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID, expect=(200, 404))
    assert x.get("state", "cancelled") == "cancelled"
    text = metrics(d)
    assert re.search(r'^harmonia_mover_transfers_total\{outcome="cancelled"\} 2$', text, re.M), text


def test_shares_follow_policy_weights(make_daemon, tmp_base):
    """set:4 with w_iter 64 s (set 3) and 16 s (set 2): weights 1:4 (IO-Sets
    priorities 4^-3 and 4^-2).  The mover is capped at 100 MB/s so that both jobs stay
    backlogged whatever the disk; served bytes are read from /metrics."""
    d = mover_daemon(make_daemon, tmp_base, max_rate="100 MB/s", depth=8, policy="set:4")
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    sparse(os.path.join(pfs, "a"), 256 * MiB)
    sparse(os.path.join(pfs, "b"), 256 * MiB)
    bba = new_job(d, "slow", hints={"w_iter": "64s"})
    bbb = new_job(d, "fast", hints={"w_iter": "16s"})
    ta = stage(d, "slow", "stage_in", os.path.join(pfs, "a"), bba + "/a", "file")
    tb = stage(d, "fast", "stage_in", os.path.join(pfs, "b"), bbb + "/b", "file")
    # past the start (both queues full: the slow job has 4 MiB, the fast one about
    # four times that), bytes served in a window of 2 s: the window is the measure
    wait_bytes(d, ta, 4 * MiB)
    wait_bytes(d, tb, 4 * MiB)
    m0 = job_bytes(metrics(d))
    time.sleep(2.0)
    m1 = job_bytes(metrics(d))
    text = metrics(d)
    wa = float(re.search(r'harmonia_mover_job_weight\{job="slow"\} (\S+)', text).group(1))
    wb = float(re.search(r'harmonia_mover_job_weight\{job="fast"\} (\S+)', text).group(1))
    assert abs(wb / wa - 4) < 1e-6, (wa, wb)
    # both still backlogged at m1
    assert xfer(d, tb)["state"] == "running" and xfer(d, ta)["state"] == "running"
    da = m1["slow"] - m0["slow"]
    db = m1["fast"] - m0["fast"]
    ratio = db / da
    print("served in 2 s: slow %.1f MiB, fast %.1f MiB, ratio %.2f (weights 1:4)"
          % (da / MiB, db / MiB, ratio))
    assert 4 * 0.8 <= ratio <= 4 * 1.2, (da, db, ratio)
    # no need to wait for the rest
    for tid in (ta, tb):
        d.ok("PUT", "/v1/transfers/%d" % tid, {"state": "cancelled"}, uid=SLURM_UID)


def test_crash_mid_transfer_then_restart(make_daemon, tmp_base):
    d = mover_daemon(make_daemon, tmp_base, max_rate="40 MB/s", depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(os.path.join(pfs, "in"))
    for i in range(4):
        write(os.path.join(pfs, "in", "f%d" % i), os.urandom(16 * MiB), 0o640)
    bb = new_job(d, "m5")
    tid = stage(d, "m5", "stage_in", os.path.join(pfs, "in"), bb + "/in")
    wait_bytes(d, tid, 24 * MiB)
    assert partials(bb), "expected a partial file mid-transfer"
    d.kill()
    # restart without the cap: the transfer is queued again and redone from scratch
    d.conf["mover"]["max_rate"] = "0 B/s"
    d.write_config()
    d.start()
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert x["bytes_done"] == x["bytes_total"] == 64 * MiB
    assert compare_trees(os.path.join(pfs, "in"), bb + "/in", owner=(USER1, GID1)) == 4
    assert not partials(bb)
    assert "already complete at the destination" in d.log_text()


@pytest.mark.parametrize("kind", ["stage_in", "stage_out"])
def test_read_back_catches_a_corrupted_copy(make_daemon, tmp_base, kind):
    """The shim changes one byte of every block written under a destination named
    'corrupt-me': the read-back of each block must catch it, fail the transfer and
    leave no file under its final name (without the read-back the copies would be
    done, with wrong data)."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "big"), os.urandom(3 * MiB + 5), 0o640)    # 4 chunks
    write(os.path.join(src, "small"), os.urandom(1000), 0o644)         # 1 chunk
    with preloaded(so, HARMONIA_SHIM_CORRUPT="corrupt-me"):
        d = mover_daemon(make_daemon, tmp_base)
    bb = new_job(d, "c1")
    if kind == "stage_in":
        dst = bb + "/corrupt-me"
    else:
        tid = stage(d, "c1", "stage_in", src, bb + "/in")
        assert wait_xfer(d, tid)["state"] == "done"
        src, dst = bb + "/in", os.path.join(pfs, "corrupt-me")
    tid = stage(d, "c1", kind, src, dst)
    x = wait_xfer(d, tid)
    assert x["state"] == "failed", x
    assert "checksum mismatch at offset" in x["message"], x
    assert x["durable"] is False, x
    for name in ("big", "small"):
        assert not os.path.lexists(os.path.join(dst, name)), name
    assert not partials(bb) and not partials(pfs)
    # the same data elsewhere is copied (the shim only touches 'corrupt-me')
    tid = stage(d, "c1", kind, src, dst.replace("corrupt-me", "fine"))
    assert wait_xfer(d, tid)["state"] == "done"
    assert sha(os.path.join(dst.replace("corrupt-me", "fine"), "big")) == \
        sha(os.path.join(src, "big"))


def spares(d):
    sp = os.path.join(d.mount, ".harmonia-spare")
    return sorted(os.listdir(sp)) if os.path.isdir(sp) else []


def test_buffer_directories_come_from_spares(make_daemon, tmp_base):
    """While allocations are quiet, bbmgrd keeps empty directories ready in
    <mount>/.harmonia-spare (0700, its own); an allocation renames one into place
    and gives it to the job's user, as a fresh mkdir would; teardown removes it;
    the spares come back once allocations are quiet again.  Nobody else can reach
    a spare, and a job cannot be named after the spare directory."""
    d = mover_daemon(make_daemon, tmp_base)
    wait_for(lambda: len(spares(d)) >= 32, "32 spare directories")
    before = spares(d)
    assert len(before) == 32, before
    st = os.lstat(os.path.join(d.mount, ".harmonia-spare"))
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o700)
    for name in before:
        p = os.path.join(d.mount, ".harmonia-spare", name)
        assert os.listdir(p) == [] and stat.S_IMODE(os.lstat(p).st_mode) == 0o700
    bb = new_job(d, "sp1")
    st = os.stat(bb)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (USER1, GID1, 0o700)
    assert os.listdir(bb) == []
    # bb01 and bb02 share the mount: one spare taken, at once, not refilled yet
    assert len(spares(d)) == 31
    d.ok("DELETE", "/v1/jobs/sp1", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb) and len(spares(d)) >= 32,
             "the teardown and the spares back to 32")
    assert len(spares(d)) == 32
    # a job id naming the spare directory gets no directory (and never the spares)
    register(d, ".harmonia-spare", uid=USER1, gid=GID1)
    d.ok("POST", "/v1/jobs/.harmonia-spare/allocation", {"capacity": "1GiB"},
         uid=SLURM_UID, expect=(201,))
    st = os.lstat(os.path.join(d.mount, ".harmonia-spare"))
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o700)
    # the spares of an earlier run are used again after a restart
    d.ok("DELETE", "/v1/jobs/.harmonia-spare", uid=SLURM_UID)
    d.restart()
    bb = new_job(d, "sp2")
    assert (os.stat(bb).st_uid, os.listdir(bb)) == (USER1, [])
