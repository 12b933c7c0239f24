# SPDX-License-Identifier: GPL-2.0-or-later
"""Heterogeneous jobs with buffers (sbatch, '#SBATCH hetjob' between the
components of the script).  As with Slurm's datawarp and lua plugins, each
component's #BB_HARMONIA lines are its own request: the buffer belongs to the
component that asks for it, with its own stage-in and stage-out, its own line
in 'scontrol show burst' and its own bb/harmonia TRES in sacct.  The batch
script runs in the first component and finds component N's buffer in
HARMONIA_BB_HET_GROUP_N (and HARMONIA_BB_NODES_, HARMONIA_JOBID_), as Slurm
names its own per-component variables."""
import os

import pytest

import conftest as common
from conftest import job_ended, wait_for
from test_accounting import acct, job_tres, tres_dict  # noqa: F401 (fixture)

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}

pytestmark = pytest.mark.usefixtures("need_bbmgrd")


def component(n, *directives):
    lines = ["#SBATCH hetjob"] if n else []
    lines.append("#SBATCH -N1")
    return lines + ["#BB_HARMONIA " + d for d in directives]


def het_script(comps, body):
    return "\n".join(["#!/bin/bash"] + [l for c in comps for l in c] + [body]) + "\n"


def staged(d, n):
    """Directives of a buffer staging d/inN in and $HARMONIA_BB/out out to d/outN."""
    return ("stage_in source=%s/in%d destination=$HARMONIA_BB/in type=file" % (d, n),
            "stage_out source=$HARMONIA_BB/out destination=%s/out%d type=file" % (d, n))


def wait_go(d):
    """Script lines: wait (bounded) until the test creates d/GO."""
    return 'for i in $(seq 600); do [ -e %s/GO ] && break; sleep 0.1; done' % d


def env_of(text):
    return dict(l.split("=", 1) for l in text.splitlines() if l.startswith("HARMONIA_"))


def workdir(tmp_path):
    d = str(tmp_path)
    os.chmod(d, 0o755)
    for n, text in ((0, "zero\n"), (1, "one\n")):
        with open(os.path.join(d, "in%d" % n), "w") as f:
            f.write(text)
    return d


def submit(cluster, script):
    """sbatch; the job ids of the two components.  'scontrol show job LEAD'
    shows every component: the first one alone is LEAD+0."""
    rc, lead, _, err = cluster.sbatch(script)
    assert rc == 0, err
    other = str(int(lead) + 1)
    assert cluster.job(other)["HetJobOffset"] == "1"
    assert cluster.job(lead + "+0")["HetJobOffset"] == "0"
    return lead, other


def burst_lines(cluster):
    """'scontrol show burst': {job id: Size} of its allocated buffers."""
    out = cluster.run("scontrol", "show", "burst").stdout
    got = {}
    for l in out.splitlines():
        kv = dict(t.split("=", 1) for t in l.split() if "=" in t)
        if "JobID" in kv and "Size" in kv:
            got[kv["JobID"]] = kv["Size"]
    return got


def test_each_component_has_its_own_buffer(cluster, tmp_path):
    d = workdir(tmp_path)
    lead, other = submit(cluster, het_script(
        [component(0, "jobbuffer capacity=1GiB", *staged(d, 0)),
         component(1, "jobbuffer capacity=3GiB", *staged(d, 1))],
        "env | grep ^HARMONIA_ | sort\n"
        'cp "$HARMONIA_BB/in" "$HARMONIA_BB/out"\n'
        "srun --het-group=1 bash -c 'cp \"$HARMONIA_BB_HET_GROUP_1/in\" "
        "\"$HARMONIA_BB_HET_GROUP_1/out\"'\n" + wait_go(d)))
    # each component's request is its own
    assert "capacity=1GiB" in cluster.job(lead + "+0")["BurstBuffer"]
    assert "in0" in cluster.job(lead + "+0")["BurstBuffer"]
    assert "3GiB" not in cluster.job(lead + "+0")["BurstBuffer"]
    assert "capacity=3GiB" in cluster.job(other)["BurstBuffer"]
    assert "in1" in cluster.job(other)["BurstBuffer"]
    assert "1GiB" not in cluster.job(other)["BurstBuffer"]
    for j in (lead + "+0", other):
        cluster.wait_state(j, {"RUNNING"})
    # two allocations, one per component, each of its own size
    got = wait_for(lambda: (lambda b: b if lead in b and other in b else None)(
        burst_lines(cluster)), what="both components in scontrol show burst")
    assert got[lead] == "1GiB" and got[other] == "3GiB"
    for j, cap in ((lead, 1 << 30), (other, 3 << 30)):
        job = wait_for(lambda: (lambda x: x if isinstance(x, dict) and x.get("allocation")
                                else None)(cluster.bbmgr("job", j, check=False)),
                       what="allocation of %s in bbmgrd" % j)
        assert job["allocation"]["capacity"] == cap, job
    open(os.path.join(d, "GO"), "w").close()
    for j in (lead + "+0", other):
        assert cluster.wait_state(j, DONE, timeout=90) == "COMPLETED", cluster.out(lead)
    # each stage-out ran, from its own buffer
    for j in (lead + "+0", other):
        wait_for(lambda: cluster.job(j)["BurstBufferState"] == "complete",
                 what="stage-out of %s" % j)
    with open(os.path.join(d, "out0")) as f:
        assert f.read() == "zero\n"
    with open(os.path.join(d, "out1")) as f:
        assert f.read() == "one\n"
    # the batch script (first component) saw both buffers
    env = env_of(cluster.out(lead))
    assert env["HARMONIA_JOBID"] == lead == env["HARMONIA_JOBID_HET_GROUP_0"]
    assert env["HARMONIA_JOBID_HET_GROUP_1"] == other
    assert env["HARMONIA_BB"] == env["HARMONIA_BB_HET_GROUP_0"]
    assert env["HARMONIA_BB"].endswith("/" + lead)
    assert env["HARMONIA_BB_HET_GROUP_1"].endswith("/" + other)
    assert env["HARMONIA_BB_NODES_HET_GROUP_1"]
    for j in (lead, other):
        wait_for(lambda: job_ended(cluster, j), what="teardown of %s" % j)
    assert burst_lines(cluster).keys().isdisjoint({lead, other})


