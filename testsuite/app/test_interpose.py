# SPDX-License-Identifier: GPL-2.0-or-later
"""The interposer (libharmonia-preload.so) under unmodified programs.

Real bbmgrd and munged per test; the programs are coreutils (dd, cp), the system's
Python and bbio-bench, run with LD_PRELOAD as the burst_buffer plugin sets it.
What is asserted is what bbmgrd's API shows (the phases it saw, their bytes and
grants), what the programs print and return, and their run time under a grant
(a measurement window: the pacing is the behaviour).
"""
import json
import os
import subprocess
import time

import pytest

from conftest import BBIO_BENCH, LIBDIR, SLURM_UID, job_env, register
from harmonia_test.daemon import BUILDDIR, USER1
from harmonia_test.wait import wait_for

PRELOAD = os.path.join(LIBDIR, ".libs", "libharmonia-preload.so")
PYTHON = "/usr/bin/python3"


def phases_of(d, jobid):
    return sorted(d.ok("GET", "/v1/jobs/%s/phases" % jobid)["phases"], key=lambda p: p["id"])


def one_node(bw="1 GB/s"):
    return dict(platform={"node_bandwidth": bw, "pfs_bandwidth": bw})


def preload_env(d, jobid, bb, **extra):
    env = job_env(d, jobid, HARMONIA_BB=str(bb), LD_PRELOAD=PRELOAD, **extra)
    # bbio-bench and Python under the sanitizer build: the runtime need not come first
    env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    return env


def log_lines(path, word):
    if not os.path.exists(path):
        return []
    return [line.split() for line in open(path) if line.startswith(word + " ")]


