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
import os
import signal
import subprocess

import pytest

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1
from test_mover import GID1, mover_daemon, new_job
from test_nodes_agent import BBNODED, agent  # noqa: F401 (a fixture)
from test_security import as_user

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
