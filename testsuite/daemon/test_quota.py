# SPDX-License-Identifier: GPL-2.0-or-later
"""Capacity enforced by the file system: on btrfs, a buffer directory is a
subvolume with a qgroup limit of its capacity (capacity.enforce: auto or btrfs),
so that a job writing past its capacity gets "Disk quota exceeded" from the file
system itself; its teardown removes the subvolume.  Both modes: bbmgrd's embedded
mover and bbnoded agents.  doc/security.md, Capacity.

The buffer mount is a directory of a btrfs file system made for the test on a
loop device (a sparse file, mkfs.btrfs, losetup, mount), removed at the end.
Needs root, a loop device and mkfs.btrfs; skipped otherwise.
"""
import os
import shutil
import subprocess

import pytest

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1, register
from test_mover import GID1
from test_nodes import agent_cluster, agents  # noqa: F401 (a fixture)
from test_nodes import new_job as agent_job

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the quota tests need root")

MiB = 1 << 20


def btrfs_unusable():
    if not shutil.which("mkfs.btrfs"):
        return "no mkfs.btrfs (btrfs-progs)"
    if not os.path.exists("/dev/loop-control"):
        return "no loop device"
    if "btrfs" not in open("/proc/filesystems").read():
        return "no btrfs in this kernel"
    return None


@pytest.fixture
def btrfs(tmp_base):
    """A btrfs file system of 512 MiB mounted at tmp_base/btrfs: its path."""
    why = btrfs_unusable()
    if why:
        pytest.skip("btrfs on a loop device cannot be used: " + why)
    img = os.path.join(tmp_base, "btrfs.img")
    mnt = os.path.join(tmp_base, "btrfs")
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(512 * MiB)
    subprocess.run(["mkfs.btrfs", "-q", "-f", img], check=True, capture_output=True)
    loop = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True)
    if loop.returncode != 0:
        pytest.skip("btrfs on a loop device cannot be used: losetup: " + loop.stderr.strip())
    dev = loop.stdout.strip()
    try:
        subprocess.run(["mount", "-t", "btrfs", dev, mnt], check=True, capture_output=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.fixture
def ext4_prjquota(tmp_base):
    """An ext4 file system with project quotas, mounted prjquota at tmp_base/ext4."""
    if not shutil.which("mkfs.ext4") or not os.path.exists("/dev/loop-control"):
        pytest.skip("project quotas cannot be mounted: no mkfs.ext4 or no loop device")
    img = os.path.join(tmp_base, "ext4.img")
    mnt = os.path.join(tmp_base, "ext4")
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(512 * MiB)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "quota,project", img], check=True,
                   capture_output=True)
    loop = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True)
    if loop.returncode != 0:
        pytest.skip("project quotas cannot be mounted: losetup: " + loop.stderr.strip())
    dev = loop.stdout.strip()
    try:
        m = subprocess.run(["mount", "-t", "ext4", "-o", "prjquota", dev, mnt],
                           capture_output=True, text=True)
        if m.returncode != 0:
            pytest.skip("project quotas cannot be mounted by this kernel (CONFIG_QFMT_V2): "
                        + m.stderr.strip())
        try:
            yield mnt
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


def dd_as_user(path, mib):
    """dd of mib MiB into path as the job's user: (returncode, stderr)."""
    def drop():
        os.setgroups([])
        os.setgid(GID1)
        os.setuid(USER1)
    r = subprocess.run(["dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=%d" % mib,
                        "conv=fsync"], capture_output=True, text=True, preexec_fn=drop)
    return r.returncode, r.stderr


def stored(path):
    return os.stat(path).st_blocks * 512


def subvolumes(mnt):
    r = subprocess.run(["btrfs", "subvolume", "list", mnt], capture_output=True, text=True,
                       check=True)
    return [l.split(" path ")[-1] for l in r.stdout.splitlines() if " path " in l]


def gone(d, mnt, bb, under):
    """Wait for the teardown of bb to remove it and every subvolume under under
    (the trash's too)."""
    wait_for(lambda: not os.path.exists(bb) and not any(
        s.startswith(under) for s in subvolumes(mnt)) or None,
        "the teardown to remove the subvolume " + bb,
        report=lambda: "%s\n%s" % (subvolumes(mnt), d.log_text()[-2000:]))


def over_quota(bb):
    """The user writes 200 MiB into the 64 MiB buffer bb: the file system refuses."""
    rc, err = dd_as_user(os.path.join(bb, "big"), 200)
    assert rc != 0 and "Disk quota exceeded" in err, (rc, err)
    used = stored(os.path.join(bb, "big"))
    print("stored after EDQUOT: %d bytes" % used)
    assert 32 * MiB <= used <= 72 * MiB, used


