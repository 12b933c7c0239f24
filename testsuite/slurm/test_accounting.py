# SPDX-License-Identifier: GPL-2.0-or-later
"""Accounting of the bb/harmonia TRES on a cluster with a real slurmdbd and a
real MariaDB (testsuite/cluster/cluster start --accounting): burst_buffer/harmonia
counts a job's buffer capacity in MB (bb_p_job_validate, bb_p_job_set_tres_cnt),
so scontrol and sacct show it, association limits on it hold jobs back, and a
reservation's BurstBuffer= is counted too (bb_p_xlate_bb_2_tres_str).

The cluster is this module's own (about 2.5 s more at start than the shared one);
the shared `cluster` fixture stays without accounting."""
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import pytest

import conftest as common

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}
USER = pwd.getpwuid(os.getuid()).pw_name


def script(*directives):
    """A one-node batch script with these directives, doing nothing."""
    return common.script(*directives, body="true")


def _which(prog):
    return shutil.which(prog, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


@pytest.fixture(scope="module")
def acct():
    if os.environ.get("HARMONIA_SLURM_CONF"):
        pytest.skip("starts its own private cluster with slurmdbd and MariaDB "
                    "(testsuite/cluster/cluster --accounting): not run against an external "
                    "cluster")
    if not common._have_cluster_tools():
        pytest.skip("no slurmctld or plugins not built (configure --with-slurm-source)")
    for prog in ("slurmdbd", "mariadbd", "mariadb-install-db"):
        if not _which(prog):
            pytest.skip("%s not installed (scripts/setup installs it)" % prog)
    workdir = tempfile.mkdtemp(prefix="harmonia-acct-")
    os.chmod(workdir, 0o755)
    cdir = os.path.join(workdir, "cluster")
    p = subprocess.run([common.CLUSTER, "start", cdir, "--accounting",
                        "--builddir", common.BUILDDIR],
                       capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        subprocess.run([common.CLUSTER, "stop", cdir], capture_output=True, timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError("cluster start --accounting failed:\n" + p.stdout + p.stderr)
    c = common.Cluster(os.path.join(cdir, "etc", "slurm.conf"), workdir, cdir)
    try:
        yield c
    finally:
        subprocess.run([common.CLUSTER, "stop", cdir], capture_output=True, text=True,
                       timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)


def sacct_tres(c, jobid, *extra):
    """(ReqTRES, AllocTRES) of the job's allocation, once slurmdbd has both (the
    job's first record may reach it without ReqTRES; it follows within seconds)."""
    def get():
        p = c.run("sacct", "-j", str(jobid), "-o", "ReqTRES%80,AllocTRES%80,State",
                  "-X", "-P", "-n", *extra, check=False)
        line = p.stdout.strip()
        if p.returncode != 0 or not line:
            return None
        req, alloc, state = line.split("|")
        return (req, alloc) if req and alloc and state in DONE else None
    return common.wait_for(get, what="sacct record of job %s" % jobid)


def tres_dict(s):
    return dict(kv.split("=", 1) for kv in s.split(",") if kv)


def job_tres(job):
    """The TRES 'scontrol show job' gives a job: TRES= up to Slurm 23.11; from
    24.05 AllocTRES= once it has an allocation, ReqTRES= before."""
    for key in ("AllocTRES", "TRES", "ReqTRES"):
        if job.get(key) and job[key] != "(null)":
            return job[key]
    raise AssertionError("no TRES in %s" % job)


def reason(c, jobid):
    return c.run("squeue", "-h", "-j", str(jobid), "-o", "%T %r").stdout.strip()


def set_limit(c, what):
    c.run("sacctmgr", "-i", "modify", "user", "where", "name=" + USER, "set", what)


def test_accounting_has_the_bb_tres(acct):
    out = acct.run("sacctmgr", "-n", "-P", "show", "tres", "format=type,name,id").stdout
    rows = [l.split("|") for l in out.splitlines()]
    bb = [r for r in rows if r[0] == "bb"]
    assert len(bb) == 1 and bb[0][1] == "harmonia" and int(bb[0][2]) > 1000, out


def test_job_tres_counts_buffer_capacity_in_mb(acct):
    rc, big, _, err = acct.sbatch(script("jobbuffer capacity=10GiB"))
    assert rc == 0, err
    rc, odd, _, err = acct.sbatch(script("jobbuffer capacity=1536MiB"))
    assert rc == 0, err
    rc, plain, _, err = acct.sbatch(script())
    assert rc == 0, err
    # Counted at submission already (tres_req_cnt in bb_p_job_validate).
    assert tres_dict(job_tres(acct.job(big)))["bb/harmonia"] == "10G"
    for j in (big, odd, plain):
        assert acct.wait_state(j, DONE) == "COMPLETED"
    # scontrol prints the MB count with a unit: 10240 MB is "10G", 1536 MB "1.50G".
    assert tres_dict(job_tres(acct.job(big)))["bb/harmonia"] == "10G"
    assert tres_dict(job_tres(acct.job(odd)))["bb/harmonia"] == "1.50G"
    assert "bb/" not in job_tres(acct.job(plain))
    # sacct: requested and allocated
    req, alloc = sacct_tres(acct, big)
    assert tres_dict(req)["bb/harmonia"] == "10G", (req, alloc)
    assert tres_dict(alloc)["bb/harmonia"] == "10G", alloc
    req, alloc = sacct_tres(acct, big, "--noconvert")
    assert tres_dict(req)["bb/harmonia"] == "10240M", req
    assert tres_dict(alloc)["bb/harmonia"] == "10240M", alloc
    req, alloc = sacct_tres(acct, odd, "--noconvert")
    assert tres_dict(alloc)["bb/harmonia"] == "1536M", alloc
    req, alloc = sacct_tres(acct, plain)
    assert "bb/" not in req and "bb/" not in alloc, (req, alloc)
    assert tres_dict(alloc)["cpu"] == "1"


def _held_then_released(acct, limit, want_reason):
    set_limit(acct, limit)
    try:
        rc, big, _, err = acct.sbatch(script("jobbuffer capacity=10GiB"))
        assert rc == 0, err      # accepted: the limit holds it back, it is not refused
        common.wait_for(lambda: reason(acct, big) == "PENDING " + want_reason,
                 what="reason %s (now %r)" % (want_reason, reason(acct, big)))
        # A request within the limit runs meanwhile (4096 MB <= 5000).
        rc, small, _, err = acct.sbatch(script("jobbuffer capacity=4GiB"))
        assert rc == 0, err
        assert acct.wait_state(small, DONE) == "COMPLETED"
        assert reason(acct, big) == "PENDING " + want_reason
    finally:
        set_limit(acct, limit.split("=", 1)[0] + "=bb/harmonia=-1")
    assert acct.wait_state(big, DONE, timeout=90) == "COMPLETED"
    _, alloc = sacct_tres(acct, big, "--noconvert")
    assert tres_dict(alloc)["bb/harmonia"] == "10240M"


def test_grp_tres_limit_holds_job_until_lifted(acct):
    _held_then_released(acct, "GrpTRES=bb/harmonia=5000", "AssocGrpBB")


def test_max_tres_per_job_limit_holds_job_until_lifted(acct):
    _held_then_released(acct, "MaxTRESPerJob=bb/harmonia=5000", "AssocMaxBBPerJob")


@pytest.mark.parametrize("spec,want", [
    ("harmonia:10G", "10G"),             # Slurm's form, this plugin named (10240 MB)
    ("100GB", "95368M"),                 # no plugin named: every plugin's; MB rounded up
    ("1500M,harmonia:1G,lua:5G", "2524M"),   # another plugin's token is not ours
    ("#BB_HARMONIA jobbuffer capacity=10GiB", "10G"),
    ("harmonia:2N", None),               # node counts are no capacity
])
def test_reservation_burst_buffer_is_counted(acct, spec, want):
    name = "acct%d" % (int(time.time() * 1000) % 10**8)
    acct.run("scontrol", "create", "reservation", "ReservationName=" + name,
             "StartTime=now", "Duration=5", "Users=" + USER, "NodeCnt=1",
             "Flags=OVERLAP", "BurstBuffer=" + spec)
    try:
        out = acct.run("scontrol", "show", "reservation", name).stdout
        tres = tres_dict([t for t in out.split() if t.startswith("TRES=")][0][5:])
        out = common.wait_for(lambda: acct.run("sacctmgr", "-n", "-P", "show",
                                        "reservation", "where", "name=" + name,
                                        "format=tres").stdout.strip(),
                       what="reservation %s in slurmdbd" % name)
        db = tres_dict(out)
    finally:
        acct.run("scontrol", "delete", "reservation", name, check=False)
    if want is None:
        assert "bb/harmonia" not in tres and "bb/harmonia" not in db
    else:
        assert db["bb/harmonia"] == want, out
        assert tres["bb/harmonia"] == want, tres


# ------------------------------------------------------------------ persistent buffers

def test_persistent_buffer_is_in_its_creating_job_tres(acct):
    """A create_persistent job counts the buffer it creates (as Slurm's datawarp
    plugin does): sacct shows it in ReqTRES and AllocTRES, and a GrpTRES limit on
    bb/harmonia holds such a job back.  Driven as an ordinary user."""
    pw = common.plain_user(acct)
    acct.run("sacctmgr", "-i", "add", "user", pw.pw_name, "Account=harmonia", check=False)
    common.wait_for(lambda: pw.pw_name in acct.run(
        "sacctmgr", "-n", "-P", "show", "assoc", "format=user").stdout.split(),
        what="association of %s" % pw.pw_name)
    name = "acctp%d" % (int(time.time() * 1000) % 10**6)
    rc, jid, _, err = common.sbatch_as(acct, pw, script(
        "create_persistent name=%s capacity=2GiB" % name))
    assert rc == 0, err
    out = common.run_as(acct, pw, "scontrol", "show", "job", jid).stdout
    tres = tres_dict([t for t in out.split() if t.startswith("TRES=")][0][5:])
    assert tres.get("bb/harmonia") == "2G", out
    assert acct.wait_state(jid, DONE) == "COMPLETED"

    def sacct_user():
        p = common.run_as(acct, pw, "sacct", "-j", jid, "-X", "-P", "-n", "--noconvert",
                          "-o", "ReqTRES%80,AllocTRES%80,State")
        parts = p.stdout.strip().split("|")
        return parts if len(parts) == 3 and parts[0] and parts[1] else None
    req, alloc, state = common.wait_for(sacct_user, what="sacct of job %s" % jid)
    assert tres_dict(req).get("bb/harmonia") == "2048M", req
    assert tres_dict(alloc).get("bb/harmonia") == "2048M", alloc
    # a limit on bb/harmonia now applies to the creation of a persistent buffer
    acct.run("sacctmgr", "-i", "modify", "user", "where", "name=" + pw.pw_name, "set",
             "GrpTRES=bb/harmonia=1000")
    try:
        rc, big, _, err = common.sbatch_as(acct, pw, script(
            "create_persistent name=%sb capacity=2GiB" % name))
        assert rc == 0, err
        common.wait_for(lambda: reason(acct, big) == "PENDING AssocGrpBB",
                        what="create_persistent held by GrpTRES (now %r)" % reason(acct, big))
    finally:
        acct.run("sacctmgr", "-i", "modify", "user", "where", "name=" + pw.pw_name, "set",
                 "GrpTRES=bb/harmonia=-1")
    assert acct.wait_state(big, DONE, timeout=90) == "COMPLETED"
    for n in (name, name + "b"):
        rc, d, _, err = common.sbatch_as(acct, pw, script("destroy_persistent name=%s" % n))
        assert rc == 0, err
        assert acct.wait_state(d, DONE) == "COMPLETED"
