# SPDX-License-Identifier: GPL-2.0-or-later
"""#BB_HARMONIA directives judged by the real slurmctld with Harmonia's plugins:
valid requests are normalised and run, bad ones are refused at sbatch time with
the exact message the user reads, jobs without a request are untouched."""
import os

import pytest

from conftest import script

REFUSED = "sbatch: error: Batch job submission failed: Burst Buffer request invalid"


def test_job_without_request_is_untouched(cluster):
    rc, jobid, _, err = cluster.sbatch(None, "--wrap", "echo plain")
    assert rc == 0, err
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}) == "COMPLETED"
    job = cluster.job(jobid)
    assert job.get("BurstBuffer", "(null)") in ("(null)", "")
    assert job.get("BurstBufferState", "(null)") in ("(null)", "")


def test_valid_request_is_normalised_and_completes(cluster, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "data").write_text("x" * 100)
    rc, jobid, _, err = cluster.sbatch(script(
        "jobbuffer capacity=200GiB nodes=2",
        "iohints w_iter=10m io_volume=50GiB phases=20",
        "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
        body="echo ran"))
    assert rc == 0, err
    job = cluster.job(jobid)
    assert job["BurstBuffer"].splitlines() == [
        "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2",
        "#BB_HARMONIA iohints w_iter=600s io_volume=50GiB phases=20 io=write priority=1",
        "#BB_HARMONIA stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
    ]
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}) == "COMPLETED"
    assert cluster.job(jobid)["BurstBufferState"] == "complete"
    with open(os.path.join(cluster.workdir, "slurm-%s.out" % jobid)) as f:
        assert f.read() == "ran\n"


def test_bb_option_and_script_are_merged(cluster):
    rc, jobid, _, err = cluster.sbatch(
        script("jobbuffer capacity=2000MB pool=nvme"),
        "--bb", "iohints w_iter=01:30 io_volume=1.5GiB io=read priority=7")
    assert rc == 0, err
    assert cluster.job(jobid)["BurstBuffer"].splitlines() == [
        "#BB_HARMONIA jobbuffer capacity=2GB pool=nvme",
        "#BB_HARMONIA iohints w_iter=90s io_volume=1536MiB io=read priority=7",
    ]
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}) == "COMPLETED"


def test_hints_only_job(cluster):
    rc, jobid, _, err = cluster.sbatch(None, "--bb", "#BB_HARMONIA iohints w_iter=2h io_volume=1TB",
                                       "--wrap", "true")
    assert rc == 0, err
    assert cluster.job(jobid)["BurstBuffer"] == \
        "#BB_HARMONIA iohints w_iter=7200s io_volume=1TB io=write priority=1"
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}) == "COMPLETED"