def embedded(make_daemon, mount, **extra):
    return make_daemon(
        stage={"mode": "mover"}, mover={"threads": 2},
        policy={"id": "fairshare", "overprovision": 1.0},
        pools=[{"name": "nvme", "granularity": "1MiB"}],
        nodes=[{"names": "bb01", "capacity": "1TiB", "bandwidth": "2 GB/s",
                "mount": mount, "pool": "nvme"}], **extra)


def test_embedded_btrfs_quota(make_daemon, tmp_base, btrfs):
    """Embedded mode: the job's 64 MiB buffer is a subvolume limited to 64 MiB; a
    write of 200 MiB fails with EDQUOT; its teardown removes the subvolume."""
    mount = os.path.join(btrfs, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount)
    register(d, "q1", uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/q1/allocation", {"capacity": "64MiB"}, uid=SLURM_UID,
             expect=(201,))
    bb = a["nodes"][0]["path"]
    assert os.path.isdir(bb)
    assert "bb/q1" in subvolumes(btrfs), subvolumes(btrfs)
    st = os.stat(bb)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (USER1, GID1, 0o700)
    over_quota(bb)
    # its buffer directories are subvolumes: no spare directories are made there
    assert not os.path.exists(os.path.join(mount, ".harmonia-spare"))
    d.ok("DELETE", "/v1/jobs/q1", uid=SLURM_UID)
    gone(d, btrfs, bb, "bb/")
    assert d.proc.poll() is None


def test_agent_btrfs_quota(make_daemon, agents, tmp_base, btrfs):  # noqa: F811
    """Agent mode: bbnoded makes the job's buffer as a subvolume limited to its
    capacity on its node (64 MiB), and removes it when the job ends."""
    base = os.path.join(btrfs, "agents")
    os.makedirs(base)
    d, _ = agent_cluster(make_daemon, agents, base)
    paths, names = agent_job(d, "aq1", nodes=1, capacity="64MiB")
    bb = paths[0]
    rel = os.path.relpath(bb, btrfs)
    assert rel in subvolumes(btrfs), (rel, subvolumes(btrfs))
    over_quota(bb)
    assert not os.path.exists(os.path.join(os.path.dirname(bb), ".harmonia-spare"))
    d.ok("DELETE", "/v1/jobs/aq1", uid=SLURM_UID)
    gone(d, btrfs, bb, os.path.dirname(rel) + "/")


def test_embedded_project_quota(make_daemon, tmp_base, ext4_prjquota):
    """ext4 mounted with prjquota, capacity.enforce: project: the job's 64 MiB
    buffer gets a project id of its own limited to 64 MiB; 200 MiB fail."""
    mount = os.path.join(ext4_prjquota, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount, capacity={"enforce": "project"})
    register(d, "p1", uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/p1/allocation", {"capacity": "64MiB"}, uid=SLURM_UID,
             expect=(201,))
    bb = a["nodes"][0]["path"]
    r = subprocess.run(["lsattr", "-pd", bb], capture_output=True, text=True, check=True)
    assert int(r.stdout.split()[0]) >= 0x40000000, r.stdout
    over_quota(bb)
    d.ok("DELETE", "/v1/jobs/p1", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(bb) or None, "the teardown to remove " + bb)


def test_explicit_enforce_refused_elsewhere(make_daemon, tmp_base, btrfs):
    """capacity.enforce: project on a btrfs mount: the allocation is refused (422)
    with the mount and the reason, and no buffer directory is made; the same
    daemon's persistent buffers are refused alike."""
    mount = os.path.join(btrfs, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount, capacity={"enforce": "project"})
    register(d, "e1", uid=USER1, gid=GID1)
    st, e = d.request("POST", "/v1/jobs/e1/allocation", {"capacity": "64MiB"}, uid=SLURM_UID)
    want = ("capacity.enforce: project: buffer mount %s cannot enforce it: its file system "
            "is btrfs" % mount)
    assert st == 422 and want in str(e), (st, e)
    assert not os.path.exists(os.path.join(mount, "e1")), os.listdir(mount)
    st, e = d.request("POST", "/v1/persistent", {"name": "pe", "capacity": "4MiB",
                                                  "pool": "nvme"}, uid=USER1)
    assert st == 422 and want in str(e), (st, e)
    assert d.ok("GET", "/v1/jobs/e1", uid=USER1).get("allocation") is None


def test_embedded_btrfs_persistent(make_daemon, tmp_base, btrfs):
    """A persistent buffer of 64 MiB on a btrfs mount is a subvolume limited to it;
    its destruction removes the subvolume."""
    mount = os.path.join(btrfs, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount, capacity={"enforce": "btrfs"})
    b = d.ok("POST", "/v1/persistent", {"name": "pq", "capacity": "64MiB", "pool": "nvme"},
             uid=USER1, expect=(201,))
    bb = b["nodes"][0]["path"]
    assert "bb/persistent/pq" in subvolumes(btrfs), subvolumes(btrfs)
    over_quota(bb)
    d.ok("DELETE", "/v1/persistent/pq", uid=SLURM_UID)
    gone(d, btrfs, bb, "bb/")
