# SPDX-License-Identifier: GPL-2.0-or-later
"""Capacity enforced by the file system: on btrfs, a buffer directory is a
subvolume with a qgroup limit of its capacity (capacity.enforce: auto or btrfs),
so that a job writing past its capacity gets "Disk quota exceeded" from the file
system itself; its teardown removes the subvolume.  Both modes: bbmgrd's embedded
mover and bbnoded agents.  doc/security.md, Capacity.

The buffer mount is a directory of a btrfs file system made for the test on a
loop device (a sparse file, mkfs.btrfs, losetup, mount), removed at the end.
Needs root, a loop device and mkfs.btrfs; skipped otherwise.

Project quotas on ext4 and XFS mounted prjquota, alike, in both modes; where
this kernel cannot mount them, those tests run in a virtual machine on a Debian
kernel that can (test_project_quota_in_a_vm, testsuite/vm/vm.py).
"""
import ctypes
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1, register
from harmonia_test.daemon import SRCDIR
from test_mover import GID1
from test_nodes import BBMGR, agent_cluster, agents  # noqa: F401 (a fixture)
from test_nodes import new_job as agent_job

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the quota tests need root")

MiB = 1 << 20
TESTSUITE = os.path.join(SRCDIR, "testsuite")


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


MKFS = {"ext4": ["mkfs.ext4", "-q", "-F", "-O", "quota,project"],
        "xfs": ["mkfs.xfs", "-q", "-f"]}


