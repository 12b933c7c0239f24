# SPDX-License-Identifier: GPL-2.0-or-later
"""libharmonia for applications: harmonia-io, bbio-bench, fallback, coordination.

Every test runs real programs against a real bbmgrd (MUNGE auth, private munged).
"""
import filecmp
import os
import re
import signal
import subprocess
import time

from harmonia_test.wait import WaitTimeout, wait_for
from conftest import (BBIO_BENCH, HARMONIA_IO, clean_env, job_env, register, run_bench)


def phases_of(d, jobid):
    return sorted(d.ok("GET", "/v1/jobs/%s/phases" % jobid)["phases"], key=lambda p: p["id"])


def fcfs_one_node_two_jobs(make_daemon, first, second):
    """A daemon under fcfs with one NVMe buffer node of 1 GB/s (B = b = 1 GB/s) and
    two one-node jobs of this user registered, in this order."""
    one_node = [{"names": "bb1", "capacity": "1TiB", "bandwidth": "1 GB/s", "device": "nvme",
                 "mount": "/mnt/bb", "pool": "nvme"}]
    d = make_daemon(policy={"id": "fcfs"}, nodes=one_node, pools=[{"name": "nvme"}],
                    platform={"node_bandwidth": "1 GB/s", "pfs_bandwidth": "1 GB/s"})
    register(d, first, uid=os.getuid(), nodes=1)
    register(d, second, uid=os.getuid(), nodes=1)
    return d


def first_phase_granted(d, jobid):
    """Polls (200 times, 20 ms apart) until the job's first phase is granted; whether
    it was."""
    for _ in range(200):
        ph = phases_of(d, jobid)
        if ph and ph[0]["state"] == "granted":
            return True
        time.sleep(0.02)
    return False


def settled_phases(d, jobid):
    """The job's phases once none is open: harmonia_phase_end() returns at once and
    its closer thread reports the end to bbmgrd in the background.  If one stays
    open, the phases as they are (the caller's assertions say what is wrong)."""
    try:
        return wait_for(lambda: (lambda ph: ("settled", ph) if all(
            p["state"] not in ("granted", "waiting") for p in ph) else None)(
                phases_of(d, jobid)), "the phases of job %s to close" % jobid,
            interval=0.02)[1]
    except WaitTimeout:
        return phases_of(d, jobid)


def unreachable_lines(stderr):
    return [line for line in stderr.splitlines() if "unreachable" in line]


