# SPDX-License-Identifier: GPL-2.0-or-later
"""What the Python benchmarks that run bbmgrd (auth none, on loopback) and bbnoded
share: the build tree B, a free port, JSON calls to the API, starting and stopping
the daemons."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

# the build tree: HARMONIA_BUILDDIR, or the tree above this file
B = os.environ.get("HARMONIA_BUILDDIR") or os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def call(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data,
                                 method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read().decode() or "null")


def bbmgrd_conf(d, rest):
    """d/bbmgr.yaml for a bbmgrd on a free port of 127.0.0.1 (auth none, state and log
    in d, transfers by the mover), then the lines rest; returns its path and the port."""
    port = free_port()
    conf = os.path.join(d, "bbmgr.yaml")
    with open(conf, "w") as f:
        f.write("""listen: {address: 127.0.0.1, port: %d, unix_socket: ""}
state: {dir: %s/state, durable: false}
auth: {type: none}
log: {level: warning, file: %s/log}
stage: {mode: mover}
""" % (port, d, d) + rest)
    return conf, port


def start_bbmgrd(conf, port):
    """bbmgrd -c conf, returned once it answers on port (10 s at most)."""
    p = subprocess.Popen([os.path.join(B, "bbmgr", "bbmgrd"), "-c", conf])
    for _ in range(200):
        try:
            call(port, "GET", "/v1/status")
            break
        except OSError:
            time.sleep(0.05)
    return p


def start_bbnoded(conf, port, node, *args):
    """bbnoded -c conf -n node (more options in args), returned once bbmgrd sees it up."""
    p = subprocess.Popen([os.path.join(B, "bbmgr", "bbnoded"), "-c", conf, "-n", node]
                         + list(args))
    while call(port, "GET", "/v1/nodes/" + node)["agent"]["state"] != "up":
        time.sleep(0.05)
    return p


def stop_all(procs):
    """SIGTERM to each process, the last started first, and wait for it."""
    for p in reversed(procs):
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


class FakeDiskstats:
    """The block device counters of mount as bbnoded reads them (bbnoded --diskstats
    path): add(nbytes) is another write on the device."""

    def __init__(self, path, mount):
        st = os.stat(mount)
        self.path, self.major, self.minor = path, os.major(st.st_dev), os.minor(st.st_dev)
        self.sectors = 0
        self.write()

    def write(self):
        with open(self.path + ".tmp", "w") as f:
            f.write("%d %d dev 10 0 80 5 20 0 %d 7 0 12 12\n" % (
                self.major, self.minor, self.sectors))
        os.rename(self.path + ".tmp", self.path)

    def add(self, nbytes):
        self.sectors += int(nbytes) // 512
        self.write()
