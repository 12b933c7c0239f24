# SPDX-License-Identifier: GPL-2.0-or-later
"""SIGKILL at random points during allocations, phase grants and persistent-buffer
creation; after each restart the state must be exactly what was acknowledged.

HARMONIA_CRASH_ITERS sets the number of kills (default 30), HARMONIA_CRASH_SEED the
random seed (printed on failure); HARMONIA_CRASH_KEEP=DIR keeps a copy of the failed
daemon's directory (log, database) there."""
import http.client
import os
import random
import signal
import threading
import time

from conftest import SLURM_UID, USER1

ITERS = int(os.environ.get("HARMONIA_CRASH_ITERS", "30"))
SEED = int(os.environ.get("HARMONIA_CRASH_SEED", str(int(time.time()))))
GiB = 1 << 30


class Model:
    """What bbmgrd acknowledged."""

    def __init__(self):
        self.jobs = {}          # id -> {"alloc": [(node, bytes)] or None, "phase": pid/None}
        self.granted = set()    # phases acknowledged granted (and not finished)
        self.finished = set()   # phases acknowledged finished
        self.pbufs = {}         # name -> [(node, bytes)]
        self.uncertain = []     # (kind, key) of requests cut by the kill
        self.n = 0


def nodes_of(js):
    return sorted((n["name"], n["bytes"]) for n in js["nodes"])


def workload(d, m, rng, stop, killed):
    while not stop.is_set():
        m.n += 1
        op = rng.random()
        jobs = list(m.jobs)
        kind, key = None, None
        try:
            if op < 0.15 or not jobs:
                kind, key = "register", "j%d" % m.n
                st, js = d.request("POST", "/v1/jobs", {"id": key, "uid": USER1}, uid=SLURM_UID)
                assert st == 201, (st, js)
                m.jobs[key] = {"alloc": None, "phase": None}
            elif op < 0.35:
                key = rng.choice(jobs)
                if m.jobs[key]["alloc"] is None:
                    kind = "alloc"
                    cap = rng.randint(1, 600) * GiB
                    st, js = d.request("POST", "/v1/jobs/%s/allocation" % key,
                                       {"capacity": cap}, uid=SLURM_UID)
                    if st == 201:
                        m.jobs[key]["alloc"] = nodes_of(js)
                    else:
                        assert st == 507, (st, js)
                else:
                    kind = "release"
                    st, js = d.request("DELETE", "/v1/jobs/%s/allocation" % key, uid=SLURM_UID)
                    assert st == 200, (st, js)
                    m.jobs[key]["alloc"] = None
            elif op < 0.7:
                key = rng.choice(jobs)
                pid = m.jobs[key]["phase"]
                if pid is None:
                    kind = "phase"
                    st, js = d.request("POST", "/v1/jobs/%s/phases" % key,
                                       {"volume": rng.randint(1, 100) * GiB}, uid=USER1)
                    assert st == 201, (st, js)
                    m.jobs[key]["phase"] = js["id"]
                    if js["state"] == "granted":
                        m.granted.add(js["id"])
                else:
                    kind, key = "finish", (key, pid)
                    st, js = d.request("POST", "/v1/phases/%d/finish" % pid, uid=USER1)
                    assert st == 200, (st, js)
                    m.jobs[key[0]]["phase"] = None
                    m.granted.discard(pid)
                    if js["state"] == "finished":
                        m.finished.add(pid)
            elif op < 0.85:
                if m.pbufs and rng.random() < 0.4:
                    kind, key = "pdestroy", rng.choice(list(m.pbufs))
                    st, js = d.request("DELETE", "/v1/persistent/%s" % key, uid=SLURM_UID)
                    assert st == 200, (st, js)
                    del m.pbufs[key]
                else:
                    kind, key = "pcreate", "pb%d" % m.n
                    st, js = d.request("POST", "/v1/persistent",
                                       {"name": key, "capacity": rng.randint(1, 300) * GiB,
                                        "uid": USER1}, uid=SLURM_UID)
                    if st == 201:
                        m.pbufs[key] = nodes_of(js)
                    else:
                        assert st == 507, (st, js)
            else:
                kind, key = "end", rng.choice(jobs)
                st, js = d.request("DELETE", "/v1/jobs/%s" % key, uid=SLURM_UID)
                assert st == 200, (st, js)
                pid = m.jobs[key]["phase"]
                m.granted.discard(pid)
                del m.jobs[key]
        except (ConnectionError, http.client.HTTPException):
            # a connection cut (reset, closed without an answer, refused) is the
            # kill only once the test has killed the daemon: before, it is a bug
            if not killed.is_set():
                raise
            m.uncertain.append((kind, key))
            return