def run_python_phases(make_daemon, jobid, bb, prog):
    """Run prog under the interposer as job jobid of a new bbmgrd (one node);
    bbmgrd's phases of the job, every one finished."""
    d = make_daemon(**one_node())
    register(d, jobid, uid=os.getuid(), nodes=1)
    p = subprocess.run([PYTHON, "-c", prog], env=preload_env(d, jobid, bb),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ph = phases_of(d, jobid)
    assert all(x["state"] == "finished" for x in ph), ph
    return ph


@pytest.fixture
def bb(tmp_path):
    p = tmp_path / "bb"
    p.mkdir()
    return p


def test_dd_loop_phases_found_and_granted(make_daemon, bb, tmp_path):
    """A shell loop of dd into the buffer: bbmgrd sees one granted phase per dd, with
    the bytes dd wrote; the data are dd's; a dd to another directory is not seen."""
    d = make_daemon(**one_node())
    register(d, "loop", uid=os.getuid(), nodes=1, user="alice", name="ddloop")
    log = tmp_path / "interpose.log"
    env = preload_env(d, "loop", bb, HARMONIA_INTERPOSE_LOG=log)
    other = tmp_path / "other"
    other.mkdir()
    script = ('for i in 1 2 3 4; do sleep 0.3; dd if=/dev/zero of="$HARMONIA_BB/f$i" bs=1M '
              'count=8 status=none || exit 9; done; '
              'dd if=/dev/zero of=%s/g bs=1M count=8 status=none' % other)
    p = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    ph = phases_of(d, "loop")
    assert len(ph) == 4, ph
    assert all(x["state"] == "finished" and x["bytes"] == 8 << 20 for x in ph), ph
    assert all(x["direction"] == "write" for x in ph)
    begins = log_lines(log, "begin")
    assert len(begins) == 4 and all(b[b.index("gated") + 1] == "1" for b in begins), begins
    for i in range(1, 5):
        assert os.path.getsize(bb / ("f%d" % i)) == 8 << 20
    # the processes of the job learned together: the last dd knows the period
    ends = log_lines(log, "end")
    assert float(ends[-1][ends[-1].index("w_iter") + 1]) > 0.3
    # what bbmgrd learned from the phases the interposer asked for is kept for the
    # user's next job of that name (job_submit's learned defaults)
    d.ok("DELETE", "/v1/jobs/loop", uid=SLURM_UID)
    h = d.ok("GET", "/v1/history?user=alice&name=ddloop", uid=SLURM_UID)
    starts = [p["requested"] for p in ph]
    measured = (starts[-1] - starts[0]) / 3
    assert h["jobs"] == 1 and abs(h["w_iter"] - measured) <= 0.1 * measured, (h, measured)


BBMGR = os.path.join(BUILDDIR, "bbmgr", "bbmgr")


def bbmgr_job(d, jobid):
    """bbmgr job ID as its owner types it: the job's JSON."""
    p = subprocess.run([BBMGR, "job", jobid, "--url", "http://127.0.0.1:%d" % d.port,
                        "--munge-socket", d.munge.socket], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_learned_values_shown_while_the_dd_loop_runs(make_daemon, bb, tmp_path):
    """An unmodified dd loop under the interposer: while it still runs, bbmgr job ID
    shows what bbmgrd learned from its phases so far (w_iter between the phases'
    requests, volume per phase, phases), and bbmgr jobs says it on the job's line."""
    d = make_daemon(**one_node())
    register(d, "lrn", uid=os.getuid(), nodes=1, user="alice", name="ddlearn")
    env = preload_env(d, "lrn", bb)
    stop = tmp_path / "stop"
    script = ('i=0; while [ ! -e %s ] && [ $i -lt 200 ]; do i=$((i+1)); sleep 0.4; '
              'dd if=/dev/zero of="$HARMONIA_BB/f$i" bs=1M count=4 status=none || exit 9; '
              'done' % stop)
    proc = subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: d.ok("GET", "/v1/jobs/lrn")["phases_done"] >= 4, timeout=60,
                 what="four phases of the loop")
        j = bbmgr_job(d, "lrn")
        assert proc.poll() is None, "the loop ended: the values were not seen while it ran"
        ph = [p for p in phases_of(d, "lrn") if p["state"] == "finished"]
        learned = j["learned"]
        n = learned["phases"]
        assert n >= 4 and n == j["phases_done"], j
        assert learned["io_volume"] == 4 << 20, j
        starts = [p["requested"] for p in ph[:n]]
        measured = (starts[-1] - starts[0]) / (n - 1)
        assert abs(learned["w_iter"] - measured) <= 0.01 * measured + 1e-3, (j, measured)
        assert learned["w_iter"] > 0.4, j
        out = subprocess.run([BBMGR, "jobs", "--url", "http://127.0.0.1:%d" % d.port,
                              "--munge-socket", d.munge.socket], capture_output=True,
                             text=True, timeout=30).stdout
        line = [x for x in out.splitlines() if x.startswith("lrn ")]
        assert line and "w_iter=" in line[0] and "volume=4.00MiB" in line[0], out
        assert "LEARNED" in out.splitlines()[0], out
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == "", err
    # the same figures go to the history that gives the next job its defaults
    last = bbmgr_job(d, "lrn")["learned"]
    d.ok("DELETE", "/v1/jobs/lrn", uid=SLURM_UID)
    h = d.ok("GET", "/v1/history?user=alice&name=ddlearn", uid=SLURM_UID)
    assert h["jobs"] == 1 and h["io_volume"] == last["io_volume"], (h, last)
    assert abs(h["w_iter"] - last["w_iter"]) <= 1e-6 * last["w_iter"], (h, last)
    ended = bbmgr_job(d, "lrn")
    assert ended["state"] == "ended" and ended["learned"] == last, ended


def test_python_loop_w_iter_learned(make_daemon, bb, tmp_path):
    """One Python process computing then writing, 6 times (w_iter about 1.2 s): six
    phases at bbmgrd, each with its bytes; the estimated w_iter within 10% of the
    measured interval between the phases' starts."""
    d = make_daemon(**one_node())
    register(d, "py", uid=os.getuid(), nodes=1)
    log = tmp_path / "interpose.log"
    env = preload_env(d, "py", bb, HARMONIA_INTERPOSE_LOG=log)
    prog = ("import os, time\n"
            "buf = b'x' * (1 << 20)\n"
            "for i in range(6):\n"
            "    time.sleep(1.0)\n"
            "    with open(os.path.join(os.environ['HARMONIA_BB'], 'ck%d' % i), 'wb') as f:\n"
            "        for k in range(4):\n"
            "            f.write(buf)\n"
            "        f.flush()\n"
            "        os.fsync(f.fileno())\n")
    p = subprocess.run([PYTHON, "-c", prog], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    ph = phases_of(d, "py")
    assert len(ph) == 6, ph
    assert all(x["state"] == "finished" and x["bytes"] == 4 << 20 for x in ph), ph
    ends = log_lines(log, "end")
    starts = [float(e[1]) for e in ends]
    measured = (starts[-1] - starts[0]) / (len(starts) - 1)
    est = float(ends[-1][ends[-1].index("w_iter") + 1])
    assert abs(est - measured) <= 0.1 * measured, (est, measured)


def run_timed(args, env):
    t0 = time.monotonic()
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return time.monotonic() - t0


def test_paced_at_the_grant(make_daemon, bb, tmp_path):
    """A lone dd of 24 MB: under a 12 MB/s grant it takes about 2 s, under 24 MB/s
    about 1 s (in proportion to the grant), without the interposer much less."""
    times = {}
    for bw in (12, 24):
        d = make_daemon(**one_node("%d MB/s" % bw))
        register(d, "pace", uid=os.getuid(), nodes=1)
        log = tmp_path / ("log%d" % bw)
        env = preload_env(d, "pace", bb, HARMONIA_INTERPOSE_LOG=log)
        args = ["dd", "if=/dev/zero", "of=%s/f" % bb, "bs=1M", "count=24", "status=none"]
        times[bw] = run_timed(args, env)
        ph = phases_of(d, "pace")
        assert len(ph) == 1 and ph[0]["state"] == "finished", ph
        begins = log_lines(log, "begin")
        assert float(begins[0][begins[0].index("rate") + 1]) == bw * 1e6, begins
        d.stop()
    free = run_timed(["dd", "if=/dev/zero", "of=%s/f" % bb, "bs=1M", "count=24",
                      "status=none"], dict(os.environ))
    assert times[12] >= 24e6 / 12e6 - 0.3, times
    assert 1.5 <= times[12] / times[24] <= 2.5, times
    assert free < times[24] / 2, (free, times)



def test_small_writes_paced_at_the_grant(make_daemon, bb, tmp_path):
    """24 MB in 4 KiB writes from one Python process (the calls that continue a
    phase are counted without the interposer's lock, from a share of the bucket)
    take about 2 s under a 12 MB/s grant, as one write of it does; bbmgrd gets
    every byte."""
    d = make_daemon(**one_node("12 MB/s"))
    register(d, "small", uid=os.getuid(), nodes=1)
    prog = ("import os\n"
            "fd = os.open(os.environ['HARMONIA_BB'] + '/s', os.O_WRONLY | os.O_CREAT)\n"
            "b = bytes(4096)\n"
            "for i in range(24 * 1000 * 1000 // 4096):\n"
            "    os.write(fd, b)\n"
            "os.close(fd)\n")
    t = run_timed([PYTHON, "-c", prog], preload_env(d, "small", bb))
    ph = phases_of(d, "small")
    assert len(ph) == 1 and ph[0]["state"] == "finished", ph
    assert ph[0]["bytes"] == (24 * 1000 * 1000 // 4096) * 4096, ph
    assert t >= 24e6 / 12e6 - 0.3, t


def test_one_large_write_follows_a_raised_grant(make_daemon, bb, tmp_path):
    """HDF5 writes a dataset in one pwrite(): a 40 MB write paced at a 5 MB/s share
    (another job's phase holds the other half of 10 MB/s) must speed up when that
    phase ends and the grant rises to 10 MB/s, as a stream of small writes does:
    about 2 s at 5 MB/s then 3 s at 10 MB/s, not 8 s at the first rate."""
    d = make_daemon(policy={"id": "fairshare"}, nodes=[], **one_node("10 MB/s"))
    register(d, "other", uid=USER1, nodes=1)
    register(d, "big", uid=os.getuid(), nodes=1)
    held = d.ok("POST", "/v1/jobs/other/phases", {"volume": "1GiB"}, uid=USER1)
    assert held["state"] == "granted", held
    log = tmp_path / "log"
    prog = ("import os\n"
            "fd = os.open(os.environ['HARMONIA_BB'] + '/big', os.O_WRONLY | os.O_CREAT)\n"
            "assert os.write(fd, bytes(40 * 1000 * 1000)) == 40 * 1000 * 1000\n"
            "os.close(fd)\n")
    t0 = time.monotonic()
    p = subprocess.Popen([PYTHON, "-c", prog], env=preload_env(d, "big", bb,
                         HARMONIA_INTERPOSE_LOG=log), stderr=subprocess.PIPE, text=True)
    try:
        # the interposer logs its phase's begin once bbmgrd's grant is back
        begins = wait_for(lambda: log_lines(log, "begin"), timeout=30,
                          what="the large write's phase granted")
        assert float(begins[0][begins[0].index("rate") + 1]) == 5e6, begins
        time.sleep(1.0)
        d.ok("POST", "/v1/phases/%d/finish" % held["id"], uid=USER1)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    t = time.monotonic() - t0
    assert p.returncode == 0, err
    ph = phases_of(d, "big")
    assert len(ph) == 1 and ph[0]["state"] == "finished", ph
    assert ph[0]["bytes"] == 40 * 1000 * 1000, ph
    # paced all along (40 MB at 10 MB/s is 4 s), and faster once the grant rose
    # (the grant is re-read every second: about 5 s)
    print("40 MB in one write, the grant raised after 1 s: %.2f s" % t)
    assert 4.0 - 0.3 <= t <= 6.8, t


SYNC_PROG = r"""
import json, os, sys, time
bb = sys.argv[1]
block = b"s" * (1 << 20)
synced = []
for i in range(3):
    time.sleep(1.5)                      # compute
    fd = os.open(os.path.join(bb, "ck%d" % i), os.O_WRONLY | os.O_CREAT, 0o600)
    for k in range(4):
        if k:
            time.sleep(0.3)              # a pause inside the phase
        assert os.write(fd, block) == len(block)
        if k == 0:
            os.fsync(fd)                 # a sync inside the phase
    os.fsync(fd)                         # the checkpoint made durable
    synced.append(time.time())
    os.close(fd)
time.sleep(1.5)                          # compute: the process's exit ends no phase
print(json.dumps(synced))
"""


def test_synced_phase_ends_sooner(make_daemon, bb, tmp_path):
    """A checkpoint loop that fsyncs each file at its end, with pauses inside its
    phases that hold the detector's gap at 1 s (HARMONIA_INTERPOSE_GAP, as an MPI
    program's collective waits do): once a phase is learned, bbmgrd sees each
    phase finished well before the gap after the fsync, so the grant goes back
    sooner; the fsync after the first write of a phase does not cut it (one phase
    per file, with its 4 MiB); the first phase (nothing learned) keeps the gap."""
    d = make_daemon(**one_node())
    register(d, "sync", uid=os.getuid(), nodes=1)
    log = tmp_path / "log"
    p = subprocess.run([PYTHON, "-c", SYNC_PROG, str(bb)],
                       env=preload_env(d, "sync", bb, HARMONIA_INTERPOSE_GAP="1",
                                       HARMONIA_INTERPOSE_LOG=log),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    synced = json.loads(p.stdout)
    ph = wait_for(lambda: (lambda x: x if len(x) == 3 and all(
        y["state"] == "finished" for y in x) else None)(phases_of(d, "sync")),
        "the phases to finish")
    assert [x["bytes"] for x in ph] == [4 << 20] * 3, ph
    after = [x["finished"] - t for x, t in zip(ph, synced)]
    print("phase finished at bbmgrd, s after the fsync: %s" % ["%.3f" % a for a in after])
    assert after[0] >= 0.9, after
    assert all(-0.05 <= a <= 0.5 for a in after[1:]), after
    for i in range(3):
        assert os.path.getsize(bb / ("ck%d" % i)) == 4 << 20


CLOSE_LATE_PROG = r"""
import os, sys, time
bb, gap = sys.argv[1], float(sys.argv[2])
for i in range(8):
    time.sleep(0.4)                      # compute
    fd = os.open(os.path.join(bb, "c%d" % i), os.O_WRONLY | os.O_CREAT, 0o600)
    assert os.write(fd, bytes(1 << 20)) == 1 << 20
    t = time.monotonic()
    while time.monotonic() - t < gap + 0.001:
        pass                             # just past the gap, before the agent's next tick
    if i % 2:
        os.fsync(fd)                     # every other file: fsync, then close
    os.close(fd)
"""


def test_a_call_without_data_opens_no_phase(make_daemon, bb, tmp_path):
    """fsync() or close() made just after the open phase went idle for the gap,
    before the interposer's agent saw it end (its tick is 10 ms; an MPI rank
    closes its file as soon as the collective sync returns): the phase ends
    there, and no phase of 0 bytes is opened, asked of bbmgrd and granted.
    bbmgrd sees one phase of 1 MiB per file, 8 in all."""
    d = make_daemon(**one_node())
    register(d, "late", uid=os.getuid(), nodes=1)
    log = tmp_path / "log"
    p = subprocess.run([PYTHON, "-c", CLOSE_LATE_PROG, str(bb), "0.2"],
                       env=preload_env(d, "late", bb, HARMONIA_INTERPOSE_GAP="0.2",
                                       HARMONIA_INTERPOSE_LOG=log),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ph = wait_for(lambda: (lambda x: x if len(x) >= 8 and all(
        y["state"] == "finished" for y in x) else None)(phases_of(d, "late")),
        "the phases to finish")
    print(open(log).read())
    assert [x["bytes"] for x in ph] == [1 << 20] * 8, ph
    assert [int(e[3]) for e in log_lines(log, "end")] == [1 << 20] * 8
    for i in range(8):
        assert os.path.getsize(bb / ("c%d" % i)) == 1 << 20


FIFO_READER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
n = 0
while True:
    b = os.read(fd, 65536)
    if not b:
        break
    n += len(b)
    time.sleep(65536 / 6e6)              # drains at about 6 MB/s
print(n)
"""


def test_a_slow_call_counts_toward_its_pacing(make_daemon, bb, tmp_path):
    """Writes that take time of their own (4 MiB into a FIFO in the buffer that a
    reader drains at about 6 MB/s: 0.7 s each, as a large MPI-IO or HDF5 call on a
    busy file system) at a 5 MB/s grant: the time a call took counts toward its
    pacing, so 16 MiB take about 16 MiB at 5 MB/s (3.4 s), not the calls' time
    plus the pacing's (6 s)."""
    d = make_daemon(**one_node("5 MB/s"))
    register(d, "slow", uid=os.getuid(), nodes=1)
    fifo = bb / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen([PYTHON, "-c", FIFO_READER, str(fifo)], stdout=subprocess.PIPE,
                              text=True)
    prog = ("import os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_WRONLY)\n"
            "t = time.monotonic()\n"
            "for i in range(4):\n"
            "    assert os.write(fd, bytes(4 << 20)) == 4 << 20\n"
            "print(time.monotonic() - t)\n")
    try:
        p = subprocess.run([PYTHON, "-c", prog, str(fifo)], env=preload_env(d, "slow", bb, HARMONIA_INTERPOSE_LOG=tmp_path / "log"),
                           capture_output=True, text=True, timeout=60)
        out, _ = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert p.returncode == 0, p.stderr
    assert int(out) == 16 << 20
    t = float(p.stdout)
    ph = phases_of(d, "slow")
    assert len(ph) == 1 and ph[0]["state"] == "finished" and ph[0]["bytes"] == 16 << 20, ph
    print("16 MiB in 4 calls of 0.7 s each at a 5 MB/s grant: %.2f s" % t, open(tmp_path / "log").read())
    # well under the calls' time plus the pacing's (the grant's bound, 16 MiB at
    # 5 MB/s less the first call's burst, is 3.3 s: test_paced_at_the_grant)
    assert t <= 4.8, t


def test_short_lived_threads_all_counted(make_daemon, bb, tmp_path):
    """100 threads one after the other (more than the interposer keeps counters
    for at once: an exited thread's are folded and reused), each making 256 small
    writes, then a pause, then 4 threads at once: two phases, every byte."""
    prog = ("import os, threading, time\n"
            "fd = os.open(os.environ['HARMONIA_BB'] + '/m', os.O_WRONLY | os.O_CREAT)\n"
            "def w():\n"
            "    for k in range(256):\n"
            "        os.write(fd, b'z' * 100)\n"
            "for i in range(100):\n"
            "    t = threading.Thread(target=w); t.start(); t.join()\n"
            "time.sleep(1.5)\n"
            "ts = [threading.Thread(target=w) for i in range(4)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "time.sleep(1.5)\n"
            "os.close(fd)\n")
    ph = run_python_phases(make_daemon, "many", bb, prog)
    assert len(ph) == 2, ph
    assert [x["bytes"] for x in ph] == [100 * 256 * 100, 4 * 256 * 100], ph
    assert os.path.getsize(bb / "m") == 104 * 256 * 100


ERRNO_PROG = r"""
import errno, os, sys
bb = os.environ["BB"]
def show(what, f):
    try:
        r = f()
        print(what, "ok", r)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, e.errno), e.strerror)
show("open-missing", lambda: os.open(bb + "/no/such/file", os.O_RDONLY))
show("open-dir-write", lambda: os.open(bb, os.O_WRONLY))
show("open-excl", lambda: os.open(bb + "/exists", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
fd = os.open(bb + "/exists", os.O_RDONLY)
show("write-rdonly", lambda: os.write(fd, b"abc"))
show("read", lambda: len(os.read(fd, 100)))
show("pwrite-rdonly", lambda: os.pwrite(fd, b"abc", 0))
show("writev-rdonly", lambda: os.writev(fd, [b"a", b"b"]))
os.close(fd)
show("write-closed", lambda: os.write(fd, b"abc"))
show("fsync-closed", lambda: os.fsync(fd))
show("close-closed", lambda: os.close(fd))
fd = os.open(bb + "/w", os.O_WRONLY | os.O_CREAT)
show("read-wronly", lambda: os.read(fd, 10))
show("pread-wronly", lambda: os.pread(fd, 10, 0))
show("write", lambda: os.write(fd, b"hello"))
os.close(fd)
try:
    open(bb + "/no/such", "rb")
except OSError as e:
    print("fopen", e.errno)
sys.stdout.flush()
"""


def test_errno_and_output_unchanged(make_daemon, bb, tmp_path):
    """Failing calls under the interposer give the same results, errno and output as
    without it: Python's system calls, and dd and cp failing on the buffer."""
    d = make_daemon(**one_node())
    register(d, "err", uid=os.getuid(), nodes=1)
    (bb / "exists").write_bytes(b"0123456789")
    outs = []
    for env in (dict(os.environ), preload_env(d, "err", bb)):
        env["BB"] = str(bb)
        r = [subprocess.run([PYTHON, "-c", ERRNO_PROG], env=env, capture_output=True,
                            text=True, timeout=60)]
        (bb / "w").unlink()
        r.append(subprocess.run(["dd", "if=/dev/zero", "of=%s/no/such" % bb, "count=1",
                                 "status=none"],
                                env=env, capture_output=True, text=True, timeout=60))
        r.append(subprocess.run(["cp", str(bb / "missing"), str(bb / "x")], env=env,
                                capture_output=True, text=True, timeout=60))
        r.append(subprocess.run(["dd", "if=%s" % bb, "of=/dev/null", "status=none"], env=env,
                                capture_output=True, text=True, timeout=60))
        outs.append([(x.returncode, x.stdout, x.stderr) for x in r])
    assert outs[0] == outs[1]
    assert "write-rdonly EBADF" in outs[0][0][1]
    # the interposer was at work: bbmgrd saw the bytes of the Python run's one
    # successful read (10) and write (5)
    ph = phases_of(d, "err")
    assert sum(p["bytes"] for p in ph) == 15, ph


def test_bbmgrd_away_never_fails_the_program(bb, tmp_path, munge):
    """bbmgrd unreachable: dd runs, its data intact, one line on stderr."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    env = preload_env(type("D", (), {"port": port, "munge": munge,
                                     "base": str(tmp_path)})(), "away", bb,
                      HARMONIA_FALLBACK_WAIT="0.5")
    p = subprocess.run(["sh", "-c", 'head -c 3000000 /dev/urandom > "$BB_SRC"; '
                        'dd if="$BB_SRC" of="$HARMONIA_BB/f" bs=64k status=none; '
                        'cmp "$BB_SRC" "$HARMONIA_BB/f"'],
                       env=dict(env, BB_SRC=str(tmp_path / "src")), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [line for line in p.stderr.splitlines() if "unreachable" in line], p.stderr


def serve_too_large(kind):
    """A fake bbmgrd on 127.0.0.1 that answers every request with a header (kind
    "header": header lines without end) or a body ("body": 32 MiB) too large for the
    interposer's HTTP client; (port, stop)."""
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def answer(c):
        try:
            c.recv(65536)
            if kind == "header":
                c.sendall(b"HTTP/1.1 200 OK\r\n")
                line = b"X-Filler: " + b"x" * 1000 + b"\r\n"
                while not stop.is_set():
                    c.sendall(line * 16)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % (32 << 20))
                chunk = b" " * (1 << 20)
                for _ in range(32):
                    c.sendall(chunk)
        except OSError:
            pass
        finally:
            c.close()

    def loop():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=answer, args=(c,), daemon=True).start()
        srv.close()
    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1], stop


@pytest.mark.parametrize("kind", ["header", "body"])
def test_too_large_reply_refused(bb, tmp_path, munge, kind):
    """A reply whose header or body is too large is refused by the interposer's HTTP
    client, at once and saying so: dd runs ungated, its data intact."""
    port, stop = serve_too_large(kind)
    try:
        env = preload_env(type("D", (), {"port": port, "munge": munge,
                                         "base": str(tmp_path)})(), "big", bb,
                          HARMONIA_FALLBACK_WAIT="0.5", HARMONIA_NO_AUTH="1")
        t0 = time.monotonic()
        p = subprocess.run(["sh", "-c", 'head -c 300000 /dev/urandom > "$BB_SRC"; '
                            'dd if="$BB_SRC" of="$HARMONIA_BB/f" bs=64k status=none; '
                            'cmp "$BB_SRC" "$HARMONIA_BB/f"'],
                           env=dict(env, BB_SRC=str(tmp_path / "src")), capture_output=True,
                           text=True, timeout=60)
        took = time.monotonic() - t0
    finally:
        stop.set()
    assert p.returncode == 0, p.stderr
    limit = {"header": 65536, "body": 16 << 20}[kind]
    assert ("response %s larger than %d bytes" % (kind, limit)) in p.stderr, p.stderr
    assert took < 5, took       # not the request's 8 s deadline


def test_libharmonia_program_not_counted_twice(make_daemon, bb):
    """bbio-bench calls libharmonia itself: under the interposer bbmgrd sees its three
    phases, not more."""
    d = make_daemon(**one_node())
    register(d, "own", uid=os.getuid(), nodes=1)
    p = subprocess.run([BBIO_BENCH, "--phases", "3", "--volume", "2MB", "--compute", "0.3",
                        "--dir", str(bb)], env=preload_env(d, "own", bb),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ph = phases_of(d, "own")
    assert len(ph) == 3 and all(x["bytes"] == 2e6 for x in ph), ph


def test_threads_and_fork_share_the_job(make_daemon, bb, tmp_path):
    """Four threads writing at once make one phase; a forked child writing after the
    parent's phase makes its own, ended by the child's agent once idle (the child
    stays up past the gap before its _exit); nothing is lost."""
    prog = ("import os, threading, time\n"
            "bb = os.environ['HARMONIA_BB']\n"
            "def w(i):\n"
            "    fd = os.open('%s/t%d' % (bb, i), os.O_WRONLY | os.O_CREAT)\n"
            "    for k in range(16):\n"
            "        os.write(fd, b'y' * 65536)\n"
            "    os.close(fd)\n"
            "ts = [threading.Thread(target=w, args=(i,)) for i in range(4)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "time.sleep(1.0)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    w(9)\n"
            "    time.sleep(1.5)\n"
            "    os._exit(0)\n"
            "_, st = os.waitpid(pid, 0)\n"
            "assert st == 0\n")
    ph = run_python_phases(make_daemon, "thr", bb, prog)
    assert len(ph) == 2, ph
    assert ph[0]["bytes"] == 4 * 16 * 65536 and ph[1]["bytes"] == 16 * 65536, ph
    for i in (0, 1, 2, 3, 9):
        assert os.path.getsize(bb / ("t%d" % i)) == 16 * 65536


def test_h5py_checkpoint_loop(make_daemon, bb, tmp_path):
    """An unmodified h5py program (HDF5's sec2 driver: open, pwrite, close) writing
    a checkpoint file every second, four times: four phases at bbmgrd, each with the
    bytes HDF5 wrote (the file's size, give or take its metadata); the files read
    back whole."""
    d = make_daemon(**one_node())
    register(d, "h5", uid=os.getuid(), nodes=1)
    prog = ("import os, time, h5py, numpy\n"
            "bb = os.environ['HARMONIA_BB']\n"
            "a = numpy.arange(1 << 20, dtype='f8')\n"
            "for i in range(4):\n"
            "    time.sleep(1.0)\n"
            "    with h5py.File(os.path.join(bb, 'ck%d.h5' % i), 'w') as f:\n"
            "        f.create_dataset('x', data=a + i)\n")
    p = subprocess.run([PYTHON, "-c", prog], env=preload_env(d, "h5", bb),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ph = phases_of(d, "h5")
    assert len(ph) == 4 and all(x["state"] == "finished" for x in ph), ph
    for i, x in enumerate(ph):
        size = os.path.getsize(bb / ("ck%d.h5" % i))
        assert (8 << 20) <= x["bytes"] <= size + 65536, (x, size)
    check = subprocess.run([PYTHON, "-c", "import h5py, numpy, sys\n"
                            "for i in range(4):\n"
                            "    x = h5py.File(sys.argv[1] + '/ck%d.h5' % i)['x'][:]\n"
                            "    assert (x == numpy.arange(1 << 20) + i).all()\n",
                            str(bb)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr


MPIIO_PROG = r"""
/* each rank writes its 4 MiB block of a shared file with MPI-IO, three times,
 * after a second of compute */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t len = 4 << 20;
    char *buf = malloc(len);
    memset(buf, 'a' + rank, len);
    for (int i = 0; i < 3; i++) {
        char path[4096];
        MPI_File f;
        sleep(1);
        snprintf(path, sizeof(path), "%s/ck%d", argv[1], i);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                      MPI_INFO_NULL, &f);
        MPI_File_write_at_all(f, (MPI_Offset)rank * len, buf, (int)len, MPI_BYTE,
                              MPI_STATUS_IGNORE);
        MPI_File_close(&f);
    }
    MPI_Finalize();
    return 0;
}
"""


def test_mpiio_two_ranks_share_phases(make_daemon, bb, tmp_path):
    """An unmodified MPI-IO program (Debian's OpenMPI, ROMIO on POSIX calls), two
    ranks writing their blocks of a shared file three times: three phases at bbmgrd,
    each shared by both ranks with the bytes of both; the files hold both blocks."""
    src = tmp_path / "mpiio.c"
    src.write_text(MPIIO_PROG)
    exe = tmp_path / "mpiio"
    subprocess.run(["mpicc", "-O2", "-o", str(exe), str(src)], check=True, timeout=120)
    d = make_daemon(**one_node())
    register(d, "mpi", uid=os.getuid(), nodes=1)
    env = preload_env(d, "mpi", bb, HARMONIA_NTASKS=2)
    p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                        str(exe), str(bb)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    ph = phases_of(d, "mpi")
    assert len(ph) == 3 and all(x["state"] == "finished" for x in ph), ph
    assert all(x["bytes"] == 8 << 20 for x in ph), ph
    for i in range(3):
        data = (bb / ("ck%d" % i)).read_bytes()
        assert data == b"a" * (4 << 20) + b"b" * (4 << 20)


def dd_on_two_nodes(d, job, bb, tmp_path, mib, pause=0, logs=None, ntasks=2):
    """Run a dd loop of 3 iterations on two "nodes" of job (two count files and node
    names, as two nodes' /dev/shm), started together at each iteration as MPI ranks
    are (a barrier on files after 'pause' s): node na writes mib["na"] MiB, nb
    mib["nb"].  With logs (a dict), each node's interposer log path is put in it.
    ntasks None: no task count in the environment (mpirun's ranks have none).
    Returns when both loops have ended, each without an error."""
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = []
    for node, other in (("na", "nb"), ("nb", "na")):
        cdir = tmp_path / ("coord-" + node)
        cdir.mkdir()
        extra = {}
        if logs is not None:
            logs[node] = extra["HARMONIA_INTERPOSE_LOG"] = str(tmp_path / ("log-" + node))
        if ntasks:
            extra["HARMONIA_NTASKS"] = ntasks
        env = preload_env(d, job, bb, HARMONIA_NODE=node, HARMONIA_COORD_DIR=cdir, **extra)
        script = ('for i in 1 2 3; do %(pause)s touch %(s)s/%(me)s.$i; '
                  'while [ ! -e %(s)s/%(other)s.$i ]; do sleep 0.01; done; '
                  'dd if=/dev/zero of="$HARMONIA_BB/%(me)s.$i" bs=1M count=%(mib)d '
                  'status=none || exit 9; done'
                  % dict(s=sync, me=node, other=other, mib=mib[node],
                         pause="sleep %g;" % pause if pause else ""))
        procs.append(subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err


def test_dd_on_two_nodes_share_one_phase(make_daemon, bb, tmp_path):
    """A job's dd loops on two nodes (two count files and node names, as two nodes'
    /dev/shm), started together at each iteration as MPI ranks are: one bbmgrd phase
    per iteration with the bytes of both nodes, open until the slower node's dd (4
    times node a's bytes, at the same pace) is done."""
    d = make_daemon(**one_node("20 MB/s"))
    register(d, "two", uid=os.getuid(), nodes=2)
    dd_on_two_nodes(d, "two", bb, tmp_path, {"na": 4, "nb": 16})
    ph = wait_for(lambda: (lambda x: x if all(y["state"] == "finished" for y in x) else None)(
        phases_of(d, "two")), "the phases to finish")
    assert len(ph) == 3, ph
    assert [x["bytes"] for x in ph] == [20 << 20] * 3, ph
    # node b's 16 MiB at 20 MB/s (2 nodes at 20 MB/s, over 2 tasks): 0.84 s; node
    # a's 4 MiB: 0.21 s.  The phase lasted as long as node b's dd
    assert all(x["finished"] - x["granted"] >= 0.7 for x in ph), ph
    for i in range(1, 4):
        assert os.path.getsize(bb / ("nb.%d" % i)) == 16 << 20


def test_two_nodes_without_a_task_count_share_the_grant(make_daemon, bb, tmp_path):
    """mpirun starts its ranks with no task count of the job in their environment
    (each rank would take the job's whole grant, the job twice its share): the
    interposer divides the grant by the nodes in the job's phase at bbmgrd.  Two
    nodes, 16 MiB each per iteration, the job granted 40 MB/s (2 nodes at 20 MB/s):
    each phase lasts as 32 MiB at 40 MB/s does (0.84 s), not at twice that."""
    d = make_daemon(**one_node("20 MB/s"))
    register(d, "nnt", uid=os.getuid(), nodes=2)
    logs = {}
    dd_on_two_nodes(d, "nnt", bb, tmp_path, {"na": 16, "nb": 16}, logs=logs, ntasks=None)
    ph = wait_for(lambda: (lambda x: x if all(y["state"] == "finished" for y in x) else None)(
        phases_of(d, "nnt")), "the phases to finish")
    assert len(ph) == 3, ph
    assert [x["bytes"] for x in ph] == [32 << 20] * 3, ph
    took = [x["finished"] - x["granted"] for x in ph]
    print("32 MiB on two nodes granted 40 MB/s: %s s" % ["%.2f" % t for t in took])
    assert all(t >= 0.7 for t in took), took
    for node in ("na", "nb"):
        for b in log_lines(logs[node], "begin"):
            # begin START volume V DIR gated G rate R ...: each node half the grant
            assert b[6] == "1" and float(b[8]) == 20e6, (node, b)


def test_two_nodes_phase_asks_the_jobs_volume(make_daemon, bb, tmp_path):
    """A job's dd loops on two nodes, 8 MiB each per iteration: once a phase is
    learned, the job's phase is asked for with the job's bytes (both nodes', 16
    MiB), not the first node's, and each node is paced at a granted rate (bbmgrd
    does not count the phase done when the first node's bytes are moved)."""
    d = make_daemon(**one_node("20 MB/s"))
    register(d, "vol2", uid=os.getuid(), nodes=2)
    logs = {}
    dd_on_two_nodes(d, "vol2", bb, tmp_path, {"na": 8, "nb": 8}, pause=0.5, logs=logs)
    ph = wait_for(lambda: (lambda x: x if all(y["state"] == "finished" for y in x) else None)(
        phases_of(d, "vol2")), "the phases to finish")
    assert len(ph) == 3, ph
    assert [x["bytes"] for x in ph] == [16 << 20] * 3, ph
    # the first phase is asked for before anything is learned; the next ones
    # with the job's learned volume, both nodes' bytes
    for x in ph[1:]:
        v = d.ok("GET", "/v1/phases/%d" % x["id"])
        assert v["volume"] == 16 << 20, v
    for node in ("na", "nb"):
        begins = log_lines(logs[node], "begin")
        assert len(begins) == 3, (node, begins)
        for b in begins[1:]:
            # begin START volume V DIR gated G rate R wait W rejoin J
            assert b[6] == "1" and float(b[8]) > 0, (node, b)


COLLECTIVE_PROG = r"""
import json, os, sys, time
bb, sync, me, other, slow = sys.argv[1:6]
slow = slow == "1"
block = b"c" * (128 << 10)


def barrier(tag):
    # a rank entering a collective call: it waits there for the other node
    open(os.path.join(sync, "%s.%s" % (me, tag)), "w").close()
    while not os.path.exists(os.path.join(sync, "%s.%s" % (other, tag))):
        time.sleep(0.005)


def chunk(fd):
    # 12 blocks of 128 KiB; the slow node's take 0.05 s each (under the gap)
    for k in range(12):
        if os.write(fd, block) != len(block):
            sys.exit(9)
        if slow:
            time.sleep(0.05)


took = []
for i in range(3):
    time.sleep(1.5)                      # compute
    barrier("go%d" % i)
    fd = os.open(os.path.join(bb, "%s.%d" % (me, i)), os.O_WRONLY | os.O_CREAT, 0o600)
    chunk(fd)
    barrier("mid%d" % i)                 # the fast node waits longer than the gap
    t = time.monotonic()
    chunk(fd)
    took.append(time.monotonic() - t)
    os.close(fd)
print(json.dumps(took))
"""


def test_collective_on_two_nodes_one_phase_per_iteration(make_daemon, bb, tmp_path):
    """An unmodified program on two nodes that writes as ranks in a collective call
    do: each iteration, both nodes write a chunk, meet at a barrier, and write a
    second chunk; node b writes slowly, so node a waits at the barrier longer than
    the detector's gap (its phase ends there) while the job's phase is still open.
    bbmgrd sees one phase per iteration with the bytes of both nodes (none with no
    bytes), and node a's second chunk does not wait for a phase to close."""
    d = make_daemon(**one_node())
    register(d, "coll", uid=os.getuid(), nodes=2)
    sync = tmp_path / "sync"
    sync.mkdir()
    logs, procs = {}, {}
    for node, other, slow in (("na", "nb", "0"), ("nb", "na", "1")):
        cdir = tmp_path / ("coord-" + node)
        cdir.mkdir()
        logs[node] = tmp_path / ("interpose-%s.log" % node)
        env = preload_env(d, "coll", bb, HARMONIA_NTASKS=2, HARMONIA_NODE=node,
                          HARMONIA_COORD_DIR=cdir, HARMONIA_INTERPOSE_GAP="0.2",
                          HARMONIA_INTERPOSE_LOG=logs[node])
        procs[node] = subprocess.Popen([PYTHON, "-c", COLLECTIVE_PROG, str(bb), str(sync), node,
                                        other, slow], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    took = {}
    for node, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err
        took[node] = json.loads(out)
    ph = wait_for(lambda: (lambda x: x if all(y["state"] == "finished" for y in x) else None)(
        phases_of(d, "coll")), "the phases to finish")
    # 2 chunks of 1.5 MiB per node and iteration
    assert [x["bytes"] for x in ph] == [6 << 20] * 3, ph
    # node b's second chunk takes 0.6 s: had node a waited for the phase to close
    # (and for a new grant), its second chunk would take longer than that
    assert all(t < 0.4 for t in took["na"]), took
    for i in range(3):
        assert os.path.getsize(bb / ("na.%d" % i)) == 3 << 20
        assert os.path.getsize(bb / ("nb.%d" % i)) == 3 << 20


SIGNAL_PROG = r"""
/* The main loop writes 4 KiB blocks into the buffer (over one block) while a 100 us interval timer's
 * handler writes one byte to another buffer file: handlers land inside the
 * interposer's wrappers (thousands of times) and outside them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static int sfd;
static volatile long handled;
static void on_alarm(int sig)
{
    int e = errno;
    (void)sig;
    if (write(sfd, "s", 1) == 1)
        handled++;
    errno = e;
}
int main(int argc, char **argv)
{
    char path[4096], *buf = calloc(1, 4096);
    snprintf(path, sizeof(path), "%s/sig", argv[1]);
    sfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    snprintf(path, sizeof(path), "%s/data", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (sfd < 0 || fd < 0 || !buf)
        return 1;
    if (write(fd, buf, 4096) != 4096)     /* the process's first counted call */
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_REAL, &it, NULL);
    long n = 1;
    for (int k = 0; k < 200000; k++)
        if (pwrite(fd, buf, 4096, 0) == 4096)
            n++;
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    printf("%ld %ld\n", n, handled);
    return 0;
}
"""


def test_signal_handlers_doing_io(make_daemon, bb, tmp_path):
    """Signal handlers that write into the buffer every millisecond, landing inside
    and outside the interposer's wrappers, neither deadlock nor lose a byte of the
    program's; a handler's write made while the interposer was interrupted goes
    straight to the C library, uncounted."""
    src = tmp_path / "sig.c"
    src.write_text(SIGNAL_PROG)
    exe = tmp_path / "sig"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True, timeout=120)
    d = make_daemon(**one_node())
    register(d, "sig", uid=os.getuid(), nodes=1)
    p = subprocess.run([str(exe), str(bb)], env=preload_env(d, "sig", bb),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    n, handled = (int(x) for x in p.stdout.split())
    assert n == 200001 and handled > 0, p.stdout
    assert os.path.getsize(bb / "data") == 4096
    assert os.path.getsize(bb / "sig") == handled
    ph = phases_of(d, "sig")
    counted = sum(x["bytes"] for x in ph)
    assert 200001 * 4096 <= counted <= 200001 * 4096 + handled, (ph, handled, p.stderr)


def test_o_direct(make_daemon, bb, tmp_path):
    """dd with O_DIRECT (aligned buffers, oflag=direct and iflag=direct) into and out
    of the buffer: one phase each way with its bytes, the data intact (the
    interposer never touches a buffer)."""
    d = make_daemon(**one_node())
    register(d, "direct", uid=os.getuid(), nodes=1)
    env = preload_env(d, "direct", bb)
    src = tmp_path / "src"
    src.write_bytes(os.urandom(4 << 20))
    p = subprocess.run(["sh", "-c", 'dd if="$1" of="$HARMONIA_BB/d" bs=1M oflag=direct '
                        'status=none && sleep 1 && dd if="$HARMONIA_BB/d" of="$2" bs=1M '
                        'iflag=direct status=none', "sh", str(src), str(tmp_path / "back")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
    ph = phases_of(d, "direct")
    assert [(x["direction"], x["bytes"]) for x in ph] == [("write", 4 << 20),
                                                          ("read", 4 << 20)], ph


# In a thread, as the agent does: 0 when the kernel and the seccomp filter allow it.
UNSHARE_PROBE = """
import ctypes, threading
r = []
libc = ctypes.CDLL(None, use_errno=True)
t = threading.Thread(target=lambda: r.append(libc.unshare(0x400) or 0))
t.start(); t.join()
print(r[0] if r[0] == 0 else ctypes.get_errno())
"""


def test_descriptor_table_is_the_programs(make_daemon, bb, tmp_path):
    """The interposer's agent keeps its descriptors (the connection to bbmgrd,
    the job's shared files) in a table of its own: while a phase is granted the
    program's /proc/self/fd holds only what the program opened, a program that
    closes every descriptor but the standard ones (as daemons do) does not cut
    the agent off, and its next phase is still granted and ended."""
    probe = subprocess.run([PYTHON, "-c", UNSHARE_PROBE], capture_output=True, text=True,
                           timeout=60)
    if probe.stdout.strip() != "0":
        pytest.skip("unshare(CLONE_FILES) is refused here (a seccomp filter): "
                    "the agent shares the program's table")
    d = make_daemon(**one_node())
    register(d, "fds", uid=os.getuid(), nodes=1)
    prog = ("import os, time\n"
            "bb = os.environ['HARMONIA_BB']\n"
            "def phase(name):\n"
            "    fd = os.open(os.path.join(bb, name), os.O_WRONLY | os.O_CREAT, 0o600)\n"
            "    os.write(fd, b'x' * 65536)\n"
            "    mine = {}\n"
            "    for n in os.listdir('/proc/self/fd'):\n"
            "        try:\n"
            "            mine[n] = os.readlink('/proc/self/fd/' + n)\n"
            "        except OSError:\n"
            "            pass\n"
            "    os.close(fd)\n"
            "    return mine\n"
            "print(sorted(phase('a').values()))\n"
            "time.sleep(1.5)\n"
            "os.closerange(3, 65536)\n"
            "phase('b')\n"
            "time.sleep(1.5)\n")
    p = subprocess.run([PYTHON, "-c", prog], env=preload_env(d, "fds", bb),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    seen = eval(p.stdout.strip())
    others = [t for t in seen if not (t.startswith(str(bb)) or t.startswith("/proc/")
                                      or t.startswith("/dev/pts") or t.startswith("pipe:")
                                      or t == "/dev/null")]
    assert not others, "the program's table holds the interposer's: %s" % seen
    ph = phases_of(d, "fds")
    assert len(ph) == 2 and all(x["state"] == "finished" and x["bytes"] == 65536
                                for x in ph), ph