# (directives in the script, extra sbatch options, the message the user reads)
BAD = [
    (["jobbuffer capacity=0GiB"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity must be greater than zero"),
    (["jobbuffer capacity=10"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity: size '10' has no unit (write e.g. '10GiB' or '10B')"),
    (["jobbuffer"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity is missing (write capacity=...)"),
    (["jobbuffer capacity="], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity has no value (write capacity=...)"),
    (["jobbuffer capacity=1GiB foo=bar"], [],
     "#BB_HARMONIA line 3: jobbuffer: unknown key 'foo' (jobbuffer takes capacity, nodes, pool)"),
    (["frobnicate x=1"], [],
     "#BB_HARMONIA line 3: unknown directive 'frobnicate' (expected one of jobbuffer, iohints, "
     "stage_in, stage_out, create_persistent, use_persistent, destroy_persistent)"),
    (["jobbuffer capacity=99999999999EiB"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity: size '99999999999EiB' is too large (sizes must be below 16 EiB)"),
    (["jobbuffer capacity=2XB"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity: unknown size unit 'XB' in '2XB' (use B, KB, MB, GB, "
     "TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)"),
    (["jobbuffer capacity=1GiB nodes=0"], [],
     "#BB_HARMONIA line 3: jobbuffer: nodes '0' is not a whole number from 1 to 100000"),
    (["jobbuffer capacity=1GiB capacity=2GiB"], [],
     "#BB_HARMONIA line 3: jobbuffer: capacity is given twice"),
    (["iohints w_iter=10 io_volume=1GiB"], [],
     "#BB_HARMONIA line 3: iohints: w_iter: duration '10' has no unit (write e.g. '10s', '10m' or '10h')"),
    (["iohints w_iter=10m"], [],
     "#BB_HARMONIA line 3: iohints: io_volume is missing (write io_volume=...)"),
    (["iohints w_iter=10m io_volume=1GiB io=sideways"], [],
     "#BB_HARMONIA line 3: iohints: io 'sideways' is not write, read or readwrite"),
    (["iohints w_iter=10m io_volume=1GiB priority=11"], [],
     "#BB_HARMONIA line 3: iohints: priority '11' is not a whole number from 1 to 10"),
    (["jobbuffer capacity=1GiB", "iohints w_iter=1m io_volume=2GiB"], [],
     "#BB_HARMONIA: iohints: io_volume 2GiB is larger than the jobbuffer capacity 1GiB: "
     "one I/O phase must fit in the buffer"),
    (["jobbuffer capacity=1GiB", "jobbuffer capacity=2GiB"], [],
     "#BB_HARMONIA line 4: jobbuffer: a second jobbuffer directive (only one per job)"),
    (["jobbuffer capacity=1GiB", "stage_in source=relative/in destination=$HARMONIA_BB/in"], [],
     "#BB_HARMONIA line 4: stage_in: source 'relative/in' is a relative path: give an absolute path"),
    (["jobbuffer capacity=1GiB", "stage_in source=/nonexistent/harmonia/in destination=$HARMONIA_BB/in"], [],
     "#BB_HARMONIA line 4: stage_in: source '/nonexistent/harmonia/in' does not exist "
     "(No such file or directory)"),
    (["jobbuffer capacity=1GiB", "stage_in source=/etc destination=/tmp/in"], [],
     "#BB_HARMONIA line 4: stage_in: destination '/tmp/in' must be inside the job buffer: "
     "start it with $HARMONIA_BB/"),
    (["jobbuffer capacity=1GiB", "stage_out source=$HARMONIA_BB/../x destination=/tmp/out"], [],
     "#BB_HARMONIA line 4: stage_out: source '$HARMONIA_BB/../x' may not contain '..'"),
    (["stage_in source=/etc destination=$HARMONIA_BB/etc"], [],
     "#BB_HARMONIA line 3: stage_in needs a buffer: add a jobbuffer or use_persistent directive"),
    (["jobbuffer capacity=1GiB", "stage_out source=$HARMONIA_BB/o destination=/nonexistent/dir/o"], [],
     "#BB_HARMONIA line 4: stage_out: the directory of destination '/nonexistent/dir/o' does not exist"),
    (["jobbuffer capacity=1GiB pool=nosuch"], [],
     "#BB_HARMONIA: jobbuffer: pool 'nosuch' does not exist"),
    (["create_persistent name=9lives capacity=1GiB"], [],
     "#BB_HARMONIA line 3: create_persistent: name '9lives' is not a valid buffer name (a letter, "
     "then letters, digits, '_', '-' or '.', at most 63)"),
    ([], ["--bb", "jobbuffer capacity=1GiB;jobbuffer capacity=2GiB"],
     "#BB_HARMONIA --bb item 2: jobbuffer: a second jobbuffer directive (only one per job)"),
    ([], ["--bb", 'stage_in source="/tmp/a b destination=$HARMONIA_BB/x'],
     "#BB_HARMONIA --bb item 1: stage_in: source: the quoted value has no closing '\"'"),
]


@pytest.mark.parametrize("directives,opts,message", BAD,
                         ids=["bad%02d" % i for i in range(len(BAD))])
def test_bad_request_is_refused_at_submit(cluster, directives, opts, message):
    before = set(cluster.job_ids())
    rc, jobid, out, err = cluster.sbatch(script(*directives), *opts)
    assert rc != 0, "accepted as job %s" % jobid
    assert err.splitlines() == ["sbatch: error: " + message, REFUSED]
    assert set(cluster.job_ids()) - before == set()