def verify(d, m):
    jobs = {j["id"]: j for j in d.ok("GET", "/v1/jobs", uid=SLURM_UID)["jobs"]}
    pbufs = {b["name"]: b for b in d.ok("GET", "/v1/persistent", uid=SLURM_UID)["persistent"]}
    unc = dict(m.uncertain)
    unc_keys = set(k if not isinstance(k, tuple) else k[0] for _, k in m.uncertain)
    # adopt the outcome of the cut requests
    for kind, key in m.uncertain:
        if kind == "register" and key in jobs:
            m.jobs[key] = {"alloc": None, "phase": None}
        elif kind in ("alloc", "release") and key in m.jobs:
            a = jobs[key]["allocation"] if key in jobs else None
            m.jobs[key]["alloc"] = nodes_of(a) if a else None
        elif kind == "phase" and key in m.jobs:
            p = jobs[key]["phase"] if key in jobs else None
            m.jobs[key]["phase"] = p["id"] if p else None
        elif kind == "finish" and key[0] in m.jobs:
            p = jobs[key[0]]["phase"]
            if p is None:
                m.jobs[key[0]]["phase"] = None
                m.granted.discard(key[1])
        elif kind == "end" and key not in jobs:
            m.jobs.pop(key, None)
        elif kind == "pcreate" and key in pbufs:
            m.pbufs[key] = nodes_of(pbufs[key])
        elif kind == "pdestroy" and key not in pbufs:
            m.pbufs.pop(key, None)
    m.uncertain = []
    # exactly what was acknowledged
    assert sorted(jobs) == sorted(m.jobs), "jobs differ (uncertain: %s)" % unc
    for jid, mj in m.jobs.items():
        j = jobs[jid]
        got = nodes_of(j["allocation"]) if j["allocation"] else None
        assert got == mj["alloc"], "allocation of %s: %s != %s" % (jid, got, mj["alloc"])
        p = j["phase"]
        assert (p["id"] if p else None) == mj["phase"], "open phase of %s" % jid
        if p and p["id"] in m.granted:
            assert p["state"] == "granted", "grant of phase %d lost" % p["id"]
    assert sorted(pbufs) == sorted(m.pbufs)
    for name, nodes in m.pbufs.items():
        assert nodes_of(pbufs[name]) == nodes
    for pid in list(m.finished)[-20:]:
        st, js = d.request("GET", "/v1/phases/%d" % pid, uid=SLURM_UID)
        assert st == 200 and js["state"] == "finished", (pid, st, js)
    # nothing orphaned: node usage is exactly the allocations plus persistent buffers
    used = {}
    for mj in m.jobs.values():
        for n, b in mj["alloc"] or []:
            used[n] = used.get(n, 0) + b
    for nodes in m.pbufs.values():
        for n, b in nodes:
            used[n] = used.get(n, 0) + b
    for n in d.ok("GET", "/v1/nodes", uid=SLURM_UID)["nodes"]:
        assert n["used"] == used.get(n["name"], 0), "node %s used %d != %d" % (
            n["name"], n["used"], used.get(n["name"], 0))
    return unc_keys


def test_sigkill_recovery(make_daemon):
    print("HARMONIA_CRASH_SEED=%d" % SEED)
    rng = random.Random(SEED)
    d = make_daemon(policy={"id": "fairshare", "overprovision": 1.5}, log={"level": os.environ.get("HARMONIA_CRASH_LOG", "info")})
    m = Model()
    for it in range(ITERS):
        stop, killed = threading.Event(), threading.Event()
        wrng = random.Random(rng.random())
        errors = []

        def run():
            try:
                workload(d, m, wrng, stop, killed)
            except Exception as e:      # an assertion or an unexpected error
                errors.append(e)
        th = threading.Thread(target=run)
        th.start()
        time.sleep(rng.uniform(0.01, 0.3))    # a random point in the workload
        killed.set()            # before the kill: its effects may come at once
        d.kill(signal.SIGKILL)
        stop.set()
        th.join(30)
        assert not errors, "seed %d iteration %d: %r" % (SEED, it, errors[0])
        d.start()
        try:
            verify(d, m)
        except AssertionError as e:
            keep = os.environ.get("HARMONIA_CRASH_KEEP")
            if keep:        # the daemon's log and database, for a post-mortem
                import shutil
                shutil.copytree(d.dir, keep, dirs_exist_ok=True)
            raise AssertionError("seed %d iteration %d: %s" % (SEED, it, e))
    # the recovery was logged each time, and a clean stop still works
    assert d.log_text().count("recovered ") == ITERS + 1
    assert d.stop() == 0
