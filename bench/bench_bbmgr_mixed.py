#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench_bbmgr_mixed.py — the rest of bbmgrd's API as a load, for the valgrind run.

bench_bbmgr_load drives phase request/finish round trips only; this driver walks,
in a loop until --seconds have passed, the life of a job through everything else
the daemon does (each request with its own MUNGE credential, encoded with libmunge
as the SlurmUser or as the job's user):

  register (SlurmUser) -> begin -> hints (user) -> allocation -> stage-in of a
  file and a directory, copied by the mover (polled until done) -> phases: request
  (with a long-poll wait), progress, GET, finish, a cancelled waiting phase ->
  persistent buffer create / use / list / unuse / destroy -> stage-out (mover) ->
  GET of jobs, job, phases, nodes, node, pools, schedule, policy, status, history,
  /metrics -> every few cycles a policy change and a node drain / resume -> bad
  requests (4xx: no or forged credential, replayed credential, bad JSON, unknown
  field, body too large, unknown route, wrong method, other user's job, ...,
  malformed HTTP, a connection dropped mid-body) -> allocation release, job end.

Every --hup-every seconds it rewrites the daemon's configuration (alternately: one
more node group; a broken file, which the daemon must refuse and keep running; the
original) and sends SIGHUP to --pid.  The last cycle leaves a job running (an
allocation, an open phase, a persistent buffer in use, a transfer started), so that
the daemon's shutdown frees live state too.

