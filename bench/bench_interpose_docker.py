#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench_interpose_docker.py: the two halves of bench_interpose_docker.sh.

  run ...        inside the cluster's controller (ctl), as root: submits the jobs of
                 one (kind, policy, program) as hmtest1 and hmtest2, starts them
                 together, waits, and prints one JSON object: each job's start and
                 end, its Slurm state, and bbmgrd's records of its phases
                 (GET /v1/phases/ID: requested, granted, finished, bytes).
  report ...     on the host: the table and the gains from the JSON files, and per
                 kind an SVG of the phases as bbmgrd scheduled them, drawn by
                 scripts/demo-compare's svg_chart.
  platform BW    on the host: bbmgr.yaml (stdin) with the nodes at BW and this
                 machine's calibrated device, by scripts/demo-compare's rewrite.

Python 3 standard library only.
"""
import argparse
import http.client
import json
import os
import runpy
import socket
import subprocess
import sys
import time
import types

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BBIO = "/usr/bin/bbio-bench"
HERE = "/pfs/bench-ipd"
USERS = ("hmtest1", "hmtest2")


def demo_compare():
    """scripts/demo-compare's functions (its chart and platform code)."""
    return types.SimpleNamespace(**runpy.run_path(os.path.join(TOP, "scripts", "demo-compare")))


# ------------------------------------------------------------------ in ctl
class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def get(path):
    """GET path at bbmgrd as root (admin): (status, JSON or None)."""
    cred = subprocess.run(["munge", "-s", "GET " + path.split("?")[0]], check=True,
                          capture_output=True, text=True).stdout.strip()
    c = UnixHTTP("/run/harmonia/bbmgrd.sock")
    try:
        c.request("GET", path, headers={"Authorization": "MUNGE " + cred})
        r = c.getresponse()
        body = r.read().decode()
    finally:
        c.close()
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, None


def quiet_devices(timeout=60):
    """Before the jobs are submitted: the previous run's writeback done and its
    buffers torn down.  bbmgrd places a job on the buffer nodes whose devices have
    the most bandwidth left (their agents measure the other I/O on the device), and
    the Docker cluster's four buffer nodes share the machine's one disk: jobs
    started while the last run's data were still being written back went all to
    the nodes measured idlest (a run put its 8 jobs on 2 of the 4 nodes, halving
    the bandwidth its policy had), and two runs compared were not on one platform."""
    subprocess.run(["sync"], check=False)
    deadline = time.time() + timeout
    while True:
        code, d = get("/v1/nodes")
        nodes = (d or {}).get("nodes", [])
        busy = [n["name"] for n in nodes
                if n.get("allocations") or n.get("active_phases")
                or ((n.get("agent") or {}).get("foreign_bw") or 0) > 0.02 * (n.get("bandwidth") or 1)]
        if code == 200 and nodes and not busy:
            return
        if time.time() > deadline:
            print("bench_interpose_docker: buffer nodes still busy after %d s: %s"
                  % (timeout, " ".join(busy)), file=sys.stderr)
            return
        time.sleep(1.0)


def sh(*cmd, user=None, check=True):
    if user:
        cmd = ("runuser", "-u", user, "--") + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("%s: %s" % (" ".join(cmd), p.stderr.strip()))
    return p.stdout


