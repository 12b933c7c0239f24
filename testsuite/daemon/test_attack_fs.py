# SPDX-License-Identifier: GPL-2.0-or-later
"""Attacks of an unprivileged user on the buffer directories that a root daemon
tears down, in both modes: bbmgrd's embedded mover and bbnoded (an agent with a
scripted manager, as in test_nodes_agent.py).  Each test builds what the user
can build in their own buffer (as uid 1001, in a child process that dropped
root) and asserts what holds afterwards: the daemon alive, the tree gone.

Deep chains: a recursive walk dies on its thread's stack at some depth (glibc's
nftw() on an 8 MiB stack at about 25,000 levels; removing that many directories
takes a minute on a test machine).  The daemons here run with
BBMGRD_MOVER_STACK=262144 (their mover threads get 256 KiB stacks, doc/mover.md),
which a recursive walk overflows at about 800 levels: a chain of 3,000 shows the
crash in seconds.  The removal in bufdir.c does not recurse: depth never matters.

Runs as root (the daemons act as the users); skipped otherwise.
"""
import contextlib
import os
import signal
import stat
import sqlite3
import subprocess
import time

import pytest

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1, USER2, register
from test_mover import (GID1, GID2, MiB, build_shim, mkdirs, mover_daemon,
                        new_job, preloaded, sparse, stage, wait_xfer, write)
from test_nodes import NODES, agent_cluster, agents  # noqa: F401 (a fixture)
from test_nodes import new_job as agent_job
from test_nodes_agent import BBNODED, agent, result_of, task  # noqa: F401 (a fixture)
from test_security import as_user, held
from test_capacity import bbmgr_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attack tests need root")

DEPTH = 3000
STACK = 262144


@pytest.fixture(autouse=True)
def small_stack(monkeypatch):
    monkeypatch.setenv("BBMGRD_MOVER_STACK", str(STACK))


