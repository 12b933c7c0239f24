# SPDX-License-Identifier: GPL-2.0-or-later
"""Attacks of unprivileged users on the protocol between bbmgrd and its buffer-node
agents (doc/security.md, "Buffer-node agents"), against a real bbmgrd, real
bbnoded processes and munged on loopback: what users name their files, the
connections they hold, the paths and names they give must not take a node down,
keep the agents out or make an agent act for someone else.

Runs as root (the agents act as the users); skipped otherwise.
"""
import os
import signal
import socket
import time

import pytest

from harmonia_test.wait import scaled, wait_for
from conftest import SLURM_UID, USER1, USER2, register
from test_mover import GID1, GID2, MiB, mkdirs, stage, write, xfer
from test_nodes import agent_cluster, agents, node, new_job  # noqa: F401 (fixture)
from test_security import as_user, users  # noqa: F401 (fixture)

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