def job_body(a):
    n, c, v = a.iters, a.compute, a.volume
    if a.mode == "libharmonia":
        if a.kind == "mpiio":
            # each process moves half of the job's phase and asks for all of it
            return ('srun -N2 -n2 %s -q --no-direct -n %d -s %dMiB --phase-volume %dMiB -c %gs'
                    ' -D "$HARMONIA_BB" >/dev/null' % (BBIO, n, v // 2, v, c))
        return '%s -q --no-direct -n %d -s %dMiB -c %gs -D "$HARMONIA_BB" >/dev/null' % (
            BBIO, n, v, c)
    if a.kind == "dd":
        return ('for i in $(seq %d); do sleep %g; dd if=/dev/zero of="$HARMONIA_BB/data" '
                'bs=1M count=%d conv=fsync status=none || exit 9; done' % (n, c, v))
    if a.kind == "h5py":
        return 'python3 %s/bench_interpose_h5.py %d %g %d "$HARMONIA_BB"' % (HERE, n, c, v)
    # one rank per node; shared memory between containers is not there to find.
    # The containers share the machine's cores (8 jobs: 16 ranks on 2 cores): a
    # rank waiting in a collective for its peer (gated, or paced) yields the core
    # rather than spin on it, as Open MPI does by itself on an oversubscribed node.
    # Each job its own session directory: two jobs of one user starting mpirun on
    # one node race on /tmp/ompi.NODE.UID (one removes it as the other creates
    # its pid.N in it: "orte_init failed", seen in a run)
    return ('OMPI_MCA_orte_tmpdir_base=/tmp/ompi-job$SLURM_JOB_ID '
            'mpirun -np 2 --map-by node --mca btl self,tcp --mca mpi_yield_when_idle 1'
            ' %s/mpiio %d %g %d "$HARMONIA_BB"' % (HERE, n, c, v))


def cmd_run(a):
    tag = "%s-%s-%s-%d" % (a.kind, a.policy, a.mode, int(time.time()))
    go = os.path.join(HERE, "go." + tag)
    nn = 2 if a.kind == "mpiio" else 1
    if a.mode == "interposer":
        hints = "iohints interpose=yes"       # no other hint: all is found
    else:
        w_iter = a.compute + a.volume * 1.048576 / a.node_mbs
        hints = "iohints w_iter=%.2fs io_volume=%dMiB interpose=no" % (w_iter, a.volume)
    ids, wdirs = [], {}
    quiet_devices()
    t_sub = time.time()
    for j in range(a.jobs):
        u = USERS[j % 2]
        wdir = "/pfs/%s/bench-ipd/%s" % (u, tag)
        sh("mkdir", "-p", wdir, user=u)
        script = "\n".join([
            "#!/bin/bash",
            "#SBATCH -N%d -n%d -J ipd-%s-%d -o %s/slurm-%%j.out" % (nn, nn, tag, j, wdir),
            # room for every iteration's file: the MPI and h5py programs write a
            # new checkpoint each time (a full buffer refuses the next phase: 507)
            "#BB_HARMONIA jobbuffer capacity=%dMiB" % ((a.iters + 1) * a.volume),
            "#BB_HARMONIA " + hints,
            # the interposer's own record of each phase (begin: wait, rate; end:
            # bytes, w_iter), read back into the results
            ("export HARMONIA_INTERPOSE_LOG=%s/ip.$SLURM_JOB_ID.log" % wdir
             if a.mode == "interposer" else ""),
            "while [ ! -e %s ]; do sleep 0.05; done" % go,
            "date +%%s.%%N > %s/start.$SLURM_JOB_ID" % wdir,
            job_body(a),
            "rc=$?",
            "date +%%s.%%N > %s/end.$SLURM_JOB_ID" % wdir,
            "exit $rc", ""])
        path = os.path.join(wdir, "job%d.sh" % j)
        subprocess.run(["runuser", "-u", u, "--", "tee", path], input=script, text=True,
                       check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run(["runuser", "-u", u, "--", "sbatch", "--parsable", path],
                             cwd=wdir, capture_output=True, text=True)
        if out.returncode:
            sys.exit("sbatch as %s: %s" % (u, out.stderr.strip()))
        jid = out.stdout.strip().split(";")[0]
        ids.append(jid)
        wdirs[jid] = (u, wdir)

    def states():
        st = {}
        for line in sh("squeue", "-h", "-j", ",".join(ids), "-o", "%i %T",
                       check=False).splitlines():
            p = line.split()
            if len(p) == 2:
                st[p[0]] = p[1]
        return st
    deadline = time.time() + 180
    while True:
        st = states()
        if all(st.get(i) == "RUNNING" for i in ids):
            break
        if time.time() > deadline or any(i not in st for i in ids):
            sh("scancel", *ids, check=False)
            sys.exit("%s: jobs not all running: %s" % (tag, st))
        time.sleep(0.2)
    t_go = time.time()
    open(go, "w").close()
    seen = {i: set() for i in ids}
    deadline = t_go + a.timeout
    while True:
        st = states()
        for i in ids:
            if i in st:
                code, d = get("/v1/jobs/%s/phases?limit=64" % i)
                if code == 200 and d:
                    seen[i].update(p["id"] for p in d["phases"])
        if not st:
            break
        if time.time() > deadline:
            sh("scancel", *ids, check=False)
            sys.exit("%s: jobs still running after %d s (cancelled)" % (tag, a.timeout))
        time.sleep(1.0)
    os.unlink(go)
    # every phase of these jobs: those seen, and the ids around them (a phase opened
    # and closed between two looks), read from bbmgrd's records
    pids = set().union(*seen.values())
    recs = {i: [] for i in ids}
    if pids:
        lo, hi = min(pids), max(pids) + 4 * a.jobs
        for pid in range(lo, hi + 1):
            code, r = get("/v1/phases/%d" % pid)
            if code == 200 and r and str(r.get("job")) in recs:
                recs[str(r["job"])].append(r)
    # slurmdbd may record a job's end after squeue has dropped it: a job sacct
    # still shows running is asked again, for up to 30 s
    deadline = time.time() + 30
    while True:
        acct = {}
        for line in sh("sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o",
                       "JobID,State,ExitCode,NodeList", check=False).splitlines():
            p = line.split("|")
            if len(p) == 4:
                acct[p[0]] = {"state": p[1], "exit": p[2], "nodes": p[3]}
        if time.time() > deadline or not any(
                acct.get(i, {}).get("state") in (None, "RUNNING", "COMPLETING", "PENDING")
                for i in ids):
            break
        time.sleep(1.0)
    res = []
    for i in ids:
        u, wdir = wdirs[i]
        times = {}
        for k in ("start", "end"):
            try:
                with open("%s/%s.%s" % (wdir, k, i)) as f:
                    times[k] = float(f.read())
            except (OSError, ValueError):
                times[k] = None
        code, job = get("/v1/jobs/%s" % i)
        try:
            with open("%s/ip.%s.log" % (wdir, i)) as f:
                iplog = f.read()[-8000:]
        except OSError:
            iplog = ""
        try:
            with open("%s/slurm-%s.out" % (wdir, i)) as f:
                log = f.read()[-2000:]
        except OSError:
            log = ""
        res.append({"id": i, "user": u, "start": times["start"], "end": times["end"],
                    "slurm": acct.get(i, {}), "phases_done": (job or {}).get("phases_done"),
                    "phases": sorted(recs[i], key=lambda r: r["id"]), "log": log,
                    "interposer_log": iplog})
    json.dump({"kind": a.kind, "policy": a.policy, "mode": a.mode, "tag": tag,
               "jobs_n": a.jobs, "iters": a.iters, "compute": a.compute,
               "volume_mib": a.volume, "node_mbs": a.node_mbs, "t_sub": t_sub,
               "t_go": t_go, "jobs": res}, sys.stdout, indent=1)
    print()


# ------------------------------------------------------------------ on the host
def completion(d):
    """(mean, max) completion of a run's jobs; None when one did not complete (a
    failed job's early end would count as a fast one)."""
    ts = [j["end"] - d["t_go"] for j in d["jobs"]
          if j["end"] is not None and j["slurm"].get("state", "COMPLETED") == "COMPLETED"]
    if len(ts) != len(d["jobs"]):
        return None
    return sum(ts) / len(ts), max(ts)


def gain_ratios(base, pol):
    """The interposer's gain of 'pol' over 'base' over libharmonia's, in the mean
    and the max; each argument maps a program to its (mean, max) completion."""
    g = {m: [x / y for x, y in zip(base[m], pol[m])] for m in base}
    return tuple(i / l for i, l in zip(g["interposer"], g["libharmonia"]))


def chart_result(d, label):
    """One panel of demo-compare's chart from bbmgrd's phase records: compute up to
    the request, waiting for the grant, I/O until bbmgrd saw the phase finish."""
    jobs = []
    alone = d["iters"] * (d["compute"] + d["volume_mib"] * 1.048576 / d["node_mbs"])
    for j in d["jobs"]:
        t, phases = j["start"], []
        for r in j["phases"]:
            if not (r.get("requested") and r.get("granted") and r.get("finished")):
                continue
            phases.append({"compute": max(0.0, r["requested"] - t),
                           "wait": r["granted"] - r["requested"],
                           "io": r["finished"] - r["granted"], "end": 0.0})
            t = r["finished"]
        jobs.append({"id": j["id"], "profile": label, "start": j["start"],
                     "bench": {"phase": phases, "totals": {"run_time": j["end"] - j["start"]}}})
    mean, mx = completion(d)
    return {"raw": {"t_go": d["t_go"], "jobs": jobs}, "completion_mean": mean,
            "completion_max": mx, "dilation_mean": mean / alone}


def cmd_report(a):
    kinds, policies = a.kinds.split(), a.policies.split()
    modes = ("interposer", "libharmonia")
    dc = demo_compare()
    base = policies[0]
    print("%-6s %-10s %-11s %9s %9s %s" % ("kind", "policy", "program", "mean_s", "max_s",
                                          "phases_finished"))
    for k in kinds:
        data = {}
        for p in policies:
            for m in modes:
                f = os.path.join(a.dir, "%s-%s-%s.json" % (k, p, m))
                if not os.path.exists(f):
                    continue
                with open(f) as fh:
                    d = json.load(fh)
                data[(p, m)] = d
                c = completion(d)
                done = sum(j["phases_done"] or 0 for j in d["jobs"])
                bad = [j["id"] for j in d["jobs"] if j["slurm"].get("state") != "COMPLETED"]
                print("%-6s %-10s %-11s %9s %9s %d of %d%s" % (
                    k, p, m, "%.2f" % c[0] if c else "-", "%.2f" % c[1] if c else "-",
                    done, d["jobs_n"] * d["iters"],
                    ("  not COMPLETED: " + " ".join(bad)) if bad else ""))
        for p in policies[1:]:
            try:
                g = {m: [x / y for x, y in zip(completion(data[(base, m)]),
                                               completion(data[(p, m)]))] for m in modes}
            except (KeyError, TypeError):
                continue
            print("%-6s %s over %s: gain in mean %.3f (interposer) vs %.3f (libharmonia), "
                  "ratio %.3f; in max %.3f vs %.3f, ratio %.3f" % (
                      k, p, base, g["interposer"][0], g["libharmonia"][0],
                      g["interposer"][0] / g["libharmonia"][0], g["interposer"][1],
                      g["libharmonia"][1], g["interposer"][1] / g["libharmonia"][1]))
        results, panels = {}, []
        for p in policies:
            for m in modes:
                if (p, m) in data and completion(data[(p, m)]):
                    lab = "%s %s" % (p, m)
                    results[(lab, 0)] = chart_result(data[(p, m)], m)
                    panels.append(lab)
        if panels:
            d0 = next(iter(data.values()))
            svg = os.path.join(a.dir, "phases-%s.svg" % k)
            dc.svg_chart(results, panels, 0, svg,
                         "%s: %d jobs, %d x (%gs compute + %d MiB), nodes modelled at %s; "
                         "phases as bbmgrd scheduled them (its records: requested, granted, "
                         "finished); dilation: mean completion over %d x (compute + volume "
                         "at the node bandwidth)" % (
                             k, d0["jobs_n"], d0["iters"], d0["compute"], d0["volume_mib"],
                             a.node_bw, d0["iters"]))
            print("%-6s chart: %s" % (k, svg))


def cmd_median(a):
    """Several runs of the bench (one BENCH_IP_OUT each): per kind and policy, each
    run's ratio of the gains, and the median over the runs of each program's mean
    and max completion, with the gains and ratios those medians give."""
    kinds, policies = a.kinds.split(), a.policies.split()
    modes, base = ("interposer", "libharmonia"), policies[0]

    def med(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    print("%-6s %-10s %5s  %-29s %-29s %s" % (
        "kind", "policy", "runs", "median mean/max, interposer", "libharmonia",
        "ratio mean, max (of medians; each run's)"))
    for k in kinds:
        comp = {}                       # (policy, mode) -> [(mean, max) per run]
        per_run = {p: [] for p in policies[1:]}
        for d in a.dirs:
            got = {}
            for p in policies:
                for m in modes:
                    f = os.path.join(d, "%s-%s-%s.json" % (k, p, m))
                    try:
                        with open(f) as fh:
                            c = completion(json.load(fh))
                    except (OSError, ValueError):
                        c = None
                    if c:
                        got[(p, m)] = c
            if not all((p, m) in got for p in policies for m in modes):
                continue                # a run with every configuration, or none
            for key, c in got.items():
                comp.setdefault(key, []).append(c)
            for p in policies[1:]:
                per_run[p].append(gain_ratios({m: got[(base, m)] for m in modes},
                                              {m: got[(p, m)] for m in modes}))
        if not comp:
            continue
        md = {key: (med([c[0] for c in v]), med([c[1] for c in v])) for key, v in comp.items()}
        for p in policies:
            ratio = ""
            if p != base:
                ratio = "%.3f, %.3f; %s" % (
                    gain_ratios({m: md[(base, m)] for m in modes},
                                {m: md[(p, m)] for m in modes})
                    + (" ".join("%.3f/%.3f" % r for r in per_run[p]),))
            print("%-6s %-10s %5d  %-29s %-29s %s" % (
                k, p, len(comp[(p, modes[0])]),
                "%.2f / %.2f" % md[(p, "interposer")], "%.2f / %.2f" % md[(p, "libharmonia")],
                ratio))


def cmd_platform(a):
    dc = demo_compare()
    if a.mbs:
        print("%g" % (dc.parse_bw(a.bw) / 1e6))
        return
    sys.stdout.write(dc.rewrite_platform(sys.stdin.read(), dc.parse_bw(a.bw), dc.CALIBRATED))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=("dd", "mpiio", "h5py"), required=True)
    r.add_argument("--mode", choices=("interposer", "libharmonia"), required=True)
    r.add_argument("--policy", required=True)
    r.add_argument("--jobs", type=int, default=4)
    r.add_argument("--iters", type=int, default=4)
    r.add_argument("--compute", type=float, default=2)
    r.add_argument("--volume", type=int, default=256, help="MiB per iteration and job")
    r.add_argument("--node-mbs", type=float, default=100, help="modelled node MB/s")
    r.add_argument("--timeout", type=int, default=900)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    p.add_argument("--kinds", default="dd mpiio h5py")
    p.add_argument("--policies", default="fairshare set10 auto")
    p.add_argument("--node-bw", default="100MB/s")
    p = sub.add_parser("median")
    p.add_argument("dirs", nargs="+", help="the BENCH_IP_OUT of each run")
    p.add_argument("--kinds", default="dd mpiio h5py")
    p.add_argument("--policies", default="fairshare set10 auto")
    p = sub.add_parser("platform")
    p.add_argument("bw")
    p.add_argument("--mbs", action="store_true", help="print BW in MB/s, nothing else")
    a = ap.parse_args()
    {"run": cmd_run, "report": cmd_report, "median": cmd_median,
     "platform": cmd_platform}[a.cmd](a)


if __name__ == "__main__":
    main()