def test_buffer_of_a_later_component_only(cluster, tmp_path):
    d = workdir(tmp_path)
    lead, other = submit(cluster, het_script(
        [component(0), component(1, "jobbuffer capacity=2GiB", *staged(d, 1))],
        "env | grep ^HARMONIA_ | sort\n"
        "srun --het-group=1 bash -c 'cp \"$HARMONIA_BB_HET_GROUP_1/in\" "
        "\"$HARMONIA_BB_HET_GROUP_1/out\"'"))
    # the first component asked for nothing and has nothing
    assert not cluster.job(lead + "+0").get("BurstBuffer")
    assert "capacity=2GiB" in cluster.job(other)["BurstBuffer"]
    for j in (lead + "+0", other):
        assert cluster.wait_state(j, DONE, timeout=90) == "COMPLETED", cluster.out(lead)
    wait_for(lambda: cluster.job(other)["BurstBufferState"] == "complete",
             what="stage-out")
    with open(os.path.join(d, "out1")) as f:
        assert f.read() == "one\n"
    env = env_of(cluster.out(lead))
    assert "HARMONIA_BB" not in env and "HARMONIA_BB_HET_GROUP_0" not in env
    assert env["HARMONIA_BB_HET_GROUP_1"].endswith("/" + other)
    assert env["HARMONIA_JOBID_HET_GROUP_1"] == other
    assert env["HARMONIA_URL"]
    # bbmgrd never heard of the first component
    assert cluster.bbmgr_run("job", lead).returncode != 0


def test_a_component_asks_once_each(cluster):
    """A jobbuffer in each component is one request each, not two in one job."""
    lead, other = submit(cluster, het_script(
        [component(0, "jobbuffer capacity=1GiB"), component(1, "jobbuffer capacity=1GiB")],
        "true"))
    for j in (lead + "+0", other):
        assert cluster.wait_state(j, DONE, timeout=90) == "COMPLETED"
        wait_for(lambda: cluster.job(j)["BurstBufferState"] == "complete",
                 what="stage-out of %s" % j)


def test_bad_directive_of_a_later_component_names_its_line(cluster, tmp_path):
    rc, _, _, err = cluster.sbatch(het_script(
        [component(0, "jobbuffer capacity=1GiB"), component(1, "jobbuffer capacity=lots")],
        "true"))
    assert rc != 0
    # line 6 of the script the user wrote, in the second component (offset 1)
    assert "#BB_HARMONIA line 6" in err and "component 1" in err, err
    assert "'lots'" in err, err


@pytest.fixture
def acct_cluster(request):
    """A cluster with slurmdbd counting bb/harmonia: an external one (the
    Docker cluster) when it does, else a private one (test_accounting's)."""
    if os.environ.get("HARMONIA_SLURM_CONF"):
        c = request.getfixturevalue("cluster")
        p = c.run("sacctmgr", "-n", "-P", "show", "tres", "format=type,name", check=False)
        if "bb|harmonia" not in p.stdout.split():
            pytest.skip("the cluster does not account bb/harmonia (AccountingStorageTRES)")
        return c
    return request.getfixturevalue("acct")


def test_sacct_counts_each_components_buffer(acct_cluster):
    acct = acct_cluster
    lead, other = submit(acct, het_script(
        [component(0, "jobbuffer capacity=1GiB"), component(1, "jobbuffer capacity=3GiB")],
        "true"))
    for j in (lead + "+0", other):
        assert acct.wait_state(j, DONE, timeout=90) == "COMPLETED"

    def rows():
        """sacct's allocation of each component ("LEAD+N"), once both are in."""
        p = acct.run("sacct", "-j", lead, "-X", "-P", "-n", "--noconvert",
                     "-o", "JobID,AllocTRES,State", check=False)
        got = {l.split("|")[0]: l.split("|") for l in p.stdout.splitlines() if l}
        want = (lead + "+0", lead + "+1")
        if all(k in got and got[k][1] and got[k][2] in DONE for k in want):
            return {k: tres_dict(got[k][1]) for k in want}
        return None
    got = wait_for(rows, what="sacct records of both components")
    assert got[lead + "+0"]["bb/harmonia"] == "1024M", got
    assert got[lead + "+1"]["bb/harmonia"] == "3072M", got
    # scontrol shows the same per component
    for j, size in ((lead + "+0", "1G"), (other, "3G")):
        assert tres_dict(job_tres(acct.job(j)))["bb/harmonia"] == size