# ---------------------------------------------------------------- not under Harmonia
def test_not_under_harmonia_is_noop(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(os.urandom(300000))
    env = clean_env()
    p = subprocess.run([HARMONIA_IO, "-v", "--volume", "300KB", "--", "cp", str(src),
                        str(tmp_path / "dst")], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert filecmp.cmp(src, tmp_path / "dst", shallow=False)
    assert "ungated (libharmonia off)" in p.stderr
    assert "unreachable" not in p.stderr
    # exit statuses are the command's
    p = subprocess.run([HARMONIA_IO, "--volume", "1", "--", "sh", "-c", "exit 7"], env=env)
    assert p.returncode == 7
    p = subprocess.run([HARMONIA_IO, "--volume", "1", "--", "sh", "-c", "kill -TERM $$"],
                       env=env)
    assert p.returncode == 128 + signal.SIGTERM
    p = subprocess.run([HARMONIA_IO, "--volume", "1", "--", "/nonexistent/cmd"], env=env,
                       capture_output=True, text=True)
    assert p.returncode == 127 and "No such file" in p.stderr
    p = subprocess.run([HARMONIA_IO, "--", "true"], env=env, capture_output=True, text=True)
    assert p.returncode == 2 and "--volume is required" in p.stderr
    js, err = run_bench(["--phases", "2", "--volume", "1MiB", "--dir", str(tmp_path)], env)
    assert js["harmonia"]["mode"] == "off" and err == ""
    assert not any(p["gated"] for p in js["phase"])
    assert os.listdir(tmp_path) == ["src", "dst"] or sorted(os.listdir(tmp_path)) == ["dst", "src"]


# ---------------------------------------------------------------- harmonia-io
def test_harmonia_io_cp_is_one_phase(job, tmp_path):
    d, jobid = job
    src = tmp_path / "in.dat"
    src.write_bytes(os.urandom(3 << 20))
    p = subprocess.run([HARMONIA_IO, "-v", "--volume", "3MiB", "--", "cp", str(src),
                        str(tmp_path / "out.dat")], env=job_env(d, jobid),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert filecmp.cmp(src, tmp_path / "out.dat", shallow=False)
    assert re.search(r"phase \d+ \(write, 3.00 MiB\) granted after", p.stderr), p.stderr
    ph = phases_of(d, jobid)
    assert len(ph) == 1
    assert ph[0]["state"] == "finished" and ph[0]["granted"] is not None
    assert ph[0]["volume"] == 3 << 20 and ph[0]["bytes"] == 3 << 20
    assert ph[0]["direction"] == "write"
    assert d.ok("GET", "/v1/jobs/%s" % jobid)["phase"] is None
    # the command's failure is the exit status, and the phase is still ended
    p = subprocess.run([HARMONIA_IO, "--volume", "1MiB", "--direction", "read", "--",
                        "sh", "-c", "exit 3"], env=job_env(d, jobid), timeout=30)
    assert p.returncode == 3
    ph = phases_of(d, jobid)
    assert len(ph) == 2 and ph[1]["state"] == "finished" and ph[1]["direction"] == "read"


def test_phase_start_is_gated(make_daemon, tmp_path):
    """fcfs: a second job's phase waits until the first job's phase ends."""
    d = fcfs_one_node_two_jobs(make_daemon, "ja", "jb")
    a = subprocess.Popen([HARMONIA_IO, "--volume", "10GB", "--", "sleep", "1.5"],
                         env=job_env(d, "ja"))
    try:
        if not first_phase_granted(d, "ja"):
            raise AssertionError("job ja never granted")
        t0 = time.time()
        p = subprocess.run([HARMONIA_IO, "-v", "--volume", "1GB", "--", "true"],
                           env=job_env(d, "jb"), capture_output=True, text=True, timeout=30)
        waited = time.time() - t0
        assert p.returncode == 0, p.stderr
        m = re.search(r"granted after ([0-9.]+) s", p.stderr)
        assert m and float(m.group(1)) > 0.8, p.stderr
        assert waited > 0.8
    finally:
        assert a.wait(timeout=30) == 0
    pa, pb = phases_of(d, "ja")[0], phases_of(d, "jb")[0]
    assert pb["granted"] >= pa["finished"] - 0.01, (pa, pb)


# ---------------------------------------------------------------- bbio-bench
def test_bbio_bench_json_and_pacing(make_daemon, tmp_path):
    d = make_daemon(platform={"node_bandwidth": "40 MB/s", "pfs_bandwidth": "80 MB/s"})
    register(d, "bench", uid=os.getuid(), nodes=1)
    js, err = run_bench(["--phases", "3", "--volume", "8MB", "--profile", "balanced",
                         "--bandwidth", "80 MB/s", "--dir", str(tmp_path)],
                        job_env(d, "bench"))
    assert err == ""
    for key in ("program", "profile", "phases", "volume", "compute_per_phase", "direction",
                "direct", "fsync", "dir", "harmonia", "phase", "totals"):
        assert key in js
    assert js["profile"] == "balanced" and js["phases"] == 3
    assert abs(js["compute_per_phase"] - 0.1) < 1e-9
    assert js["harmonia"]["mode"] == "managed" and js["harmonia"]["gated_phases"] == 3
    assert len(js["phase"]) == 3
    for p in js["phase"]:
        for key in ("phase", "compute", "wait", "io", "end", "total", "bytes", "bandwidth",
                    "gated", "phase_id", "granted_bandwidth", "stall"):
            assert key in p
        assert p["gated"] and p["bytes"] == 8000000
        assert p["compute"] >= 0.1
        # paced at the granted 40 MB/s: 8 MB take >= 0.2 s minus the 50 ms burst
        assert p["granted_bandwidth"] == 40e6
        assert p["io"] >= 0.14 and p["bandwidth"] < 60e6
    t = js["totals"]
    for key in ("run_time", "compute_time", "wait_time", "io_time", "stall_time", "bytes",
                "bandwidth", "effective_bandwidth", "rho"):
        assert key in t
    assert t["bytes"] == 24e6 and t["run_time"] >= t["compute_time"] + t["io_time"]
    ph = phases_of(d, "bench")
    assert [p["id"] for p in ph] == [p["phase_id"] for p in js["phase"]]
    assert all(p["state"] == "finished" and p["bytes"] == 8e6 for p in ph)
    assert os.listdir(tmp_path) == []
    # the other profiles and a read run
    js, _ = run_bench(["--phases", "1", "--volume", "1MB", "--profile", "only-io",
                       "--dir", str(tmp_path)], job_env(d, "bench"))
    assert js["compute_per_phase"] == 0
    js, _ = run_bench(["--phases", "2", "--volume", "2MB", "--w-iter", "0.2",
                       "--bandwidth", "20 MB/s", "--direction", "read",
                       "--dir", str(tmp_path)], job_env(d, "bench"))
    assert js["profile"] == "w_iter" and abs(js["compute_per_phase"] - 0.1) < 1e-9
    assert js["direction"] == "read" and js["totals"]["bytes"] == 4e6
    assert phases_of(d, "bench")[-1]["direction"] == "read"


# ---------------------------------------------------------------- fallback
def test_fallback_bbmgrd_killed_mid_job(job, tmp_path):
    """bbmgrd SIGKILLed while the job runs: the job completes, one line on stderr."""
    d, jobid = job
    env = job_env(d, jobid, HARMONIA_FALLBACK_WAIT=1)
    t0 = time.time()
    p = subprocess.Popen([BBIO_BENCH, "--phases", "10", "--volume", "1MiB", "--compute",
                          "0.2", "--dir", str(tmp_path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(500):
            if len([x for x in phases_of(d, jobid) if x["state"] == "finished"]) >= 3:
                break
            time.sleep(0.01)
        else:
            raise AssertionError("no phase finished")
        d.kill(signal.SIGKILL)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    elapsed = time.time() - t0
    assert p.returncode == 0, err
    assert len(unreachable_lines(err)) == 1, err
    line = unreachable_lines(err)[0]
    assert line.startswith("harmonia: bbmgrd unreachable at http://127.0.0.1:%d (" % d.port)
    assert line.endswith("); I/O phases proceed ungated")
    import json
    js = json.loads(out)
    gated = [x["gated"] for x in js["phase"]]
    assert len(gated) == 10 and gated[0] and not gated[-1]
    assert js["harmonia"]["mode"] == "fallback"
    # 10 x 0.2 s of compute, at most one fallback wait (1 s) and change
    assert elapsed < 2.0 + 1.0 + 3.0, elapsed


def test_phase_end_reaches_bbmgrd_after_it_stalled(make_daemon, tmp_path):
    """bbmgrd stops answering in the middle of a paced phase for longer than the
    client's request timeout (SIGSTOP, as a daemon stuck on a slow disk): the job
    goes on ungated with one line on stderr, and once bbmgrd answers again the
    phase it granted is finished with the job's bytes, not left open holding its
    share until limits.grant_timeout."""
    import select
    d = make_daemon(platform={"node_bandwidth": "20 MB/s", "pfs_bandwidth": "20 MB/s"})
    register(d, "stall", uid=os.getuid(), nodes=1)
    env = job_env(d, "stall", HARMONIA_FALLBACK_WAIT=1)
    p = subprocess.Popen([BBIO_BENCH, "--phases", "1", "--volume", "64MiB", "--compute", "0",
                          "--dir", str(tmp_path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = ""
    try:
        assert first_phase_granted(d, "stall"), phases_of(d, "stall")
        d.proc.send_signal(signal.SIGSTOP)
        try:
            # the paced write's grant refresh times out: the phase goes on ungated
            deadline = time.monotonic() + 60
            while "unreachable" not in err and time.monotonic() < deadline:
                if select.select([p.stderr], [], [], 1)[0]:
                    line = p.stderr.readline()
                    if not line:
                        break
                    err += line
        finally:
            d.proc.send_signal(signal.SIGCONT)
        out, rest = p.communicate(timeout=60)
        err += rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert len(unreachable_lines(err)) == 1, err
    ph = settled_phases(d, "stall")
    assert [(x["state"], x["bytes"]) for x in ph] == [("finished", 64 << 20)], ph


def test_fallback_unreachable_from_start(tmp_path, munge):
    from harmonia_test import daemon as daemon_fixtures
    port = daemon_fixtures.free_port()
    env = clean_env()
    env.update(HARMONIA_URL="http://127.0.0.1:%d" % port, HARMONIA_JOBID="nojob",
               HARMONIA_MUNGE_SOCKET=munge.socket, HARMONIA_FALLBACK_WAIT="0.5")
    t0 = time.time()
    js, err = run_bench(["--phases", "4", "--volume", "1MiB", "--profile", "only-io",
                         "--dir", str(tmp_path)], env)
    assert time.time() - t0 < 3
    assert len(unreachable_lines(err)) == 1, err
    assert js["harmonia"]["mode"] == "fallback"
    assert not any(x["gated"] for x in js["phase"])
    # harmonia-io too, with the command's status
    p = subprocess.run([HARMONIA_IO, "--volume", "1MiB", "--", "sh", "-c", "exit 5"],
                       env=env, capture_output=True, text=True, timeout=10)
    assert p.returncode == 5 and len(unreachable_lines(p.stderr)) == 1


def test_refused_phase_proceeds(daemon, tmp_path):
    """A job bbmgrd does not know (404): phases proceed, one line says why."""
    js, err = run_bench(["--phases", "3", "--volume", "1MiB", "--profile", "only-io",
                         "--dir", str(tmp_path)], job_env(daemon, "unknown-job"))
    lines = [x for x in err.splitlines() if x.startswith("harmonia:")]
    assert len(lines) == 1 and "refused" in lines[0] and "HTTP 404" in lines[0], err
    assert not any(x["gated"] for x in js["phase"])


# ---------------------------------------------------------------- coordination
def test_processes_of_a_job_share_one_phase(make_daemon, tmp_path):
    """4 processes of one job: one open phase at a time, all proceed, bytes add up."""
    d = make_daemon(platform={"node_bandwidth": "200 MB/s", "pfs_bandwidth": "400 MB/s"})
    register(d, "mpi", uid=os.getuid(), nodes=1)
    env = job_env(d, "mpi", HARMONIA_NTASKS=4)
    procs = []
    for rank in range(4):
        e = dict(env, SLURM_PROCID=str(rank))
        procs.append(subprocess.Popen(
            [BBIO_BENCH, "--phases", "5", "--volume", "4MB", "--compute", "0.03",
             "--dir", str(tmp_path)], env=e, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    import json
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert err == "", err
        results.append(json.loads(out))
    assert all(x["gated"] for r in results for x in r["phase"])
    joined = sum(x["joined"] for r in results for x in r["phase"])
    ph = phases_of(d, "mpi")
    assert all(x["state"] == "finished" for x in ph)
    # one open phase at a time: each phase was asked for after the previous one ended
    for a, b in zip(ph, ph[1:]):
        assert b["requested"] >= a["finished"] - 1e-3, (a, b)
    # every process-phase is in exactly one bbmgrd phase: the bytes add up
    assert sum(x["bytes"] for x in ph) == 4 * 5 * 4e6
    assert len(ph) + joined == 4 * 5
    assert joined > 0       # they did share phases
    assert d.ok("GET", "/v1/jobs/mpi")["phase"] is None


def test_nodes_of_a_job_share_one_phase(make_daemon, tmp_path):
    """A job on two nodes (two count files, as two nodes' /dev/shm, and two node
    names), node a with two processes: at each of 3 iterations the three start
    together (a barrier on files, as MPI ranks at a collective) and run one phase
    each (harmonia-io around a sleep: 0.8 s on node a, 1.5 s on node b).  bbmgrd
    sees one phase per iteration, with the bytes of both nodes, open until node b's
    process is done."""
    d = make_daemon()
    register(d, "mpi2", uid=os.getuid(), nodes=2)
    sync = tmp_path / "sync"
    sync.mkdir()
    ranks = [("na", "a0", "3MB", 0.8), ("na", "a1", "3MB", 0.8), ("nb", "b0", "12MB", 1.5)]
    procs = []
    for node, me, vol, secs in ranks:
        cdir = tmp_path / ("coord-" + node)
        cdir.mkdir(exist_ok=True)
        env = job_env(d, "mpi2", HARMONIA_NTASKS=3, HARMONIA_NODE=node,
                      HARMONIA_COORD_DIR=str(cdir))
        others = " ".join(r[1] for r in ranks if r[1] != me)
        script = ('for i in 1 2 3; do touch %(s)s/%(me)s.$i; '
                  'for o in %(others)s; do while [ ! -e %(s)s/$o.$i ]; do sleep 0.01; done; '
                  'done; %(io)s --volume %(vol)s -- sleep %(secs)s || exit 9; done'
                  % dict(s=sync, me=me, others=others, io=HARMONIA_IO, vol=vol, secs=secs))
        procs.append(subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err
    ph = settled_phases(d, "mpi2")
    assert [x["state"] for x in ph] == ["finished"] * 3, ph
    # each phase holds the bytes of both nodes: 12 MB from b, 2 x 3 MB from a
    assert [x["bytes"] for x in ph] == [18e6] * 3, ph
    # and stayed open while node b's process ran (node a's were done after 0.8 s)
    assert all(x["finished"] - x["granted"] >= 1.4 for x in ph), ph
    assert d.ok("GET", "/v1/jobs/mpi2")["phase"] is None


def test_node_done_early_waits_for_the_next_phase(make_daemon, tmp_path):
    """Two nodes without a barrier (bbio-bench, 3 phases each, node b 4 times node
    a's bytes at the same pace): node a, done early, never rejoins a phase it left
    nor finishes one node b is in; every phase ends with node b's bytes in it, and
    every process-phase is in exactly one bbmgrd phase."""
    import json
    d = make_daemon(platform={"node_bandwidth": "24 MB/s", "pfs_bandwidth": "24 MB/s"})
    register(d, "mpi3", uid=os.getuid(), nodes=2)
    procs = []
    for node, nproc, vol in (("nb", 1, "12MB"), ("na", 2, "3MB")):
        cdir, ddir = tmp_path / ("coord-" + node), tmp_path / ("data-" + node)
        cdir.mkdir()
        ddir.mkdir()
        env = job_env(d, "mpi3", HARMONIA_NTASKS=3, HARMONIA_NODE=node,
                      HARMONIA_COORD_DIR=str(cdir))
        for rank in range(nproc):
            procs.append(subprocess.Popen(
                [BBIO_BENCH, "--phases", "3", "--volume", vol, "--compute", "0.02",
                 "--dir", str(ddir)], env=dict(env, SLURM_PROCID=str(rank)),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    joined = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err
        r = json.loads(out)
        assert all(x["gated"] for x in r["phase"])
        joined += sum(x["joined"] for x in r["phase"])
        # a process's phases are distinct bbmgrd phases
        ids = [x["phase_id"] for x in r["phase"]]
        assert len(set(ids)) == 3, r["phase"]
    ph = settled_phases(d, "mpi3")
    assert all(x["state"] == "finished" for x in ph), ph
    assert sum(x["bytes"] for x in ph) == 3 * 18e6, ph
    assert len(ph) + joined == 3 * 3, ph
    # node b's 12 MB are in every phase it was in: no phase closed under it
    assert sum(1 for x in ph if x["bytes"] >= 12e6) == 3, ph


def test_nodes_ask_for_the_whole_phase(make_daemon, tmp_path):
    """bbio-bench on two nodes, each moving its 3 MB of every phase, with
    --phase-volume 6MB: bbmgrd schedules phases of the job's 6 MB (whichever
    node asks first), and each ends with the 6 MB of both nodes."""
    import json
    d = make_daemon(platform={"node_bandwidth": "60 MB/s", "pfs_bandwidth": "60 MB/s"})
    register(d, "whole", uid=os.getuid(), nodes=2)
    procs = []
    for node in ("na", "nb"):
        cdir, ddir = tmp_path / ("coord-" + node), tmp_path / ("data-" + node)
        cdir.mkdir()
        ddir.mkdir()
        env = job_env(d, "whole", HARMONIA_NTASKS=2, HARMONIA_NODE=node,
                      HARMONIA_COORD_DIR=str(cdir))
        procs.append(subprocess.Popen(
            [BBIO_BENCH, "--phases", "2", "--volume", "3MB", "--phase-volume", "6MB",
             "--compute", "0.02", "--dir", str(ddir)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err
        assert json.loads(out)["phase_volume"] == 6e6
    ph = settled_phases(d, "whole")
    assert all(x["state"] == "finished" and x["volume"] == 6e6 for x in ph), ph
    assert sum(x["bytes"] for x in ph) == 2 * 6e6, ph


# ---------------------------------------------------------------- the C API itself
def libharmonia():
    """libharmonia.so through ctypes (the calls release the GIL: threads are real)."""
    import ctypes
    from conftest import LIBDIR
    lib = ctypes.CDLL(os.path.join(LIBDIR, ".libs", "libharmonia.so"))
    lib.harmonia_init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    for f in ("harmonia_phase_begin", "harmonia_phase_try_begin"):
        getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                                    ctypes.c_void_p]
    lib.harmonia_phase_end.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.harmonia_finalize.argtypes = [ctypes.c_void_p]
    lib.harmonia_mode.argtypes = [ctypes.c_void_p]
    return lib


def grant_buf():
    import ctypes
    return ctypes.create_string_buffer(8192)


def grant_fields(buf):
    import struct
    phase_id, gated, joined = struct.unpack_from("<Qii", buf.raw, 0)
    return phase_id, gated, joined


def _asan_runtime():
    """The ASan runtime libharmonia.so is linked with (--enable-sanitizers), if any."""
    import re
    from conftest import LIBDIR
    out = subprocess.run(["ldd", os.path.join(LIBDIR, ".libs", "libharmonia.so")],
                         capture_output=True, text=True).stdout
    m = re.search(r"libasan\.so\S*\s*=>\s*(\S+)", out)
    return m.group(1) if m else None


def _reran_with_asan(test):
    """An instrumented library (--enable-sanitizers) cannot be dlopen()ed into an
    uninstrumented python unless the ASan runtime comes first: run the test again in
    a child python with the runtime preloaded (leak checking off: python's own
    allocations are not ours to judge).  True when it was run there (and passed)."""
    import sys
    asan = _asan_runtime()
    if not asan or "libasan" in os.environ.get("LD_PRELOAD", ""):
        return False
    env = dict(os.environ, LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0:halt_on_error=1")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        __file__ + "::" + test],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return True


def test_try_begin_and_threads(make_daemon, monkeypatch):
    """Non-blocking begin waits behind another job (fcfs) then starts; a queued
    phase is cancelled by end; threads of one process share the process's phase."""
    import ctypes
    import sys
    import threading
    if _reran_with_asan("test_try_begin_and_threads"):
        return
    d = fcfs_one_node_two_jobs(make_daemon, "holder", "capi")
    for k, v in job_env(d, "capi").items():
        if k.startswith("HARMONIA_"):
            monkeypatch.setenv(k, v)
    lib = libharmonia()
    h = ctypes.c_void_p()
    assert lib.harmonia_init(ctypes.byref(h), None) == 0
    assert lib.harmonia_mode(h) == 1                    # managed
    g = grant_buf()
    hold = subprocess.Popen([HARMONIA_IO, "--volume", "10GB", "--", "sleep", "1"],
                            env=job_env(d, "holder"))
    try:
        first_phase_granted(d, "holder")
        # queued, then cancelled by end
        assert lib.harmonia_phase_try_begin(h, 1 << 30, 0, g) == 1      # HARMONIA_WAIT
        assert phases_of(d, "capi")[-1]["state"] == "waiting"
        assert lib.harmonia_phase_end(h, 0) == 0
        assert phases_of(d, "capi")[-1]["state"] == "cancelled"
        # queued, polled until it may start
        assert lib.harmonia_phase_try_begin(h, 1 << 30, 0, g) == 1
        t0 = time.time()
        while lib.harmonia_phase_try_begin(h, 1 << 30, 0, g) == 1:
            assert time.time() - t0 < 10
            time.sleep(0.05)
        pid, gated, joined = grant_fields(g)
        assert gated == 1 and joined == 0 and pid == phases_of(d, "capi")[-1]["id"]
        assert hold.poll() is not None or phases_of(d, "holder")[0]["state"] == "finished"
        assert lib.harmonia_phase_end(h, 1 << 30) == 0
    finally:
        hold.wait(timeout=30)
    assert settled_phases(d, "capi")[-1]["state"] == "finished"

    # 4 threads, 3 rounds each, one handle: each round of overlapping threads is
    # one phase at bbmgrd; every begin/end pair is balanced
    before = len(phases_of(d, "capi"))
    errors = []
    barrier = threading.Barrier(4)

    def worker():
        try:
            for _ in range(3):
                barrier.wait()
                gb = grant_buf()
                assert lib.harmonia_phase_begin(h, 1 << 20, 0, gb) == 0
                assert grant_fields(gb)[1] == 1
                time.sleep(0.05)
                assert lib.harmonia_phase_end(h, 1 << 20) == 0
        except Exception as e:          # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=30)
    assert not errors, errors
    ph = settled_phases(d, "capi")[before:]
    assert 3 <= len(ph) <= 12 and all(p["state"] == "finished" for p in ph)
    assert sum(p["bytes"] for p in ph) == 12 * (1 << 20)
    assert lib.harmonia_phase_end(h, 0) == -1           # no phase: EINVAL
    lib.harmonia_finalize(h)


def test_phase_end_in_background_keeps_order(daemon, monkeypatch):
    """harmonia_phase_end() returns before bbmgrd has the report (its closer thread
    sends it); a begin right after must still open a new phase, never join the old
    one, and each phase is finished with its own bytes; HARMONIA_SYNC_END=1 reports
    before returning."""
    import ctypes
    if _reran_with_asan("test_phase_end_in_background_keeps_order"):
        return
    for sync in ("0", "1"):
        job = "order" + sync
        register(daemon, job, uid=os.getuid(), nodes=1)
        for k, v in job_env(daemon, job).items():
            if k.startswith("HARMONIA_"):
                monkeypatch.setenv(k, v)
        monkeypatch.setenv("HARMONIA_SYNC_END", sync)
        lib = libharmonia()
        h = ctypes.c_void_p()
        assert lib.harmonia_init(ctypes.byref(h), None) == 0
        ids = []
        for i in range(40):
            g = grant_buf()
            assert lib.harmonia_phase_begin(h, 4096, 0, g) == 0
            pid, gated, joined = grant_fields(g)
            assert gated == 1 and joined == 0
            ids.append(pid)
            assert lib.harmonia_phase_end(h, 1000 + i) == 0
            if sync == "1":
                assert phases_of(daemon, job)[-1]["state"] == "finished"
        lib.harmonia_finalize(h)
        # finalize waited for the last report
        ph = phases_of(daemon, job)
        assert [p["id"] for p in ph] == ids and len(set(ids)) == 40
        assert all(p["state"] == "finished" for p in ph)
        assert [p["bytes"] for p in ph] == [1000 + i for i in range(40)]


def _auth_counts(d):
    return (d.metric('harmonia_api_auth_total{scheme="munge"}'),
            d.metric('harmonia_api_auth_total{scheme="session"}'))


def test_connection_session_and_its_renewal(daemon, monkeypatch):
    """libharmonia authenticates its connection once with MUNGE and the next
    requests with the session token (doc/api.md "Sessions"); when bbmgrd restarts
    the token is refused on the new connection and the request is sent again with a
    credential, so the job stays managed; HARMONIA_NO_SESSION=1 sends a credential
    on every request."""
    import ctypes
    if _reran_with_asan("test_connection_session_and_its_renewal"):
        return
    register(daemon, "sess", uid=os.getuid(), nodes=1)
    for k, v in job_env(daemon, "sess").items():
        if k.startswith("HARMONIA_"):
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("HARMONIA_SYNC_END", "1")
    lib = libharmonia()

    def phases(h, n):
        for i in range(n):
            g = grant_buf()
            assert lib.harmonia_phase_begin(h, 4096, 0, g) == 0
            assert grant_fields(g)[1] == 1          # gated: bbmgrd granted it
            assert lib.harmonia_phase_end(h, 4096) == 0

    h = ctypes.c_void_p()
    assert lib.harmonia_init(ctypes.byref(h), None) == 0
    m0, s0 = _auth_counts(daemon)
    phases(h, 20)
    m1, s1 = _auth_counts(daemon)
    assert m1 - m0 <= 1 and s1 - s0 >= 39, (m0, s0, m1, s1)
    # bbmgrd restarts (its state survives): the old token means nothing there
    daemon.restart()
    phases(h, 5)
    m2, s2 = _auth_counts(daemon)
    assert m2 >= 1 and s2 >= 9, (m2, s2)
    assert daemon.log_text().count("session token does not match") == 0
    lib.harmonia_finalize(h)
    # without sessions: one credential per request
    monkeypatch.setenv("HARMONIA_NO_SESSION", "1")
    h = ctypes.c_void_p()
    assert lib.harmonia_init(ctypes.byref(h), None) == 0
    m3, s3 = _auth_counts(daemon)
    phases(h, 5)
    m4, s4 = _auth_counts(daemon)
    assert m4 - m3 >= 10 and s4 == s3, (m3, s3, m4, s4)
    lib.harmonia_finalize(h)
    ph = phases_of(daemon, "sess")
    assert len(ph) == 30 and all(p["state"] == "finished" for p in ph)


def test_reused_job_id_does_not_join_a_dead_jobs_phase(make_daemon, tmp_path):
    """Job ids start again at 1 on a new cluster (and after the controller's state is
    lost): a job whose id an earlier job had, on the same node, must not take the
    earlier job's phase, left open in the processes' shared file by a process that
    was killed, for its own.  The plugin gives each run of a job its start time
    (HARMONIA_JOB_START), and the shared files are named by it."""
    coord = str(tmp_path / "coord")
    d1 = make_daemon()
    register(d1, "5", uid=os.getuid(), nodes=1)
    env1 = job_env(d1, "5", HARMONIA_COORD_DIR=coord, HARMONIA_JOB_START="1000")
    p = subprocess.Popen([HARMONIA_IO, "--volume", "1MiB", "--", "sleep", "60"], env=env1)
    try:
        assert first_phase_granted(d1, "5")
    finally:
        p.kill()
        p.wait()
    assert phases_of(d1, "5")[0]["state"] == "granted"      # left open by the kill
    # the next cluster: a new bbmgrd, the same job id, the same node's shared files
    d2 = make_daemon()
    register(d2, "5", uid=os.getuid(), nodes=1)
    env2 = job_env(d2, "5", HARMONIA_COORD_DIR=coord, HARMONIA_JOB_START="2000")
    for _ in range(2):
        q = subprocess.run([HARMONIA_IO, "--volume", "1MiB", "--", "true"], env=env2,
                           capture_output=True, text=True, timeout=30)
        assert q.returncode == 0, q.stderr
    ph = settled_phases(d2, "5")
    assert [x["state"] for x in ph] == ["finished", "finished"], ph
    assert all(x["granted"] is not None for x in ph), ph