Must run as root (it encodes credentials as other uids with seteuid, and makes
the PFS files of the job's user).  Prints one line of key=value figures; exits 1
if a request got an unexpected status.
"""
import argparse
import ctypes
import http.client
import json
import os
import signal
import socket
import sys
import time

SLURM_UID = 4242
USERS = (1001, 1002)
MiB = 1 << 20


class Munge:
    def __init__(self, sockpath):
        self.lib = ctypes.CDLL("libmunge.so.2")
        self.lib.munge_ctx_create.restype = ctypes.c_void_p
        self.lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_int]
        self.lib.munge_strerror.restype = ctypes.c_char_p
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.ctx = ctypes.c_void_p(self.lib.munge_ctx_create())
        rc = self.lib.munge_ctx_set(self.ctx, 8, ctypes.c_char_p(sockpath.encode()))  # SOCKET
        if rc != 0:
            raise RuntimeError("munge_ctx_set socket: %d" % rc)

    def cred(self, method, path, uid=0):
        payload = ("%s %s" % (method, path.split("?")[0])).encode()
        out = ctypes.c_char_p()
        if uid:
            os.setegid(uid)
            os.seteuid(uid)
        try:
            rc = self.lib.munge_encode(ctypes.byref(out), self.ctx, payload, len(payload))
        finally:
            if uid:
                os.seteuid(0)
                os.setegid(0)
        if rc != 0:
            raise RuntimeError("munge_encode: %s" % self.lib.munge_strerror(rc).decode())
        s = out.value.decode()
        self.libc.free(ctypes.cast(out, ctypes.c_void_p))
        return s


class Driver:
    def __init__(self, a):
        self.a = a
        self.host, port = a.url[len("http://"):].split(":")
        self.port = int(port)
        self.munge = Munge(a.munge_socket)
        self.conn = None
        self.requests = 0
        self.by_class = {}
        self.unexpected = 0
        self.counts = {}

    # ---- HTTP
    def connect(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        return self.conn

    def request(self, method, path, body=None, uid=SLURM_UID, auth=True, raw=None,
                cred=None, expect=(200, 201), what=None):
        hdrs = {}
        if auth:
            hdrs["Authorization"] = "MUNGE " + (cred or self.munge.cred(method, path, uid))
        data = None
        if body is not None:
            data = json.dumps(body).encode()
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode()
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        for attempt in range(2):
            c = self.connect()
            try:
                c.request(method, path, body=data, headers=hdrs)
                resp = c.getresponse()
                text = resp.read().decode()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                self.conn = None
                if attempt:
                    raise
        if resp.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = None
        self.requests += 1
        k = "%dxx" % (resp.status // 100)
        self.by_class[k] = self.by_class.get(k, 0) + 1
        tag = what or method + " " + path.split("?")[0]
        if resp.status not in expect:
            self.unexpected += 1
            if self.unexpected <= 20:
                print("mixed: %s %s -> %d (expected %s): %s" % (method, path, resp.status,
                      expect, text[:300]), file=sys.stderr)
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if (resp.getheader("Content-Type") or "").startswith("application/json") and text:
            try:
                return resp.status, json.loads(text)
            except ValueError:
                pass
        return resp.status, text

    def ok(self, method, path, body=None, uid=SLURM_UID, expect=(200, 201), **kw):
        return self.request(method, path, body, uid=uid, expect=expect, **kw)[1]

    def bad(self, method, path, body=None, uid=SLURM_UID, expect=(400,), **kw):
        """A request that must be refused with one of the 4xx codes in expect."""
        return self.request(method, path, body, uid=uid, expect=expect, **kw)[0]

    def raw_socket(self, data, read=True, expect=()):
        """Bytes straight on a fresh connection (malformed HTTP, a dropped body);
        a reply, if read, must have a status in expect (505 is counted as "raw_505",
        the right answer to an unknown HTTP version, not as a server error)."""
        s = socket.create_connection((self.host, self.port), timeout=60)
        try:
            s.sendall(data)
            if not read:
                return b""
            out = b""
            while True:
                try:
                    b = s.recv(65536)
                except socket.timeout:
                    break
                if not b:
                    break
                out += b
                if b"\r\n\r\n" in out:
                    break
            self.requests += 1
            st = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/") else 0
            k = "raw_505" if st == 505 else "%dxx" % (st // 100) if st else "closed"
            self.by_class[k] = self.by_class.get(k, 0) + 1
            if st not in expect:
                self.unexpected += 1
                print("mixed: raw %r... -> %d (expected %s)" % (data[:30], st, expect),
                      file=sys.stderr)
            return out
        finally:
            s.close()

    # ---- the mover's files
    def pfs_tree(self, n, uid):
        root = os.path.join(self.a.pfs, "in%d" % n)
        os.makedirs(os.path.join(root, "sub"), exist_ok=True)
        for name, size in (("a", 4096), ("sub/b", 3 * MiB + 17), ("sub/c", 0)):
            p = os.path.join(root, name)
            with open(p, "wb") as f:
                f.write(os.urandom(size))
            os.chown(p, uid, uid)
        for d in (root, os.path.join(root, "sub")):
            os.chown(d, uid, uid)
        return root

    def wait_xfer(self, tid, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            x = self.ok("GET", "/v1/transfers/%d" % tid)
            if isinstance(x, dict) and x.get("state") in ("done", "failed", "cancelled"):
                if x["state"] != "done":
                    self.unexpected += 1
                    print("mixed: transfer %d %s: %s" % (tid, x["state"], x.get("message")),
                          file=sys.stderr)
                return x
            time.sleep(0.1)
        self.unexpected += 1
        print("mixed: transfer %d not done after %ds" % (tid, timeout), file=sys.stderr)
        return None

    # ---- configuration reloads
    def hup(self, k):
        base = self.config_text
        if k % 3 == 0:
            text = base + ('  - {names: "bx[1-2]", capacity: 2TiB, bandwidth: 1 GB/s, '
                           'mount: "%s", pool: capacity}\n' % self.a.mount2)
        elif k % 3 == 1:
            text = base + "bogus_section: {x: 1}\n"       # refused: the running one stays
        else:
            text = base
        tmp = self.a.config + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.a.config)
        os.kill(self.a.pid, signal.SIGHUP)
        self.hups += 1

    # ---- bad requests (all must be 4xx, the daemon must stay up)
    def bad_requests(self, n, jid, other_uid):
        k = n % 4
        p = "/v1/jobs/%s" % jid
        self.bad("GET", "/v1/jobs", auth=False, expect=(401,))
        self.bad("GET", "/v1/nodes", cred="not-a-credential", expect=(401,))
        # a credential made for another request (replay)
        self.bad("GET", "/v1/nodes", cred=self.munge.cred("GET", "/v1/pools", SLURM_UID),
                 expect=(401, 403))
        self.bad("POST", "/v1/jobs", raw="{not json", expect=(400,))
        self.bad("POST", "/v1/jobs", {"id": "x%d" % n, "uid": 1001, "colour": "red"})
        self.bad("POST", "/v1/jobs", {"id": "../etc", "uid": 1001})
        self.bad("POST", "/v1/jobs", {"id": "x", "uid": -5})
        self.bad("POST", "/v1/jobs", {"id": "x%d" % n, "uid": 1001}, uid=1001, expect=(403,))
        self.bad("GET", p, uid=other_uid, expect=(403,))
        self.bad("GET", "/v1/jobs/nosuchjob%d" % n, expect=(404,))
        self.bad("GET", "/v1/nosuchthing", expect=(404,))
        self.bad("PATCH", "/v1/jobs", expect=(404, 405))
        self.bad("POST", p + "/phases", {"volume": "lots"}, uid=USERS[0] if other_uid !=
                 USERS[0] else USERS[1], expect=(400, 403))
        self.bad("GET", "/v1/phases/abc", expect=(400,))
        self.bad("GET", "/v1/phases/999999999", expect=(404,))
        self.bad("GET", "/v1/history", expect=(400,))
        self.bad("GET", "/v1/schedule?horizon=-3", expect=(400,))
        self.bad("PUT", "/v1/policy", {"id": "nosuchpolicy"}, expect=(400, 404, 409))
        self.bad("PUT", "/v1/policy", {"id": "fcfs"}, uid=1001, expect=(403,))
        self.bad("POST", "/v1/nodes/zz99/drain", {}, expect=(404,))
        self.bad("POST", "/v1/persistent", {"name": "big%d" % n, "capacity": "900PiB"},
                 uid=1001, expect=(400, 409, 422, 507))
        self.bad("POST", "/v1/jobs", raw='{"id": "%s", "pad": "%s"}' % (jid, "x" * 8000),
                 expect=(413,))
        if k == 0:
            self.raw_socket(b"GARBAGE / HTTP/9.9\r\n\r\n", expect=(505, 400))
            self.raw_socket(b"GARBAGE /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n",
                            expect=(400, 401, 404, 405, 501))
        elif k == 1:
            self.raw_socket(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " +
                            b"y" * 70000 + b"\r\n\r\n",
                            expect=(400, 413, 431))
        elif k == 2:
            # headers and half the body, then the connection goes away
            cred = self.munge.cred("POST", "/v1/jobs", SLURM_UID)
            self.raw_socket(("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: MUNGE %s\r\n"
                             "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
                             '{"id": "half' % cred).encode(), read=False)
        else:
            # a request line and no more, left open: the daemon's connection timeout
            # (5 s in the valgrind run) must close it; reaped in reap_idle()
            s = socket.create_connection((self.host, self.port), timeout=60)
            s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
            self.idle.append((time.time(), s))

    def reap_idle(self, everything=False):
        keep = []
        for t, s in self.idle:
            if everything or time.time() - t > 15:
                s.settimeout(0.5)
                try:
                    b = s.recv(100)     # closed by the daemon: b"" (or a 408)
                    self.by_class["timed_out"] = self.by_class.get("timed_out", 0) + 1
                except OSError:
                    b = None
                s.close()
                if b is None and not everything:
                    self.unexpected += 1
                    print("mixed: an idle connection was not closed by the daemon",
                          file=sys.stderr)
            else:
                keep.append((t, s))
        self.idle = keep

    # ---- one job's life
    def cycle(self, n, last=False):
        uid = USERS[n % 2]
        other = USERS[(n + 1) % 2]
        jid = "vg%d" % n
        p = "/v1/jobs/" + jid
        self.ok("POST", "/v1/jobs", {"id": jid, "uid": uid, "gid": uid, "user": "u%d" % uid,
                                     "name": "vg", "hints": {"w_iter": 5.0, "io_volume": 2e9}},
                expect=(201,))
        self.ok("POST", "/v1/jobs", {"id": jid, "uid": uid, "gid": uid, "user": "u%d" % uid,
                                     "name": "vg"}, expect=(200, 201))   # idempotent
        self.ok("PUT", p + "/hints", {"w_iter": 4.0, "io_volume": "1GiB"}, uid=uid,
                expect=(200, 201))
        pool = "nvme" if n % 3 else "capacity"
        a = self.ok("POST", p + "/allocation", {"capacity": "1GiB", "pool": pool},
                    expect=(201,))
        self.ok("GET", p + "/allocation", uid=uid)
        bb = a["nodes"][0]["path"] if isinstance(a, dict) and a.get("nodes") else None
        self.ok("POST", p + "/begin", expect=(200,))

        xfers = []
        if bb:
            src = self.pfs_tree(n, uid)
            t1 = self.ok("POST", p + "/stage_in", {"source": src + "/a", "destination": bb + "/a",
                                                   "type": "file"})
            t2 = self.ok("POST", p + "/stage_in", {"source": src, "destination": bb + "/in",
                                                   "type": "directory"})
            xfers = [t["id"] for t in (t1, t2) if isinstance(t, dict) and "id" in t]
            if not last:
                for t in xfers:
                    self.wait_xfer(t)
                self.ok("GET", p + "/stage_in", uid=uid)

        # phases: a granted one, with progress; then a waiting one cancelled
        ph = self.ok("POST", p + "/phases", {"volume": "512MiB", "direction": "write",
                                              "wait": 2}, uid=uid, expect=(200, 201))
        pid = ph.get("id") if isinstance(ph, dict) else None
        if pid:
            self.ok("GET", "/v1/phases/%d?wait=0.5" % pid, uid=uid)
            self.ok("POST", "/v1/phases/%d/progress" % pid, {"bytes": "100MiB"}, uid=uid,
                    expect=(200, 409))
            self.ok("GET", p + "/phases?limit=5", uid=uid)
            if not last:
                self.ok("POST", "/v1/phases/%d/finish" % pid, {"bytes": "500MiB"}, uid=uid)
                self.ok("POST", "/v1/phases/%d/finish" % pid, uid=uid)     # retried: recorded
                self.ok("GET", "/v1/phases/%d" % pid, uid=uid)
        if not last:
            ph = self.ok("POST", p + "/phases", {"volume": 3e9, "direction": "read"}, uid=uid,
                         expect=(201,))
            if isinstance(ph, dict) and ph.get("id"):
                self.ok("POST", "/v1/phases/%d/finish" % ph["id"], uid=uid)

        # a persistent buffer of the job's user, used by the job
        name = "pb%d" % n
        self.ok("POST", "/v1/persistent", {"name": name, "capacity": "2GiB", "pool": "nvme"},
                uid=uid, expect=(201,))
        self.ok("POST", "/v1/persistent", {"name": "adm%d" % n, "capacity": "1GiB",
                                           "uid": uid, "gid": uid}, expect=(201,))
        self.ok("POST", "/v1/persistent/%s/use" % name, {"job": jid}, uid=uid)
        self.ok("GET", "/v1/persistent/" + name, uid=other)
        self.ok("GET", "/v1/persistent", uid=uid)
        self.bad("DELETE", "/v1/persistent/" + name, uid=other, expect=(403,))
        self.ok("GET", p, uid=uid)
        self.ok("DELETE", "/v1/persistent/adm%d" % n)
        if not last:
            self.ok("DELETE", "/v1/persistent/%s/use/%s" % (name, jid), uid=uid)
            self.ok("DELETE", "/v1/persistent/" + name, uid=uid)

        if bb and not last:
            os.makedirs(os.path.join(self.a.pfs, "out"), exist_ok=True)
            os.chown(os.path.join(self.a.pfs, "out"), 0, 0)
            os.chmod(os.path.join(self.a.pfs, "out"), 0o1777)
            t3 = self.ok("POST", p + "/stage_out", {"source": bb + "/in", "destination":
                                                    os.path.join(self.a.pfs, "out", jid),
                                                    "type": "directory"})
            if isinstance(t3, dict) and "id" in t3:
                self.wait_xfer(t3["id"])
            self.ok("GET", p + "/stage_out", uid=uid)
            # a failed one: the source is outside the job's buffers
            t4 = self.ok("POST", p + "/stage_out", {"source": "/etc/hostname",
                                                    "destination": "/tmp/vg-nowhere-%d" % n})
            if isinstance(t4, dict) and "id" in t4:
                t0 = time.time()
                while time.time() - t0 < 60:
                    x = self.ok("GET", "/v1/transfers/%d" % t4["id"])
                    if not isinstance(x, dict) or x.get("state") in ("done", "failed",
                                                                     "cancelled"):
                        break
                    time.sleep(0.1)
            self.bad("PUT", "/v1/transfers/%d" % t4["id"] if isinstance(t4, dict) else
                     "/v1/transfers/1", {"state": "nonsense"}, expect=(400, 404, 409))

        # reads of the whole state
        self.ok("GET", "/v1/jobs")
        self.ok("GET", "/v1/jobs?state=running", uid=uid)
        self.ok("GET", "/v1/nodes", uid=uid)
        self.ok("GET", "/v1/nodes/bb0%d" % (1 + n % 4))
        self.ok("GET", "/v1/pools")
        self.ok("GET", "/v1/pools/nvme", uid=uid)
        self.ok("GET", "/v1/schedule?horizon=60", uid=uid)
        self.ok("GET", "/v1/schedule")
        self.ok("GET", "/v1/policy", uid=uid)
        self.ok("GET", "/v1/status", uid=uid)
        self.ok("GET", "/v1/history?user=u%d&name=vg" % uid)
        self.request("GET", "/metrics", auth=False, expect=(200,))

        if n % 4 == 0:
            pol = ("fcfs", "fairshare", "fifo", "fairshare")[(n // 4) % 4]
            self.ok("PUT", "/v1/policy", {"id": pol}, expect=(200, 400))
        if n % 5 == 0:
            node = "bb0%d" % (1 + (n // 5) % 4)
            self.ok("POST", "/v1/nodes/%s/drain" % node, {"reason": "vg test %d" % n})
            self.ok("GET", "/v1/nodes/" + node)
            self.ok("POST", "/v1/nodes/%s/resume" % node, {})

        self.bad_requests(n, jid, other)

        if not last:
            if n % 2:
                self.ok("DELETE", p + "/allocation")
            self.ok("DELETE", p)
            self.ok("GET", p, uid=uid, expect=(200, 404))

    def run(self):
        with open(self.a.config) as f:
            self.config_text = f.read()
        self.hups = 0
        self.idle = []
        t0 = time.time()
        t_end = t0 + self.a.seconds
        next_hup = t0 + self.a.hup_every
        n = 0
        while True:
            now = time.time()
            if now >= t_end:
                break
            if self.a.pid and now >= next_hup:
                self.hup(self.hups)
                next_hup += self.a.hup_every
            self.cycle(n)
            self.reap_idle()
            n += 1
        if self.a.pid and self.hups % 3 == 2:
            self.hup(2)                     # end on the original configuration
        elif self.a.pid and self.hups % 3 == 1:
            self.hup(1)
            self.hup(2)
        self.cycle(n, last=True)
        self.reap_idle(everything=True)
        dt = time.time() - t0
        if self.conn:
            self.conn.close()
        cls = " ".join("http_%s=%d" % (k, v) for k, v in sorted(self.by_class.items()))
        print("mixed_cycles=%d mixed_requests=%d mixed_req_per_s=%.1f %s hups=%d "
              "unexpected=%d mixed_seconds=%.1f" % (n + 1, self.requests, self.requests / dt, cls,
                                                     self.hups, self.unexpected, dt))
        return 1 if self.unexpected else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--munge-socket", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--pfs", required=True, help="a directory standing in for the PFS")
    ap.add_argument("--config", required=True, help="the daemon's configuration file")
    ap.add_argument("--mount2", required=True, help="mount of the node group added on reload")
    ap.add_argument("--pid", type=int, default=0, help="the daemon, for SIGHUP")
    ap.add_argument("--hup-every", type=float, default=60)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_bbmgr_mixed: needs root", file=sys.stderr)
        return 2
    os.makedirs(a.pfs, exist_ok=True)
    os.chmod(a.pfs, 0o755)
    return Driver(a).run()


if __name__ == "__main__":
    sys.exit(main())