def chain(top, depth=DEPTH, name="d", leaf=b"x" * 100):
    """As the user: top/d/d/.../d (depth levels, by descriptors: no long path is
    ever written), with a file at the bottom."""
    def build():
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(depth):
            os.mkdir(name, 0o700, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.write(wfd, leaf)
        os.close(wfd)
        os.close(fd)
    as_user(USER1, GID1, build)


def scrub(path):
    """Clean-up of what a failed test left (Python's rmtree recurses)."""
    if os.path.lexists(path):
        subprocess.call(["rm", "-rf", "--one-file-system", path])


def alive(d):
    assert d.proc.poll() is None, "bbmgrd died:\n" + d.log_text()[-3000:]
    return d.ok("GET", "/v1/status", uid=SLURM_UID)


# ------------------------------------------------------------------ embedded mode
def test_deep_chain_teardown_embedded(make_daemon, tmp_base):
    """A job's user leaves a chain of 3,000 directories in the buffer: the
    teardown removes it all and bbmgrd lives on."""
    d = mover_daemon(make_daemon, tmp_base)
    try:
        bb = new_job(d, "deep1")
        chain(bb)
        d.ok("DELETE", "/v1/jobs/deep1", uid=SLURM_UID)
        trash = os.path.join(d.mount, ".harmonia-trash")
        wait_for(lambda: d.proc.poll() is not None
                 or (not os.path.exists(bb) and not os.listdir(trash)),
                 "the teardown of " + bb,
                 report=lambda: "%s\n%s" % (os.listdir(trash), d.log_text()[-3000:]))
        alive(d)
    finally:
        scrub(d.mount)


def test_deep_chain_in_the_trash_at_start_embedded(make_daemon, tmp_base):
    """What a stop left in the trash (a teardown cut short) is a deep chain: the
    sweep at the next start removes it instead of dying at every start."""
    d = mover_daemon(make_daemon, tmp_base)
    try:
        d.stop()
        trash = os.path.join(d.mount, ".harmonia-trash")
        os.makedirs(trash, mode=0o711, exist_ok=True)
        left = os.path.join(trash, "4711")
        os.mkdir(left, 0o700)
        os.chown(left, USER1, GID1)
        chain(left)
        d.start()
        wait_for(lambda: d.proc.poll() is not None or not os.path.exists(left),
                 "the sweep of " + left)
        alive(d)
    finally:
        scrub(d.mount)


# ------------------------------------------------------------------ agent mode
def stop_agent(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)


def start_agent(tmp_base, log):
    """Another agent on the mount of test_nodes_agent's fixture."""
    with open(log, "a") as out:
        return subprocess.Popen([BBNODED, "-c", os.path.join(tmp_base, "bbmgr.yaml"), "-n",
                                 "bb01", "-l", "-"], stdout=out, stderr=subprocess.STDOUT)


def log_of(log):
    with open(log) as f:
        return f.read()[-3000:]


def test_deep_chain_teardown_agent(agent):
    """The same chain in a directory of an agent's node: removed when it leaves
    bbmgrd's set, and bbnoded lives on."""
    mgr, mount, p, log = agent
    try:
        mgr.reply(dirs_gen="g1", dirs=[{"name": "77", "uid": USER1, "gid": GID1}])
        mgr.next(lambda b: b.get("dirs") == "g1")
        bb = os.path.join(mount, "77")
        chain(bb)
        mgr.reply(dirs_gen="g2", dirs=[], default=True)
        wait_for(lambda: p.poll() is not None or not os.path.exists(bb), "the removal of " + bb,
                 report=lambda: log_of(log))
        trash = os.path.join(mount, ".harmonia-trash")
        wait_for(lambda: p.poll() is not None or not os.listdir(trash), "the trash to be empty",
                 report=lambda: log_of(log))
        assert p.poll() is None, "bbnoded died:\n" + log_of(log)
        mgr.next(lambda b: b.get("dirs") == "g2")
    finally:
        scrub(mount)


def test_deep_chain_in_the_trash_at_start_agent(agent, tmp_base):
    """A deep chain in the agent's trash at start: removed, and bbnoded runs."""
    mgr, mount, p, log = agent
    p2 = None
    try:
        stop_agent(p)
        trash = os.path.join(mount, ".harmonia-trash")
        os.makedirs(trash, mode=0o711, exist_ok=True)
        left = os.path.join(trash, "4712")
        os.mkdir(left, 0o700)
        os.chown(left, USER1, GID1)
        chain(left)
        p2 = start_agent(tmp_base, log)
        wait_for(lambda: p2.poll() is not None or not os.path.exists(left),
                 "the sweep of " + left, report=lambda: log_of(log))
        assert p2.poll() is None, "bbnoded died:\n" + log_of(log)
        mgr.next()
    finally:
        if p2 and p2.poll() is None:
            p2.send_signal(signal.SIGTERM)
            p2.wait(timeout=60)
        scrub(mount)


# ------------------------------------------------------------------ class 5: leftovers
def user_process(body):
    """A process of uid 1001 running body(ready) (body calls ready() once under
    way): its pid, once ready() was called."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(GID1)
            os.setuid(USER1)
            body(lambda: os.write(w, b"x"))
        finally:
            os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    return pid


def writer(top, seconds=20):
    """As the user, a process left running with its working directory in top/sub,
    creating files and directories there as fast as it can (for at most 'seconds'
    or until it cannot create anything for a while).  Its pid, once it runs."""
    os.makedirs(os.path.join(top, "sub"), exist_ok=True)
    os.chown(os.path.join(top, "sub"), USER1, GID1)

    def body(ready):
        os.chdir(os.path.join(top, "sub"))
        t0, i, fails = time.monotonic(), 0, 0
        while time.monotonic() - t0 < seconds and fails < 20000:
            i += 1
            try:
                if i % 3:
                    os.close(os.open("f%d" % i, os.O_WRONLY | os.O_CREAT, 0o600))
                else:
                    os.mkdir("d%d" % i)
                fails = 0
            except OSError:
                fails += 1
            if i == 100:
                ready()
    return user_process(body)


def reap(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def unreachable(trash, ino):
    """What the user can do to reach their torn-down buffer in the trash: nothing."""
    def probe():
        try:
            os.listdir(trash)
            raise AssertionError("the user can list " + trash)
        except PermissionError:
            pass
        assert not os.path.exists(os.path.join(trash, str(ino))), "reachable by its inode"
    as_user(USER1, GID1, probe)


def torn_down_embedded(d, job, attack):
    """A job of uid 1001 whose buffer attack(path) prepares, then torn down: the
    trash and the buffer's inode, once it is there."""
    bb = new_job(d, job)
    ino = os.stat(bb).st_ino
    attack(bb)
    d.ok("DELETE", "/v1/jobs/" + job, uid=SLURM_UID)
    trash = os.path.join(d.mount, ".harmonia-trash")
    wait_for(lambda: not os.path.exists(bb) and os.path.isdir(trash),
             "the move of %s to the trash" % bb)
    return trash, ino


def test_writer_during_teardown_embedded(make_daemon, tmp_base):
    """A process of the user keeps creating files in the buffer while it is torn
    down: the teardown still removes everything (each directory is the daemon's
    before it is read), nothing stays in the trash, and the user cannot reach the
    trash."""
    d = mover_daemon(make_daemon, tmp_base)
    pids = []
    try:
        trash, ino = torn_down_embedded(d, "w1", lambda bb: pids.append(writer(bb)))
        unreachable(trash, ino)
        wait_for(lambda: not os.listdir(trash), "the trash to be empty",
                 report=lambda: "%s\n%s" % (os.listdir(trash), d.log_text()[-3000:]))
        alive(d)
    finally:
        for pid in pids:
            reap(pid)
        scrub(d.mount)


def torn_down_agent(mgr, mount, log, name, attack):
    """The agent's directory 'name' of uid 1001, prepared by attack(path), then no
    longer listed: the trash and the directory's inode, once it is there."""
    mgr.reply(dirs_gen=name + "a", dirs=[{"name": name, "uid": USER1, "gid": GID1}])
    mgr.next(lambda b: b.get("dirs") == name + "a")
    bb = os.path.join(mount, name)
    ino = os.stat(bb).st_ino
    attack(bb)
    mgr.reply(dirs_gen=name + "b", dirs=[], default=True)
    trash = os.path.join(mount, ".harmonia-trash")
    wait_for(lambda: not os.path.exists(bb) and os.path.isdir(trash),
             "the move of %s to the trash" % bb, report=lambda: log_of(log))
    return trash, ino


def test_writer_during_teardown_agent(agent):
    mgr, mount, p, log = agent
    pids = []
    try:
        trash, ino = torn_down_agent(mgr, mount, log, "78",
                                     lambda bb: pids.append(writer(bb)))
        unreachable(trash, ino)
        wait_for(lambda: not os.listdir(trash), "the trash to be empty",
                 report=lambda: "%s\n%s" % (os.listdir(trash), log_of(log)))
        assert p.poll() is None
    finally:
        for pid in pids:
            reap(pid)
        scrub(mount)


# Leftovers: a file the teardown cannot remove (unlinkat fails with EIO for the
# names that start with "eio-" while the file $HARMONIA_SHIM_UNLINK_EIO exists: an
# I/O error of the file system, as the daemons see it) next to a process of the user
# that keeps creating files in another directory of the buffer.
UNLINK_SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int unlinkat(int dfd, const char *name, int flags)
{
    int (*real)(int, const char *, int) = dlsym(RTLD_NEXT, "unlinkat");
    const char *flag = getenv("HARMONIA_SHIM_UNLINK_EIO");
    if (flag && *flag && !(flags & AT_REMOVEDIR) && !strncmp(name, "eio-", 4)
        && access(flag, F_OK) == 0) {
        errno = EIO;
        return -1;
    }
    return real(dfd, name, flags);
}
"""


def unlink_shim(base):
    src, so = os.path.join(base, "unlink-shim.c"), os.path.join(base, "unlink-shim.so")
    with open(src, "w") as f:
        f.write(UNLINK_SHIM_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, src, "-ldl"], check=True)
    return so


def leftover_attack(top):
    """As the user: top holds eio-stuck (the daemon cannot remove it while the
    flag exists) and a writer runs in top/sub (its pid).  The caller tears top
    down, then leftover_checks(): the teardown fails and says it tries again;
    what is left in the trash is only what failed (the writer's directory was
    reached, made the daemon's and removed), none of it the user's, out of their
    reach; once the file system answers again, a later try removes it."""
    as_user(USER1, GID1, lambda: open(os.path.join(top, "eio-stuck"), "wb").write(
        os.urandom(LEFT_BYTES)))
    return writer(top, seconds=120)


LEFT_BYTES = 3 * MiB


def left_figure_ok(v):
    """What the leftover holds: the failed file and the directory around it."""
    return LEFT_BYTES <= v <= LEFT_BYTES + 64 * 1024


def leftover_checks(trash, ino, flag, log_text, figure=lambda: None, shown=lambda: None):
    wait_for(lambda: "remove 'eio-stuck' at depth 1: Input/output error" in log_text(),
             "the teardown to fail and say so", report=lambda: log_text()[-3000:])
    left = [os.path.join(trash, n) for n in os.listdir(trash)]
    assert len(left) == 1, left
    left = left[0]
    # the writer's directory was reached, given to the daemon and removed: what is
    # left is the file that failed, and nobody but the daemon can add to it
    wait_for(lambda: os.listdir(left) == ["eio-stuck"],
             "only the failed file left in " + left,
             report=lambda: "%s\n%s" % (sorted(os.listdir(left))[:20], log_text()[-2000:]))
    st = os.stat(left)
    assert st.st_uid == 0 and st.st_mode & 0o7777 == 0, oct(st.st_mode)
    assert "is tried again in" in log_text()
    unreachable(trash, ino)
    # its bytes are counted as its node's, measured, while it is there
    # (figure(): what the daemon shows or reports, None when the caller checks none)
    seen = []
    wait_for(lambda: seen.append(figure()) or seen[-1] is None or left_figure_ok(seen[-1]),
             "the leftover's %d bytes counted" % LEFT_BYTES, report=lambda: seen[-5:])
    shown()
    # tried again: once the file system answers, nothing is left
    os.unlink(flag)
    wait_for(lambda: not os.listdir(trash), "a later try to remove " + left,
             report=lambda: "%s\n%s" % (os.listdir(trash), log_text()[-3000:]))
    wait_for(lambda: figure() in (None, 0), "the leftover's bytes no longer counted",
             report=lambda: figure())


def test_leftover_of_a_failed_teardown_embedded(make_daemon, tmp_base):
    """A teardown that fails (an I/O error on one file) while a process of the user
    keeps creating files in the buffer: nothing of what is left is the user's, and
    it is tried again until it is gone."""
    so = unlink_shim(tmp_base)
    flag = os.path.join(tmp_base, "eio-on")
    open(flag, "w").close()
    with preloaded(so, HARMONIA_SHIM_UNLINK_EIO=flag):
        d = mover_daemon(make_daemon, tmp_base)
    pids = []
    try:
        trash, ino = torn_down_embedded(d, "lo1", lambda bb: pids.append(leftover_attack(bb)))

        def figure():
            """GET /v1/nodes: the job's allocation is gone, so what its node uses
            is the leftover."""
            nodes = d.ok("GET", "/v1/nodes", uid=SLURM_UID)["nodes"]
            assert all(n["free"] == n["capacity"] - n["used"] for n in nodes), nodes
            assert sum(n["used"] for n in nodes) == sum(n["leftover"] for n in nodes), nodes
            return sum(n["leftover"] for n in nodes)

        def shown():
            """bbmgr nodes says so under the node, USED includes it."""
            out = bbmgr_cli(d, "nodes")
            assert "MiB of failed teardowns, counted in USED until removed" in out, out
            assert "3.00 MiB" in out, out
        leftover_checks(trash, ino, flag, d.log_text, figure, shown)
        assert "leftover:" not in bbmgr_cli(d, "nodes")
        alive(d)
    finally:
        for pid in pids:
            reap(pid)
        scrub(d.mount)


def test_leftover_of_a_failed_teardown_agent(agent, tmp_base):
    mgr, mount, p, log = agent
    pids, p2 = [], None
    so = unlink_shim(tmp_base)
    flag = os.path.join(tmp_base, "eio-on")
    open(flag, "w").close()
    try:
        stop_agent(p)
        with preloaded(so, HARMONIA_SHIM_UNLINK_EIO=flag):
            p2 = start_agent(tmp_base, log)
        mgr.next()
        trash, ino = torn_down_agent(mgr, mount, log, "79",
                                     lambda bb: pids.append(leftover_attack(bb)))
        # what its reports say the leftovers hold ("leftover_bytes" of its status)
        leftover_checks(trash, ino, flag, lambda: open(log).read(),
                        lambda: mgr.next()["status"].get("leftover_bytes", 0))
        assert p2.poll() is None, "bbnoded died:\n" + log_of(log)
    finally:
        for pid in pids:
            reap(pid)
        if p2 and p2.poll() is None:
            p2.send_signal(signal.SIGTERM)
            p2.wait(timeout=60)
        scrub(mount)


def test_leftover_reported_by_an_agent_counts_as_used(make_daemon, agents, tmp_base):
    """What an agent reports its failed teardowns left ("leftover_bytes") is its
    node's used space, shown by GET /v1/nodes and bbmgr nodes, until a report
    without it; a bad figure is refused, naming the field."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    node = NODES[0]
    for a in agents:
        if a.node == node:
            a.kill(signal.SIGTERM)
    status = {"free_bytes": 1, "used_bytes": 1, "read_bw": 0, "write_bw": 0}
    body = {"version": 1, "agent": "a-left", "status": status, "results": []}
    st, js = d.request("POST", "/v1/agents/" + node,
                       dict(body, status=dict(status, leftover_bytes=-1)))
    assert st == 400 and "leftover_bytes" in js["error"]["message"], js
    before = d.ok("GET", "/v1/nodes/" + node, uid=SLURM_UID)
    st, js = d.request("POST", "/v1/agents/" + node,
                       dict(body, status=dict(status, leftover_bytes=5 * MiB)))
    assert st == 200, js
    n = d.ok("GET", "/v1/nodes/" + node, uid=SLURM_UID)
    assert n["leftover"] == 5 * MiB and n["used"] == before["used"] + 5 * MiB, (before, n)
    assert n["free"] == before["free"] - 5 * MiB, (before, n)
    out = bbmgr_cli(d, "nodes")
    assert "leftover: 5.00 MiB of failed teardowns, counted in USED until removed" in out, out
    st, js = d.request("POST", "/v1/agents/" + node, body)
    assert st == 200, js
    n = d.ok("GET", "/v1/nodes/" + node, uid=SLURM_UID)
    assert n["leftover"] == 0 and n["used"] == before["used"], (before, n)
    assert "leftover:" not in bbmgr_cli(d, "nodes")


# ------------------------------------------------------------------ class 3: kept data
def keep_it(d, job, src, pfs, path):
    """uid 1001's persistent buffer 'shared' at path: a job stages src into it and
    out to a file whose fsync fails (EIO from the shim), then the job ends and the
    buffer is destroyed: bbmgrd holds it, kept."""
    register(d, job, uid=USER1, gid=GID1)
    d.ok("POST", "/v1/persistent/shared/use", {"job": job}, uid=SLURM_UID)
    assert wait_xfer(d, stage(d, job, "stage_in", src, path + "/in"))["state"] == "done"
    x = wait_xfer(d, stage(d, job, "stage_out", path + "/in", os.path.join(pfs, "out-eio")),
                  states=("failed",))
    assert x["message"].startswith("not durable: "), x
    d.ok("DELETE", "/v1/jobs/" + job, uid=SLURM_UID)
    d.ok("DELETE", "/v1/persistent/shared", uid=USER1)
    wait_for(lambda: [h for h in held(d) if h["job"] == "persistent:shared" and h["kept"]],
             "the destroyed buffer to be kept", report=lambda: held(d))

def test_release_of_kept_data_spares_another_users_buffer_embedded(make_daemon, tmp_base,
                                                                   users):
    """A persistent buffer whose stage-out could not be made durable is destroyed
    and kept; another user then creates a persistent buffer of the same name and
    writes into it; bbmgrd restarts; the administrator releases the kept one.
    The release removes the kept data (found by its device and inode), never the
    live buffer that has the name now; the restart's trash sweep left it alone."""
    so = build_shim(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "a"), os.urandom(MiB + 7), 0o640)
    with preloaded(so, HARMONIA_SHIM_FSYNC_EIO="out-eio"):
        d = mover_daemon(make_daemon, tmp_base)
    try:
        b = d.ok("POST", "/v1/persistent", {"name": "shared", "capacity": "1GiB"}, uid=USER1,
                 expect=(201,))
        path = b["nodes"][0]["path"]
        kept_ino = os.stat(path).st_ino
        keep_it(d, "k1", src, pfs, path)
        # another user takes the name and stores data
        st, js = d.request("POST", "/v1/persistent", {"name": "shared", "capacity": "1GiB"},
                           uid=USER2)
        mine = None
        if st == 201:
            mine = js["nodes"][0]["path"]
            assert os.stat(mine).st_uid == USER2 and os.stat(mine).st_ino != kept_ino
            as_user(USER2, GID2, lambda: open(os.path.join(mine, "live"), "w").write("mine"))
        d.restart()
        trash = os.path.join(d.mount, "persistent", ".harmonia-trash")

        def kept_there():
            where = [os.path.join(trash, n) for n in os.listdir(trash)] \
                if os.path.isdir(trash) else []
            where.append(path)
            return [p for p in where if os.path.lexists(p) and os.lstat(p).st_ino == kept_ino]
        assert kept_there(), "the kept data did not survive the restart"
        d.ok("DELETE", "/v1/held/persistent:shared", uid=SLURM_UID)
        wait_for(lambda: not kept_there(), "the released data to be removed",
                 report=lambda: d.log_text()[-3000:])
        if mine:
            time.sleep(1)
            with open(os.path.join(mine, "live")) as f:
                assert f.read() == "mine", "another user's live buffer was removed"
        alive(d)
    finally:
        scrub(d.mount)


# ------------------------------------------------------------------ class 4: capacity
def test_stage_in_larger_than_the_nodes_share_embedded(make_daemon, tmp_base):
    """An allocation of 2 GiB over two nodes with a mount each holds 1 GiB on each:
    a stage-in of 1.5 GiB into the directory on one node is refused with the
    reason, before a byte is written (it fit the whole allocation, not the node)."""
    m1, m2 = os.path.join(tmp_base, "bb1"), os.path.join(tmp_base, "bb2")
    os.makedirs(m1)
    os.makedirs(m2)
    d = make_daemon(stage={"mode": "mover"}, mover={"threads": 2, "chunk": "1MiB"},
                    policy={"id": "fairshare", "overprovision": 1.0},
                    pools=[{"name": "nvme", "granularity": "1GiB"}],
                    nodes=[{"names": "bb01", "capacity": "1TiB", "bandwidth": "2 GB/s",
                            "mount": m1, "pool": "nvme"},
                           {"names": "bb02", "capacity": "1TiB", "bandwidth": "2 GB/s",
                            "mount": m2, "pool": "nvme"}])
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    sparse(os.path.join(pfs, "big"), 3 << 29)
    register(d, "cap1", uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/cap1/allocation", {"capacity": "2GiB", "nodes": 2},
             uid=SLURM_UID, expect=(201,))
    assert len(a["nodes"]) == 2, a
    bb = a["nodes"][0]["path"]
    x = wait_xfer(d, stage(d, "cap1", "stage_in", os.path.join(pfs, "big"), bb + "/big",
                           "file"))
    assert x["state"] == "failed", x
    assert "more than the capacity of the buffer on this node" in x["message"], x
    assert os.listdir(bb) == []
    alive(d)


def test_kept_data_survives_its_name_taken_and_restarts_agent(agent, tmp_base):
    """bbmgrd lists a persistent buffer of uid 1001 with keep (its data may exist
    only there); then uid 1002's new buffer takes the name.  The agent moves the
    kept directory aside and keeps it (by device and inode, not by name), and a
    restarted agent's trash sweep leaves it alone; its release removes it, by
    identity, from the trash."""
    mgr, mount, p, log = agent
    p2 = None
    try:
        entry = {"name": "kp", "persistent": True, "uid": USER1, "gid": GID1}
        mgr.reply(dirs_gen="k1", dirs=[entry])
        mgr.next(lambda b: b.get("dirs") == "k1")
        kept = os.path.join(mount, "persistent", "kp")
        as_user(USER1, GID1, lambda: open(os.path.join(kept, "only-copy"), "w").write("data"))
        ino = os.stat(kept).st_ino
        mgr.reply(dirs_gen="k2", dirs=[dict(entry, keep=True)])
        # the agent reports the identity of the directory at the name ("kept") ...
        rep = mgr.next(lambda b: b.get("dirs") == "k2")
        assert [(k["name"], k["persistent"], k["ino"]) for k in rep.get("kept", [])] \
            == [("kp", True, ino)], rep
        dev = rep["kept"][0]["dev"]
        # ... which bbmgrd lists from then on, whoever has the name
        mgr.reply(dirs_gen="k3", default=True,
                  dirs=[{"name": "kp", "persistent": True, "uid": USER2, "gid": GID2},
                        dict(entry, uid=0, gid=0, keep=True, dev=dev, ino=ino)])
        mgr.next(lambda b: b.get("dirs") == "k3")
        wait_for(lambda: os.stat(kept).st_uid == USER2, "uid 1002's new directory",
                 report=lambda: log_of(log))
        trash = os.path.join(mount, "persistent", ".harmonia-trash")

        def kept_data():
            for n in os.listdir(trash):
                q = os.path.join(trash, n)
                if os.lstat(q).st_ino == ino and os.path.exists(os.path.join(q, "only-copy")):
                    return q
            return None
        wait_for(lambda: "kept there until it is released" in log_of(log) or not kept_data(),
                 "the agent to move the kept data aside", report=lambda: log_of(log))
        assert kept_data(), "the kept data was removed when its name was taken"
        stop_agent(p)
        p2 = start_agent(tmp_base, log)
        wait_for(lambda: "moved aside when its name was taken" in log_of(log) or not kept_data(),
                 "the restarted agent's sweep", report=lambda: log_of(log))
        mgr.next()
        assert kept_data(), "the trash sweep at start removed the kept data"
        # released: no longer listed, removed from the trash by its identity, and
        # nothing of uid 1002's live buffer of the name
        as_user(USER2, GID2, lambda: open(os.path.join(kept, "live"), "w").write("mine"))
        mgr.reply(dirs_gen="k4", default=True,
                  dirs=[{"name": "kp", "persistent": True, "uid": USER2, "gid": GID2}])
        wait_for(lambda: not kept_data(), "the released data to be removed",
                 report=lambda: log_of(log))
        mgr.next(lambda b: b.get("dirs") == "k4")
        with open(os.path.join(kept, "live")) as f:
            assert f.read() == "mine"
    finally:
        if p2 and p2.poll() is None:
            p2.send_signal(signal.SIGTERM)
            p2.wait(timeout=60)
        scrub(mount)


def test_stage_in_larger_than_the_nodes_share_agent(make_daemon, agents, tmp_base):
    """The same on agent nodes (a real bbmgrd and its bbnoded agents): an allocation
    of 2 GiB over two agent nodes holds 1 GiB on each, and a stage-in of 1.5 GiB
    into the directory on one of them is refused by its agent with the reason the
    user sees, before a byte is written (the task carries the node's byte limit)."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    sparse(os.path.join(pfs, "big"), 3 << 29)
    paths, names = agent_job(d, "cap2", nodes=2, capacity="2GiB")
    assert len(set(names)) == 2, names
    x = wait_xfer(d, stage(d, "cap2", "stage_in", os.path.join(pfs, "big"),
                           paths[0] + "/big", "file"))
    assert x["state"] == "failed", x
    assert "more than the capacity of the buffer on this node (1073741824 bytes)" \
        in x["message"], x
    assert os.listdir(paths[0]) == []
    alive(d)


def test_release_of_kept_data_moved_aside_agent(make_daemon, agents, tmp_base):
    """On an agent's node (a real bbmgrd and its agents): uid 1001's persistent
    buffer is kept (its stage-out could not be made durable), uid 1002 creates a
    buffer of the same name on that node and writes into it, and the kept
    directory goes to the trash.  The administrator's release then removes the
    kept data (its identity travels in bbmgrd's listing: device and inode), in the
    trash, and nothing of uid 1002's live buffer."""
    so = build_shim(tmp_base)
    with preloaded(so, HARMONIA_SHIM_FSYNC_EIO="out-eio"):
        d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    src = os.path.join(pfs, "in")
    mkdirs(src)
    write(os.path.join(src, "a"), os.urandom(MiB + 7), 0o640)
    b = d.ok("POST", "/v1/persistent", {"name": "shared", "capacity": "1GiB"}, uid=USER1,
             expect=(201,))
    path, node = b["nodes"][0]["path"], b["nodes"][0]["name"]
    wait_for(lambda: os.path.isdir(path) and os.stat(path).st_uid == USER1,
             "the agent to make " + path)
    kept_ino = os.stat(path).st_ino
    keep_it(d, "k3", src, pfs, path)
    # only its node takes new buffers: the name is taken there
    for n in NODES:
        if n != node:
            d.ok("POST", "/v1/nodes/%s/drain" % n, {"reason": "test"}, uid=SLURM_UID)
    b2 = d.ok("POST", "/v1/persistent", {"name": "shared", "capacity": "1GiB"}, uid=USER2,
              expect=(201,))
    assert b2["nodes"][0]["path"] == path, b2
    wait_for(lambda: os.path.isdir(path) and os.stat(path).st_uid == USER2,
             "uid 1002's new directory " + path)
    as_user(USER2, GID2, lambda: open(os.path.join(path, "live"), "w").write("mine"))
    trash = os.path.join(os.path.dirname(path), ".harmonia-trash")

    def kept_there():
        where = [os.path.join(trash, n) for n in os.listdir(trash)] \
            if os.path.isdir(trash) else []
        return [p for p in where if os.path.lexists(p) and os.lstat(p).st_ino == kept_ino]
    wait_for(kept_there, "the kept data in the trash")
    d.ok("DELETE", "/v1/held/persistent:shared", uid=SLURM_UID)
    wait_for(lambda: not kept_there(), "the released data to be removed from the trash",
             report=lambda: "".join(a.log_text()[-2000:] for a in agents))
    with open(os.path.join(path, "live")) as f:
        assert f.read() == "mine", "another user's live buffer was removed"
    assert os.stat(path).st_uid == USER2


# ------------------------------------------------------------------ deep source trees
COPY_DEPTH = 1200       # past what a recursive walk survives on 256 KiB (about 800),
                        # with the paths of the copy still under PATH_MAX


def test_deep_chain_stage_in_embedded(make_daemon, tmp_base):
    """A user stages in a chain of 1,200 directories: the walk of the source does not
    recurse on the mover thread's stack; the copy is made, level by level, with the
    file at the bottom, and bbmgrd lives on."""
    d = mover_daemon(make_daemon, tmp_base)
    try:
        pfs = os.path.join(tmp_base, "pfs")
        mkdirs(pfs)
        src = os.path.join(pfs, "deep")
        mkdirs(src, 0o700)
        chain(src, depth=COPY_DEPTH, leaf=b"bottom")
        bb = new_job(d, "dc1")
        x = wait_xfer(d, stage(d, "dc1", "stage_in", src, bb + "/in"))
        assert x["state"] == "done", "%s\n%s" % (x, d.log_text()[-3000:])
        fd = os.open(bb + "/in", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(COPY_DEPTH):
                assert os.listdir(fd) == ["d"], os.listdir(fd)
                nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
            assert os.listdir(fd) == ["leaf"]
            lfd = os.open("leaf", os.O_RDONLY, dir_fd=fd)
            assert os.read(lfd, 100) == b"bottom"
            assert os.fstat(lfd).st_uid == USER1
            os.close(lfd)
        finally:
            os.close(fd)
        alive(d)
    finally:
        scrub(d.mount)
        scrub(os.path.join(tmp_base, "pfs"))


# ------------------------------------------------------------------ kept_dirs per node
KEPT_DIRS_6 = ("CREATE TABLE kept_dirs(owner TEXT NOT NULL, node TEXT NOT NULL,"
               " dev INTEGER NOT NULL, ino INTEGER NOT NULL, kept INTEGER NOT NULL DEFAULT 0,"
               " PRIMARY KEY(dev, ino))")


def test_kept_dirs_keyed_by_node_migrated(make_daemon, tmp_base):
    """The identity of a kept directory is per node (two agents' nodes may have the
    same device and inode): a state.db of schema 6 (kept_dirs keyed by device and
    inode) is migrated at start, its rows kept, and two nodes' equal identities are
    then both recorded."""
    d = mover_daemon(make_daemon, tmp_base)
    d.stop()
    path = os.path.join(d.state, "state.db")
    db = sqlite3.connect(path, timeout=5)
    with db:
        db.execute("DROP TABLE kept_dirs")
        db.execute(KEPT_DIRS_6)
        db.execute("CREATE INDEX kept_dirs_owner ON kept_dirs(owner)")
        db.executemany("INSERT INTO kept_dirs VALUES(?,?,?,?,?)",
                       [("job-old1", "bb01", 64769, 4711, 1),
                        ("persistent-old2", "bb02", 64769, 4712, 0)])
        db.execute("ALTER TABLE phases DROP COLUMN held")     # schema 8's
    db.execute("PRAGMA user_version = 6")
    db.close()
    d.start()
    try:
        alive(d)
    finally:
        d.stop()
    db = sqlite3.connect(path, timeout=5)
    try:
        rows = db.execute("SELECT owner,node,dev,ino,kept FROM kept_dirs ORDER BY owner").fetchall()
        assert rows == [("job-old1", "bb01", 64769, 4711, 1),
                        ("persistent-old2", "bb02", 64769, 4712, 0)], rows
        with db:
            db.execute("INSERT INTO kept_dirs VALUES('job-other','bb02',64769,4711,1)")
        assert db.execute("SELECT count(*) FROM kept_dirs WHERE dev=64769 AND ino=4711")\
            .fetchone()[0] == 2
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name='kept_dirs_owner'")\
            .fetchone()[0] == 1
        assert db.execute("PRAGMA user_version").fetchone()[0] >= 7
    finally:
        db.close()


# ------------------------------------------------------------------ second pass
# What a user builds in their buffer (as uid 1001, or 1002 for the victim's side)
# against the stage-out (bbmgrd's mover acting as the user) and the teardowns of
# both modes (acting as root).
def victim_dir(base):
    """Root's directory next to the buffers: files of root, one readable by root
    alone; (path, {name: (bytes, mode)})."""
    v = os.path.join(base, "victim")
    os.makedirs(v, mode=0o755, exist_ok=True)
    os.chmod(v, 0o755)
    files = {"keep%d" % i: (b"root's %d" % i, 0o644) for i in range(4)}
    files["secret"] = (b"only root reads this", 0o600)
    for n, (data, mode) in files.items():
        with open(os.path.join(v, n), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(v, n), mode)
    return v, files


def victim_intact(v, files):
    assert sorted(os.listdir(v)) == sorted(files), os.listdir(v)
    for n, (data, mode) in files.items():
        st = os.lstat(os.path.join(v, n))
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_nlink == 1, (n, st)
        assert st.st_mode & 0o7777 == mode, (n, oct(st.st_mode))
        with open(os.path.join(v, n), "rb") as f:
            assert f.read() == data, n


def trash_empty(d_or_mount, log_text):
    mount = getattr(d_or_mount, "mount", d_or_mount)
    trash = os.path.join(mount, ".harmonia-trash")
    wait_for(lambda: os.path.isdir(trash) and not os.listdir(trash), "the trash to be empty",
             report=lambda: "%s\n%s" % (os.listdir(trash) if os.path.isdir(trash) else "-",
                                        log_text()[-3000:]))


@contextlib.contextmanager
def mover_and_pfs(make_daemon, tmp_base):
    """An embedded bbmgrd with its mover and a PFS directory, both emptied after."""
    d = mover_daemon(make_daemon, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    try:
        yield d, pfs
    finally:
        scrub(d.mount)
        scrub(pfs)


@contextlib.contextmanager
def reaped(*trees):
    """A list for the pids of the user's processes: after, each is reaped, then
    each of trees emptied."""
    pids = []
    try:
        yield pids
    finally:
        for pid in pids:
            reap(pid)
        for t in trees:
            scrub(t)


def torn_down(d, job, bb):
    """The job deleted as Slurm: its buffer goes, the trash empties, bbmgrd lives."""
    d.ok("DELETE", "/v1/jobs/" + job, uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb), "the teardown of " + bb)
    trash_empty(d, d.log_text)
    alive(d)


def root_linked(bb, v):
    """Root's files hard-linked into the buffer (what fs.protected_hardlinks keeps
    a user from doing; a node without it lets them): made by the test as root."""
    os.makedirs(bb + "/o", exist_ok=True)
    os.chown(bb + "/o", USER1, GID1)
    as_user(USER1, GID1, lambda: open(bb + "/o/mine", "wb").write(b"mine"))
    os.link(os.path.join(v, "secret"), bb + "/o/secret")
    os.link(os.path.join(v, "keep0"), bb + "/o/keep0")


def test_root_files_hard_linked_into_the_buffer_embedded(make_daemon, tmp_base, users):
    """Root's files hard-linked into the buffer: the stage-out, as the user, copies
    what the user may read and fails on root's 0600 file, naming it; the teardown
    removes the buffer's names only: root's files keep their data, owner, mode and
    their one link."""
    v, files = victim_dir(tmp_base)
    with mover_and_pfs(make_daemon, tmp_base) as (d, pfs):
        bb = new_job(d, "hl1")
        root_linked(bb, v)
        x = wait_xfer(d, stage(d, "hl1", "stage_out", bb + "/o", pfs + "/out"))
        assert x["state"] == "failed" and "secret" in x["message"], x
        assert not os.path.exists(pfs + "/out/secret"), os.listdir(pfs + "/out")
        torn_down(d, "hl1", bb)
        victim_intact(v, files)


def test_root_files_hard_linked_into_the_buffer_agent(agent, tmp_base, users):
    """The same links in a directory of an agent's node: its teardown leaves root's
    files as they were."""
    mgr, mount, p, log = agent
    v, files = victim_dir(tmp_base)
    try:
        torn_down_agent(mgr, mount, log, "81", lambda bb: root_linked(bb, v))
        trash_empty(mount, lambda: log_of(log))
        victim_intact(v, files)
        assert p.poll() is None, "bbnoded died:\n" + log_of(log)
    finally:
        scrub(mount)


def test_planted_symlinks_in_the_stage_out_destination(make_daemon, tmp_base, users):
    """uid 1001 plants symbolic links where its stage-out writes: a file of the
    destination pointing to root's file, and the destination of a second stage-out
    pointing into uid 1002's directory.  Root's file is never written (the copy
    replaces the link, as the user); uid 1002's directory gets nothing; the
    transfer that follows into it fails."""
    d = mover_daemon(make_daemon, tmp_base)
    v, files = victim_dir(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    other = os.path.join(tmp_base, "pfs2")
    mkdirs(other, 0o755, uid=USER2, gid=GID2)
    write(os.path.join(other, "theirs"), b"uid 1002's", 0o644, uid=USER2, gid=GID2)
    try:
        bb = new_job(d, "sl1")
        mkdirs(bb + "/o", 0o700)
        for n in ("keep1", "secret"):
            write(bb + "/o/" + n, b"from the buffer " + n.encode(), 0o644)

        def plant():
            os.mkdir(pfs + "/out")
            os.symlink(os.path.join(v, "keep1"), pfs + "/out/keep1")
            os.symlink(os.path.join(v, "secret"), pfs + "/out/secret")
            os.symlink(other, pfs + "/out2")
        as_user(USER1, GID1, plant)
        x = wait_xfer(d, stage(d, "sl1", "stage_out", bb + "/o", pfs + "/out"))
        victim_intact(v, files)
        if x["state"] == "done":
            for n in ("keep1", "secret"):
                st = os.lstat(pfs + "/out/" + n)
                assert stat.S_ISREG(st.st_mode) and st.st_uid == USER1, (n, st)
        x2 = wait_xfer(d, stage(d, "sl1", "stage_out", bb + "/o", pfs + "/out2"))
        assert x2["state"] == "failed", x2
        assert sorted(os.listdir(other)) == ["theirs"], os.listdir(other)
        victim_intact(v, files)
        alive(d)
    finally:
        scrub(d.mount)
        scrub(pfs)
        scrub(other)


def special_files(top):
    """As the user: a FIFO (no writer) and a listening socket among regular files."""
    import socket
    os.mkfifo(top + "/fifo")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(top + "/sock")
    s.close()
    for i in range(3):
        with open(top + "/f%d" % i, "wb") as f:
            f.write(os.urandom(1000))


def test_fifo_and_socket_in_a_staged_out_buffer(make_daemon, tmp_base, users):
    """A FIFO without a writer and a socket in the buffer at the stage-out: the
    mover opens neither (no hang: the transfer ends), the
    regular files are copied, and the teardown removes them all."""
    with mover_and_pfs(make_daemon, tmp_base) as (d, pfs):
        bb = new_job(d, "ff2")
        mkdirs(bb + "/o", 0o700)
        as_user(USER1, GID1, special_files, bb + "/o")
        x = wait_xfer(d, stage(d, "ff2", "stage_out", bb + "/o", pfs + "/out"), timeout=60)
        assert x["state"] == "done", x
        names = sorted(os.listdir(pfs + "/out"))
        assert names[:3] == ["f0", "f1", "f2"], names
        for n in names:
            assert stat.S_ISREG(os.lstat(pfs + "/out/" + n).st_mode) or n in ("fifo", "sock")
        torn_down(d, "ff2", bb)


def flipper(top, target, seconds=30):
    """As the user: a process that keeps turning top/s0..s7 from directories (with
    a file in each) into symbolic links to target and back, as fast as it can.
    Its pid, once it runs."""
    def body(ready):
        for k in range(8):
            os.makedirs(os.path.join(top, "s%d" % k), exist_ok=True)
            open(os.path.join(top, "s%d" % k, "f"), "w").write("x")
        t0, i = time.monotonic(), 0
        while time.monotonic() - t0 < seconds:
            n = os.path.join(top, "s%d" % (i % 8))
            try:
                if os.path.islink(n):
                    os.mkdir(n + ".new")
                    open(n + ".new/f", "w").write("x")
                    os.unlink(n)
                    os.rename(n + ".new", n)
                else:
                    os.symlink(target, n + ".lnk")
                    os.rename(n, n + ".old")
                    os.rename(n + ".lnk", n)
                    for e in os.listdir(n + ".old"):
                        os.unlink(os.path.join(n + ".old", e))
                    os.rmdir(n + ".old")
            except OSError:
                pass
            i += 1
            if i == 50:
                ready()
    return user_process(body)


def test_directories_turned_into_symlinks_during_stage_out_and_teardown(make_daemon,
                                                                         tmp_base, users):
    """While its stage-out walks and copies, and then while its buffer is torn down,
    a process of the user keeps replacing directories of the buffer by symbolic
    links to root's directory: the stage-out copies nothing of root's (whatever it
    ends with), and the teardown, as root, removes the links, never what they point
    to."""
    v, files = victim_dir(tmp_base)
    with mover_and_pfs(make_daemon, tmp_base) as (d, pfs), reaped() as pids:
        bb = new_job(d, "fl1")
        mkdirs(bb + "/o", 0o755)
        for i in range(40):
            write(bb + "/o/data%d" % i, os.urandom(256 * 1024), 0o644)
        pids.append(flipper(bb + "/o", v))
        for k in range(3):
            x = wait_xfer(d, stage(d, "fl1", "stage_out", bb + "/o", pfs + "/out%d" % k))
            assert x["state"] in ("done", "failed"), x
            for root, dirs, fnames in os.walk(pfs + "/out%d" % k):
                for n in fnames:
                    with open(os.path.join(root, n), "rb") as f:
                        data = f.read()
                    assert b"root's" not in data and b"only root" not in data, (root, n)
        victim_intact(v, files)
        torn_down(d, "fl1", bb)
        victim_intact(v, files)


def test_directories_turned_into_symlinks_during_teardown_agent(agent, tmp_base, users):
    mgr, mount, p, log = agent
    v, files = victim_dir(tmp_base)
    with reaped(mount) as pids:
        torn_down_agent(mgr, mount, log, "82", lambda bb: pids.append(flipper(bb, v)))
        trash_empty(mount, lambda: log_of(log))
        victim_intact(v, files)
        assert p.poll() is None, "bbnoded died:\n" + log_of(log)


def vm_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


WIDE = 60000


def wide(top):
    """As the user: WIDE empty directories and WIDE empty files in one directory."""
    def build():
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(WIDE):
            os.mkdir("d%06d" % i, 0o700, dir_fd=fd)
            os.close(os.open("f%06d" % i, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.close(fd)
    as_user(USER1, GID1, build)


def test_one_directory_of_many_entries_embedded(make_daemon, tmp_base, users):
    """120,000 entries in one directory of the buffer: the capacity walk measures it
    and the teardown removes it, in bounded memory (bbmgrd's peak resident size
    grows by less than 64 MiB), and bbmgrd keeps answering meanwhile."""
    d = mover_daemon(make_daemon, tmp_base)
    try:
        bb = new_job(d, "wd1")
        mkdirs(bb + "/w", 0o700)
        wide(bb + "/w")
        before = vm_hwm(d.proc.pid)
        u = wait_for(lambda: (lambda u: u if u and u.get("used", 0) > WIDE * 4096 else None)(
            d.ok("GET", "/v1/jobs/wd1", uid=SLURM_UID).get("usage")),
            "the walk of the wide directory", timeout=120)
        assert u["used"] >= WIDE * 4096, u
        d.ok("DELETE", "/v1/jobs/wd1", uid=SLURM_UID)
        wait_for(lambda: not os.path.exists(bb), "the move of " + bb)
        alive(d)
        trash_empty(d, d.log_text)
        grew = vm_hwm(d.proc.pid) - before
        assert grew < 64 * MiB, "bbmgrd's peak resident size grew by %d bytes" % grew
        alive(d)
    finally:
        scrub(d.mount)


LONG = 20       # levels of 250-character names: a path of 5,000 characters


def long_names(top):
    """As the user: top/N/N/... (LONG levels, N 250 characters) with a file at the
    bottom: its path is longer than PATH_MAX (4096)."""
    def build():
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(LONG):
            n = ("%02d" % i) * 125
            os.mkdir(n, 0o700, dir_fd=fd)
            nfd = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.write(wfd, b"deep")
        os.close(wfd)
        os.close(fd)
    as_user(USER1, GID1, build)


def test_paths_past_path_max_in_a_stage_out(make_daemon, tmp_base, users):
    """A stage-out of a tree whose paths pass PATH_MAX: the transfer ends (done, or
    failed naming the cause), bbmgrd lives on, and the teardown removes the tree."""
    with mover_and_pfs(make_daemon, tmp_base) as (d, pfs):
        bb = new_job(d, "ln1")
        mkdirs(bb + "/o", 0o700)
        write(bb + "/o/short", b"short", 0o644)
        long_names(bb + "/o")
        x = wait_xfer(d, stage(d, "ln1", "stage_out", bb + "/o", pfs + "/out"), timeout=60)
        assert x["state"] in ("done", "failed"), x
        if x["state"] == "failed":
            assert "File name too long" in x["message"], x
        alive(d)
        torn_down(d, "ln1", bb)


def test_sparse_file_claiming_terabytes(make_daemon, tmp_base, users):
    """A sparse file of 4 TiB apparent size (a few blocks written) in the buffer:
    the capacity walk counts the blocks it takes, not its size (the job is not
    over its 1 GiB), and its stage-out keeps the holes (the copy takes no more
    space than the source) and ends within a minute, the mover serving another
    job's transfer meanwhile."""
    with mover_and_pfs(make_daemon, tmp_base) as (d, pfs):
        bb = new_job(d, "sp2")
        mkdirs(bb + "/o", 0o700)
        as_user(USER1, GID1, lambda: (lambda f: (f.truncate(4 << 40), f.seek(3 << 40),
                                                 f.write(b"x" * 4096), f.close()))(
            open(bb + "/o/huge", "wb")))
        u = wait_for(lambda: d.ok("GET", "/v1/jobs/sp2", uid=SLURM_UID).get("usage"),
                     "a first usage figure", timeout=60)
        assert u["used"] < 16 * MiB and not u["over"], u
        t0 = time.time()
        tid = stage(d, "sp2", "stage_out", bb + "/o", pfs + "/out")
        other = os.path.join(pfs, "small")
        write(other, os.urandom(MiB), 0o644)
        bb2 = new_job(d, "sp3")
        assert wait_xfer(d, stage(d, "sp3", "stage_in", other, bb2 + "/s", "file"),
                         timeout=60)["state"] == "done"
        x = wait_xfer(d, tid, timeout=120)
        took = time.time() - t0
        assert x["state"] == "done", x
        st = os.stat(pfs + "/out/huge")
        assert st.st_size == 4 << 40 and st.st_blocks * 512 < 16 * MiB, st
        assert took < 60, "the stage-out of a sparse 4 TiB file took %.0f s" % took
        alive(d)


MOVED = 8          # directories moved
MOVED_ENTRIES = 5000    # entries in each: more than a step of the walk reads


def mover_of_dirs(top, seconds=120):
    """As the user: a process moving each top/aK/x (K < MOVED, a directory of many
    entries) to top/xK and back, as fast as it can.  Its pid, once it runs."""
    def body(ready):
        t0, i = time.monotonic(), 0
        while time.monotonic() - t0 < seconds:
            k = i % MOVED
            down, up = os.path.join(top, "a%d" % k, "x"), os.path.join(top, "x%d" % k)
            try:
                os.rename(down, up) if (i // MOVED) % 2 == 0 else os.rename(up, down)
            except OSError:
                pass
            i += 1
            if i == 10:
                ready()
            time.sleep(0.0005)
    return user_process(body)


def test_directory_moved_during_the_capacity_walk(make_daemon, tmp_base, users):
    """A user over their buffer's capacity keeps moving directories of many
    entries up and down the tree while the capacity walk reads them (a walk by
    names finds the tree moved under it and is abandoned): every total bbmgrd
    gives the buffer still holds the data next to them, and the buffer stays over
    its capacity (before, an abandoned walk gave the buffer a total of 0)."""
    d = mover_daemon(make_daemon, tmp_base)
    with reaped(d.mount) as pids:
        register(d, "mv1", uid=USER1, gid=GID1)
        bb = d.ok("POST", "/v1/jobs/mv1/allocation", {"capacity": "1GiB"}, uid=SLURM_UID,
                  expect=(201,))["nodes"][0]["path"]

        def build():
            for k in range(MOVED):
                os.makedirs(bb + "/a%d/x" % k)
                fd = os.open(bb + "/a%d/x" % k, os.O_RDONLY | os.O_DIRECTORY)
                for i in range(MOVED_ENTRIES):
                    os.close(os.open("f%05d" % i, os.O_WRONLY | os.O_CREAT, 0o600,
                                     dir_fd=fd))
                os.close(fd)
        as_user(USER1, GID1, build)
        pids.append(mover_of_dirs(bb))

        def big():      # the data, next to the directories that move
            with open(bb + "/big", "wb") as f:
                os.posix_fallocate(f.fileno(), 0, 1536 * MiB)
        as_user(USER1, GID1, big)
        # the totals that follow, each of them
        figures = []

        def ten():
            u = d.ok("GET", "/v1/jobs/mv1", uid=SLURM_UID).get("usage")
            if u and (u["used"] > 1024 * MiB or figures) and (not figures or u["measured"]
                                                  != figures[-1]["measured"]):
                figures.append(u)
            return len(figures) >= 10
        wait_for(ten, "ten walks of the tree", timeout=120, report=lambda: figures)
        for u in figures:
            assert u["over"] and 1536 * MiB <= u["used"] < 1700 * MiB, figures
        alive(d)


def test_hostile_buffer_staged_out_by_an_agent(agent, tmp_base, users):
    """bbnoded stages out a buffer holding a FIFO, a socket and root's files
    hard-linked in, into a destination where the user planted a link to root's
    file: it never blocks, fails naming root's 0600 file (it acts as the user), and
    root's files stay as they were."""
    mgr, mount, p, log = agent
    v, files = victim_dir(tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    dirs = [{"name": "83", "uid": USER1, "gid": GID1}]
    try:
        mgr.reply(dirs_gen="h1", dirs=dirs)
        mgr.next(lambda b: b.get("dirs") == "h1")
        bb = os.path.join(mount, "83")
        root_linked(bb, v)
        as_user(USER1, GID1, special_files, bb + "/o")

        def plant():
            os.mkdir(pfs + "/out")
            os.symlink(os.path.join(v, "keep1"), pfs + "/out/mine")
        as_user(USER1, GID1, plant)
        t = task(9, bb + "/o", pfs + "/out", stage_out=True)
        t["directory"] = True
        mgr.reply(dirs_gen="h1", dirs=dirs, tasks=[t])
        body = mgr.next(result_of(9), timeout=60)
        r = [r for r in body["results"] if r["id"] == 9][0]
        assert r["state"] == "failed" and "secret" in r["message"], r
        assert not os.path.exists(pfs + "/out/secret")
        assert os.path.islink(pfs + "/out/mine") or stat.S_ISREG(
            os.lstat(pfs + "/out/mine").st_mode)
        # and torn down: root's files keep their one link
        mgr.reply(dirs_gen="h2", dirs=[], default=True)
        wait_for(lambda: not os.path.exists(bb), "the teardown of " + bb,
                 report=lambda: log_of(log))
        trash_empty(mount, lambda: log_of(log))
        victim_intact(v, files)
        assert p.poll() is None, "bbnoded died:\n" + log_of(log)
    finally:
        scrub(mount)
        scrub(pfs)