@pytest.fixture(params=["ext4", "xfs"])
def prjquota_fs(request, tmp_base):
    """An ext4 (made with the quota and project features) or XFS file system of
    512 MiB on a loop device, mounted prjquota at tmp_base/FS: its path."""
    fs = request.param
    if not shutil.which(MKFS[fs][0]) or not os.path.exists("/dev/loop-control"):
        pytest.skip("project quotas cannot be mounted: no %s or no loop device" % MKFS[fs][0])
    img = os.path.join(tmp_base, fs + ".img")
    mnt = os.path.join(tmp_base, fs)
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(512 * MiB)
    subprocess.run(MKFS[fs] + [img], check=True, capture_output=True)
    loop = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True)
    if loop.returncode != 0:
        pytest.skip("project quotas cannot be mounted: losetup: " + loop.stderr.strip())
    dev = loop.stdout.strip()
    try:
        m = subprocess.run(["mount", "-t", fs, "-o", "prjquota", dev, mnt],
                           capture_output=True, text=True)
        if m.returncode != 0:
            pytest.skip("project quotas cannot be mounted by this kernel (CONFIG_QFMT_V2, "
                        "XFS_QUOTA): " + m.stderr.strip())
        try:
            yield mnt
        finally:
            subprocess.run(["umount", "-l", mnt], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


def as_user(argv):
    """argv run as the job's user: its CompletedProcess (text)."""
    def drop():
        os.setgroups([])
        os.setgid(GID1)
        os.setuid(USER1)
    return subprocess.run(argv, capture_output=True, text=True, preexec_fn=drop)


def dd_as_user(path, mib):
    """dd of mib MiB into path as the job's user: (returncode, stderr)."""
    r = as_user(["dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=%d" % mib, "conv=fsync"])
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


def over_quota(bb, error="Disk quota exceeded"):
    """The user writes 200 MiB into the 64 MiB buffer bb: the file system refuses
    (with error)."""
    rc, err = dd_as_user(os.path.join(bb, "big"), 200)
    assert rc != 0 and error in err, (rc, err)
    used = stored(os.path.join(bb, "big"))
    print("stored after %s: %d bytes" % (error, used))
    assert 32 * MiB <= used <= 72 * MiB, used


class Dqblk(ctypes.Structure):
    """struct if_dqblk (linux/quota.h)."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "bhardlimit", "bsoftlimit", "curspace", "ihardlimit", "isoftlimit", "curinodes",
        "btime", "itime")] + [("valid", ctypes.c_uint32)]


def project_quota(mnt, projid):
    """(hard limit in bytes, bytes charged) of project projid on the file system
    mounted at mnt (quotactl Q_GETQUOTA of PRJQUOTA on its device); (0, 0) for
    an id XFS has no record of."""
    dev = [l.split()[0] for l in open("/proc/self/mounts") if l.split()[1] == mnt][-1]
    libc = ctypes.CDLL(None, use_errno=True)
    dq = Dqblk()
    cmd = (0x800007 << 8) | 2       # QCMD(Q_GETQUOTA, PRJQUOTA)
    if libc.quotactl(cmd, dev.encode(), projid, ctypes.byref(dq)) < 0:
        e = ctypes.get_errno()
        assert e == errno.ENOENT, os.strerror(e)
        return 0, 0
    return dq.bhardlimit * 1024, dq.curspace


def embedded(make_daemon, mount, **extra):
    return make_daemon(
        stage={"mode": "mover"}, mover={"threads": 2},
        policy={"id": "fairshare", "overprovision": 1.0},
        pools=[{"name": "nvme", "granularity": "1MiB"}],
        nodes=[{"names": "bb01", "capacity": "1TiB", "bandwidth": "2 GB/s",
                "mount": mount, "pool": "nvme"}], **extra)


def embedded_job(make_daemon, btrfs, jobid):
    """bbmgrd with its buffer mount btrfs/bb, a job of its user with a 64 MiB
    buffer: (the daemon, the mount, the buffer's path)."""
    mount = os.path.join(btrfs, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount)
    register(d, jobid, uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/%s/allocation" % jobid, {"capacity": "64MiB"},
             uid=SLURM_UID, expect=(201,))
    return d, mount, a["nodes"][0]["path"]


def test_embedded_btrfs_quota(make_daemon, tmp_base, btrfs):
    """Embedded mode: the job's 64 MiB buffer is a subvolume limited to 64 MiB; a
    write of 200 MiB fails with EDQUOT; its teardown removes the subvolume."""
    d, mount, bb = embedded_job(make_daemon, btrfs, "q1")
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


def agent_quota_job(make_daemon, agents, fs, jobid):  # noqa: F811
    """Agents on fs/agents (fs: a mounted file system), a job of one node with a
    64 MiB buffer: (the daemon, the buffer's path, that path relative to fs)."""
    base = os.path.join(fs, "agents")
    os.makedirs(base)
    d, _ = agent_cluster(make_daemon, agents, base)
    paths, _ = agent_job(d, jobid, nodes=1, capacity="64MiB")
    wait_for(lambda: os.stat(paths[0]).st_uid == USER1, "its agent to give it to its user")
    return d, paths[0], os.path.relpath(paths[0], fs)


def test_agent_btrfs_quota(make_daemon, agents, tmp_base, btrfs):  # noqa: F811
    """Agent mode: bbnoded makes the job's buffer as a subvolume limited to its
    capacity on its node (64 MiB), and removes it when the job ends."""
    d, bb, rel = agent_quota_job(make_daemon, agents, btrfs, "aq1")
    assert rel in subvolumes(btrfs), (rel, subvolumes(btrfs))
    over_quota(bb)
    assert not os.path.exists(os.path.join(os.path.dirname(bb), ".harmonia-spare"))
    d.ok("DELETE", "/v1/jobs/aq1", uid=SLURM_UID)
    gone(d, btrfs, bb, os.path.dirname(rel) + "/")


def project_limited(d, mnt, bb):
    """bb, a 64 MiB buffer on mnt (ext4 or XFS mounted prjquota), has a project id
    of its own limited to 64 MiB; its user's 200 MiB fail at about 64 MiB (XFS
    refuses a write past a project's limit with ENOSPC, the project being a file
    system of its own to its writers; ext4 with EDQUOT).  Its project id."""
    assert os.path.isdir(bb), d.log_text()[-3000:]
    r = subprocess.run(["lsattr", "-pd", bb], capture_output=True, text=True, check=True)
    projid = int(r.stdout.split()[0])
    assert projid >= 0x40000000, r.stdout
    limit, used = project_quota(mnt, projid)
    assert limit == 64 * MiB and used <= 64 * 1024, (limit, used)     # the directory
    xfs = os.path.basename(mnt) == "xfs"
    over_quota(bb, "No space left on device" if xfs else "Disk quota exceeded")
    limit, used = project_quota(mnt, projid)
    assert limit == 64 * MiB and 32 * MiB <= used <= 64 * MiB, (limit, used)
    return projid


def project_gone(d, mnt, bb, projid):
    """The teardown removed bb, and nothing is left charged to its project (XFS
    frees the blocks of removed files in the background)."""
    wait_for(lambda: not os.path.exists(bb) or None, "the teardown to remove " + bb,
             report=lambda: d.log_text()[-2000:])
    wait_for(lambda: project_quota(mnt, projid)[1] == 0 or None,
             "the blocks of project %d to be freed" % projid,
             report=lambda: "%s %s\n%s" % (project_quota(mnt, projid),
                                           list(os.walk(mnt)), d.log_text()[-2000:]))


def test_embedded_project_quota(make_daemon, tmp_base, prjquota_fs):
    """ext4 or XFS mounted with prjquota, capacity.enforce: project: the job's
    64 MiB buffer gets a project id of its own limited to 64 MiB; 200 MiB fail at
    about 64 MiB; its teardown removes it and nothing is left charged to it."""
    mount = os.path.join(prjquota_fs, "bb")
    os.makedirs(mount)
    d = embedded(make_daemon, mount, capacity={"enforce": "project"})
    register(d, "p1", uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/p1/allocation", {"capacity": "64MiB"}, uid=SLURM_UID,
             expect=(201,))
    bb = a["nodes"][0]["path"]
    projid = project_limited(d, prjquota_fs, bb)
    d.ok("DELETE", "/v1/jobs/p1", uid=SLURM_UID)
    project_gone(d, prjquota_fs, bb, projid)


def test_agent_project_quota(make_daemon, agents, tmp_base, prjquota_fs):  # noqa: F811
    """Agent mode (capacity.enforce: auto): bbnoded gives the job's buffer on its
    node's ext4 or XFS a project id of its own limited to 64 MiB, and its teardown
    leaves nothing charged to it."""
    d, bb, _ = agent_quota_job(make_daemon, agents, prjquota_fs, "ap1")
    projid = project_limited(d, prjquota_fs, bb)
    d.ok("DELETE", "/v1/jobs/ap1", uid=SLURM_UID)
    project_gone(d, prjquota_fs, bb, projid)


# The project-quota path on a real kernel: this machine's may lack project quotas
# (CONFIG_QFMT_V2, XFS_QUOTA), so test_embedded_project_quota also runs in a
# virtual machine booted by qemu on an installed Debian kernel that has them
# (testsuite/vm/vm.py: the host's / shared read-only, the same build tree).

def vm_module():
    sys.path.insert(0, os.path.join(SRCDIR, "testsuite", "vm"))
    try:
        import vm
    finally:
        sys.path.pop(0)
    return vm


def junit_cases(path):
    """{test name: (outcome, message)} of a JUnit report."""
    cases = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            e = tc.find(kind)
            if e is not None:
                outcome, message = kind, (e.get("message") or "") + (e.text or "")
                break
        cases[tc.get("name")] = (outcome, message)
    return cases


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
def test_project_quota_in_a_vm(tmp_base, fs):
    """test_embedded_project_quota and test_agent_project_quota run by pytest
    inside a virtual machine (1 vCPU, 512 MiB, KVM or qemu's emulation) whose
    kernel has project quotas, on the buffer mount fs: both pass there (neither
    is skipped)."""
    vm = vm_module()
    out = os.path.join(tmp_base, "vm")
    os.makedirs(out)
    os.chmod(out, 0o755)
    junit = os.path.join(out, "junit.xml")
    names = ["test_%s_project_quota[%s]" % (mode, fs) for mode in ("embedded", "agent")]
    argv = [sys.executable, "-m", "pytest", "-c", os.path.join(TESTSUITE, "pytest.ini"),
            "--rootdir", TESTSUITE, "-v", "--junitxml", junit] + [
                "daemon/test_quota.py::" + n for n in names]
    console = io.StringIO()
    t0 = time.monotonic()
    try:
        rc = vm.run(argv, out, timeout=900, cwd=TESTSUITE, log=console,
                    env_names=("HARMONIA_", "PYTHONDONTWRITEBYTECODE"), modules=["loop"])
    except vm.NoVM as e:
        pytest.skip("no virtual machine can run here: %s" % e)
    finally:
        print(console.getvalue())
    print("the virtual machine ran %s in %.0f s" % (" ".join(names), time.monotonic() - t0))
    assert os.path.exists(junit), "pytest in the virtual machine left no report (exit %d)" % rc
    cases = junit_cases(junit)
    assert all(cases.get(n, ("missing",))[0] == "passed" for n in names) and rc == 0, (
        rc, cases)


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


# A user's own subvolume inside the buffer (btrfs lets any user make one): its
# bytes count against the buffer's capacity (a level-1 qgroup holds the buffer
# and every subvolume below it), it is measured, copied by a stage-out and
# removed by the teardown with the buffer's qgroups.

def user_subvolume(path):
    r = as_user(["btrfs", "subvolume", "create", path])
    assert r.returncode == 0, r.stderr
    assert os.stat(path).st_ino == 256 and os.stat(path).st_dev != os.stat(
        os.path.dirname(path)).st_dev


def qgroups(mnt):
    """btrfs qgroup show: {qgroupid: (referenced bytes, max referenced or None)}."""
    r = subprocess.run(["btrfs", "qgroup", "show", "-r", "--raw", mnt], capture_output=True,
                       text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if f and "/" in f[0] and f[0][0].isdigit():
            out[f[0]] = (int(f[1]), None if f[3] == "none" else int(f[3]))
    return out


def usage_of(d, path):
    return d.ok("GET", path, uid=USER1)["usage"]


def wait_usage(d, path, pred, what):
    return wait_for(lambda: (lambda u: u if u and pred(u) else None)(usage_of(d, path)),
                    what, report=lambda: "%s\n%s" % (usage_of(d, path), d.log_text()[-2000:]))


def nested_over_quota(d, mnt, bb, job):
    """The user makes bb/nest, a subvolume of their own (and nest/d/nest2 in it),
    writes 8 MiB into it: the job's usage counts them; the buffer's level-1 qgroup
    is limited to 64 MiB; 200 MiB more into the nested subvolume fail with EDQUOT."""
    nest = os.path.join(bb, "nest")
    user_subvolume(nest)
    assert as_user(["mkdir", os.path.join(nest, "d")]).returncode == 0
    user_subvolume(os.path.join(nest, "d", "nest2"))
    rc, err = dd_as_user(os.path.join(nest, "small"), 8)
    assert rc == 0, err
    u = wait_usage(d, "/v1/jobs/" + job, lambda u: u["used"] >= 8 * MiB,
                   "the usage to count the nested subvolume's 8 MiB")
    print("usage with the nested subvolume:", u)
    r = subprocess.run([BBMGR, "-u", "http://127.0.0.1:%d" % d.port, "job", job],
                       capture_output=True, text=True,
                       env=dict(os.environ, HARMONIA_MUNGE_SOCKET=d.munge.socket))
    assert r.returncode == 0 and json.loads(r.stdout)["usage"]["used"] >= 8 * MiB, r
    limited = {q: v for q, v in qgroups(mnt).items() if q.startswith("1/")}
    assert list(limited.values()) and all(v[1] == 64 * MiB for v in limited.values()), limited
    rc, err = dd_as_user(os.path.join(nest, "big"), 200)
    assert rc != 0 and "Disk quota exceeded" in err, (rc, err)
    used = stored(os.path.join(nest, "big"))
    print("stored in the nested subvolume after EDQUOT: %d bytes" % used)
    assert used <= 64 * MiB, used
    return nest


def trash_empty(parent):
    t = os.path.join(parent, ".harmonia-trash")
    assert not os.path.exists(t) or os.listdir(t) == [], os.listdir(t)


def no_level1_left(d, mnt):
    """The teardown destroyed the buffer's level-1 qgroup, and the kernel the
    level-0 ones of the removed subvolumes: only the top's (0/5) is left."""
    wait_for(lambda: set(qgroups(mnt)) == {"0/5"} or None,
             "the buffer's qgroups to be destroyed",
             report=lambda: "%s\n%s" % (qgroups(mnt), d.log_text()[-2000:]))


def test_embedded_btrfs_nested_subvolume(make_daemon, tmp_base, btrfs):
    """Embedded mode: a subvolume the user makes in the 64 MiB buffer is measured,
    counts against the limit (EDQUOT), and the teardown removes it and the
    buffer's qgroups, leaving nothing in the trash."""
    d, mount, bb = embedded_job(make_daemon, btrfs, "n1")
    nest = nested_over_quota(d, btrfs, bb, "n1")
    # a read-only snapshot of it (its owner may make one): nothing in it can be
    # removed until the teardown makes it writable
    assert as_user(["rm", os.path.join(nest, "big")]).returncode == 0
    subprocess.run(["sync", "-f", nest], check=True)
    r = as_user(["btrfs", "subvolume", "snapshot", "-r", nest, os.path.join(bb, "ro")])
    assert r.returncode == 0, r.stderr
    d.ok("DELETE", "/v1/jobs/n1", uid=SLURM_UID)
    gone(d, btrfs, bb, "bb/")
    trash_empty(mount)
    no_level1_left(d, btrfs)


def test_agent_btrfs_nested_subvolume(make_daemon, agents, tmp_base, btrfs):  # noqa: F811
    """Agent mode: the same on a bbnoded's node."""
    d, bb, rel = agent_quota_job(make_daemon, agents, btrfs, "an1")
    nested_over_quota(d, btrfs, bb, "an1")
    d.ok("DELETE", "/v1/jobs/an1", uid=SLURM_UID)
    gone(d, btrfs, bb, os.path.dirname(rel) + "/")
    trash_empty(os.path.dirname(bb))
    no_level1_left(d, btrfs)


def test_embedded_btrfs_nested_stage_out(make_daemon, tmp_base, btrfs):
    """A stage-out of the buffer copies what is in a nested subvolume."""
    d, mount, bb = embedded_job(make_daemon, btrfs, "s1")
    pfs = os.path.join(tmp_base, "pfs")
    os.makedirs(pfs)
    os.chown(pfs, USER1, GID1)
    user_subvolume(os.path.join(bb, "nest"))
    r = as_user(["sh", "-c", "echo nested data > %s/nest/f && echo top > %s/g" % (bb, bb)])
    assert r.returncode == 0, r.stderr
    tid = d.ok("POST", "/v1/jobs/s1/stage_out",
               {"source": bb, "destination": os.path.join(pfs, "out"), "type": "directory"},
               uid=SLURM_UID, expect=(201,))["id"]
    x = wait_for(lambda: (lambda x: x if x["state"] in ("done", "failed") else None)(
        d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID)), "the stage-out to end")
    assert x["state"] == "done", x
    assert open(os.path.join(pfs, "out", "g")).read() == "top\n"
    assert open(os.path.join(pfs, "out", "nest", "f")).read() == "nested data\n"
    # another file system mounted in the buffer (only root can) is not walked
    m = os.path.join(bb, "mnt")
    os.mkdir(m)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", m], check=True)
    try:
        with open(os.path.join(m, "other"), "w") as f:
            f.write("not the buffer's\n")
        tid = d.ok("POST", "/v1/jobs/s1/stage_out",
                   {"source": bb, "destination": os.path.join(pfs, "out2"),
                    "type": "directory"}, uid=SLURM_UID, expect=(201,))["id"]
        x = wait_for(lambda: (lambda x: x if x["state"] in ("done", "failed") else None)(
            d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID)), "the stage-out to end")
        assert x["state"] == "failed", x
        assert "another file system is mounted there" in str(x), x
        assert not os.path.exists(os.path.join(pfs, "out2", "mnt", "other"))
    finally:
        subprocess.run(["umount", "-l", m], capture_output=True)
    d.ok("DELETE", "/v1/jobs/s1", uid=SLURM_UID)
    gone(d, btrfs, bb, "bb/")


def test_embedded_btrfs_site_qgroup_left_alone(make_daemon, tmp_base, btrfs):
    """A level-1 qgroup the site made with the id the buffer's subvolume gets
    (1/256, the first on a new file system) is neither used nor destroyed: the
    buffer's own limit holds, a warning says why, the site's group stays."""
    subprocess.run(["btrfs", "quota", "enable", btrfs], check=True, capture_output=True)
    subprocess.run(["btrfs", "qgroup", "create", "1/256", btrfs], check=True,
                   capture_output=True)
    d, mount, bb = embedded_job(make_daemon, btrfs, "g1")
    assert os.stat(bb).st_ino == 256 and "1/256" in qgroups(btrfs)
    assert qgroups(btrfs)["1/256"][1] is None, qgroups(btrfs)
    assert "create qgroup 1/256: File exists" in d.log_text(), d.log_text()[-2000:]
    over_quota(bb)
    d.ok("DELETE", "/v1/jobs/g1", uid=SLURM_UID)
    gone(d, btrfs, bb, "bb/")
    assert "1/256" in qgroups(btrfs), qgroups(btrfs)


def test_embedded_btrfs_bind_mount_not_entered(make_daemon, tmp_base, btrfs):
    """A subvolume of the same file system bind-mounted in a buffer (only root
    can) looks like a nested subvolume but for its mount: the teardown does not
    enter it, and what it holds stays."""
    d, mount, bb = embedded_job(make_daemon, btrfs, "b1")
    outside = os.path.join(btrfs, "outside")
    subprocess.run(["btrfs", "subvolume", "create", outside], check=True, capture_output=True)
    with open(os.path.join(outside, "keep"), "w") as f:
        f.write("not the buffer's\n")
    m = os.path.join(bb, "bind")
    os.mkdir(m)
    subprocess.run(["mount", "--bind", outside, m], check=True)
    try:
        assert os.stat(m).st_ino == 256
        d.ok("DELETE", "/v1/jobs/b1", uid=SLURM_UID)
        wait_for(lambda: "error teardown of" in d.log_text() or None,
                 "the teardown to stop at the bind mount", report=lambda: d.log_text()[-2000:])
        assert os.path.exists(os.path.join(outside, "keep")), os.listdir(outside)
        assert "another file system is mounted at 'bind'" in d.log_text(), d.log_text()[-2000:]
    finally:
        for line in open("/proc/self/mounts").read().splitlines():
            p = line.split()[1]
            if p.startswith(mount + "/") and p.endswith("/bind"):
                subprocess.run(["umount", "-l", p], capture_output=True)
