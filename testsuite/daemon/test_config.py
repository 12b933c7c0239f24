# SPDX-License-Identifier: GPL-2.0-or-later
"""bbmgr.yaml: bad files refuse to start (file:line:col: reason), SIGHUP reloads or
keeps the running configuration, documentation generated from the key table, the
example configuration, systemd notification and clean stop."""
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import BBMGR, BBMGRD, SRCDIR, SLURM_UID, USER1, free_port

GOOD = """\
listen:
  address: 127.0.0.1
  port: 7470
state:
  dir: /tmp/x
nodes:
  - names: bb[1-2]
    capacity: 1TiB
    bandwidth: 1 GB/s
    mount: /mnt/bb
"""

BAD = [
    # (text, line, col, reason)
    (GOOD + "colour: blue\n", 11, 1, "unknown section 'colour'"),
    (GOOD.replace("  port: 7470", "  port: 7470\n  prot: 1"), 4, 3, "unknown key 'prot'"),
    (GOOD.replace("port: 7470", "port: seven"), 3, 9, "not an integer"),
    (GOOD.replace("port: 7470", "port: 70000"), 3, 9, "port must be in 0..65535"),
    (GOOD.replace("capacity: 1TiB", "capacity: 1 TeraByte"), 8, 15, "not a size"),
    (GOOD.replace("capacity: 1TiB", "capacity: 100"), 8, 15, "not a size"),
    (GOOD.replace("bandwidth: 1 GB/s", "bandwidth: fast"), 9, 16, "not a bandwidth"),
    (GOOD.replace("names: bb[1-2]", "names: bb[2-1]"), 7, 12, "decreasing"),
    (GOOD.replace("    mount: /mnt/bb\n", ""), 7, 5, "missing required key 'mount'"),
    (GOOD.replace("mount: /mnt/bb", "mount: relative"), 10, 12, "absolute path"),
    (GOOD + "policy:\n  id: bogus\n", 12, 7, "policy"),
    (GOOD + "policy:\n  overprovision: 0.5\n", 12, 18, "between 1 and 16"),
    (GOOD.replace("    mount: /mnt/bb\n", "    mount: /mnt/bb\n    pool: nvme\n"), 7, 5,
     "pool 'nvme' is not defined"),
    (GOOD + "  - names: bb2\n    capacity: 1TiB\n    bandwidth: 1 GB/s\n    mount: /m\n",
     11, 5, "declared twice"),
    (GOOD + "listen:\n  port: 1\n", 11, 1, "duplicate section"),
    (GOOD.replace("  port: 7470", "  port: [1, 2]"), 3, 9, "expected a integer"),
    ("listen: {address: 127.0.0.1\n", 2, 1, "flow mapping"),
    (GOOD + "auth:\n  type: kerberos\n", 12, 9, "not one of munge, none"),
    (GOOD + "auth:\n  session_ttl: 2d\n", 12, 16, "between 0 (no sessions) and 1d"),
    (GOOD + "auth:\n  session_ttl: -5s\n", 12, 16, "is negative"),
    (GOOD + "devices:\n  - name: d\n    msca: [0.5, 1]\n", 13, 11, "MSCA(1) must be 0"),
]


@pytest.mark.parametrize("text,line,col,reason", BAD)
def test_bad_config_refused(tmp_path, text, line, col, reason):
    path = tmp_path / "bbmgr.yaml"
    path.write_text(text)
    for cmd in ([BBMGRD, "--check", "-c", str(path)], [BBMGRD, "-f", str(path)],
                [BBMGR, "config", "check", str(path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        assert r.returncode == 1, (cmd, r.stdout, r.stderr)
        m = re.search(r"%s:(\d+):(\d+): (.*)" % re.escape(str(path)), r.stderr)
        assert m, r.stderr
        assert (int(m.group(1)), int(m.group(2))) == (line, col), r.stderr
        assert reason in m.group(3), r.stderr


def test_good_config_and_help(tmp_path):
    path = tmp_path / "bbmgr.yaml"
    path.write_text(GOOD)
    r = subprocess.run([BBMGR, "config", "check", str(path)], capture_output=True, text=True)
    assert r.returncode == 0 and "2 buffer nodes" in r.stdout
    h = subprocess.run([BBMGR, "config", "--help"], capture_output=True, text=True).stdout
    for key in ("listen.port", "state.dir", "auth.slurm_user", "policy.overprovision",
                "limits.max_body", "nodes.names", "devices.msca", "pools.granularity"):
        assert key in h, key


def test_man_page_is_generated_from_the_table():
    r = subprocess.run([BBMGR, "config", "--man"], capture_output=True, text=True)
    with open(os.path.join(SRCDIR, "doc", "bbmgr.yaml.5")) as f:
        assert r.stdout == f.read(), "doc/bbmgr.yaml.5 is stale: bbmgr config --man > doc/bbmgr.yaml.5"


def wait_log(d, text, timeout=15):
    """Wait until bbmgrd's log holds text (the daemon says it did the reload)."""
    deadline = time.time() + timeout
    while text not in d.log_text():
        assert time.time() < deadline, "no '%s' in bbmgrd's log" % text
        assert d.proc.poll() is None, "bbmgrd exited"
        time.sleep(0.05)


def test_bad_reload_keeps_running_config(make_daemon):
    d = make_daemon(policy={"id": "fcfs"})
    good = open(d.config).read()
    d.write_config(good.replace("id: \"fcfs\"", "id: \"no-such\""))
    d.proc.send_signal(signal.SIGHUP)
    wait_log(d, "keeping the running configuration")
    assert d.proc.poll() is None
    assert d.ok("GET", "/v1/policy", uid=USER1)["id"] == "fcfs"
    # a good reload: new policy, a node added, one removed (drained, kept)
    conf = good.replace("id: \"fcfs\"", "id: \"maxsyseff\"").replace(
        "names: \"hd[1-2]\"", "names: \"hd[2-3]\"")
    d.write_config(conf)
    d.proc.send_signal(signal.SIGHUP)
    for _ in range(50):
        if d.ok("GET", "/v1/policy", uid=USER1)["id"] == "maxsyseff":
            break
        time.sleep(0.05)
    assert d.ok("GET", "/v1/policy", uid=USER1)["id"] == "maxsyseff"
    nodes = {n["name"]: n for n in d.ok("GET", "/v1/nodes", uid=USER1)["nodes"]}
    assert "hd3" in nodes and nodes["hd3"]["state"] == "up"
    assert nodes["hd1"]["state"] == "drained" and nodes["hd1"]["configured"] is False
    # a restart-only key changed: warned about, not applied
    d.write_config(conf.replace("connection_timeout: \"2s\"", "connection_timeout: \"3s\""))
    d.proc.send_signal(signal.SIGHUP)
    wait_log(d, "limits.connection_timeout changed: takes effect at the next restart")
    assert d.ok("GET", "/v1/policy", uid=USER1)["id"] == "maxsyseff"


def test_notify_ready_and_clean_stop(make_daemon, tmp_path):
    d = make_daemon(start=False)
    sock_path = str(tmp_path / "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(10)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    logf = open(d.log, "a")
    d.proc = subprocess.Popen([BBMGRD, "-f", "-c", d.config], stdout=logf,
                              stderr=subprocess.STDOUT, env=env)
    msg = s.recv(4096).decode()
    assert "READY=1" in msg
    # READY means the API answers now
    assert d.request("GET", "/v1/status", uid=USER1)[0] == 200
    d.proc.send_signal(signal.SIGTERM)
    assert "STOPPING=1" in s.recv(4096).decode()
    assert d.proc.wait(10) == 0
    d.proc = None
    assert not os.path.exists(d.unix)
    s.close()


def test_example_config_starts(tmp_base, munge):
    """etc/bbmgr.yaml.example runs as shipped, with only its paths and port moved
    into the test's directory; bbmgr status answers."""
    with open(os.path.join(SRCDIR, "etc", "bbmgr.yaml.example")) as f:
        text = f.read()
    port = free_port()
    sock = os.path.join(tmp_base, "bbmgrd.sock")
    text = (text.replace("port: 7470", "port: %d" % port)
            .replace("/run/harmonia/bbmgrd.sock", sock)
            .replace("/var/lib/harmonia", os.path.join(tmp_base, "state"))
            .replace('munge_socket: ""', 'munge_socket: "%s"' % munge.socket))
    path = os.path.join(tmp_base, "bbmgr.yaml")
    with open(path, "w") as f:
        f.write(text)
    log = open(os.path.join(tmp_base, "log"), "w")
    p = subprocess.Popen([BBMGRD, "-f", path], stdout=log, stderr=subprocess.STDOUT)
    try:
        env = dict(os.environ, HARMONIA_MUNGE_SOCKET=munge.socket)
        for url in ("unix:" + sock, "http://127.0.0.1:%d" % port):
            for _ in range(100):
                r = subprocess.run([BBMGR, "-u", url, "status"], capture_output=True, text=True,
                                   env=env)
                if r.returncode == 0:
                    break
                time.sleep(0.05)
            assert r.returncode == 0, r.stderr
            assert "policy auto" in r.stdout
        for cmd in (["nodes"], ["pools"], ["jobs"], ["schedule", "5"], ["policy"],
                    ["persistent"]):
            r = subprocess.run([BBMGR, "-u", "unix:" + sock] + cmd, capture_output=True,
                               text=True, env=env)
            assert r.returncode == 0, (cmd, r.stderr)
        r = subprocess.run([BBMGR, "-u", "unix:" + sock, "drain", "bb02", "maintenance"],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "drained" in r.stdout
        r = subprocess.run([BBMGR, "-u", "unix:" + sock, "nodes"], capture_output=True,
                           text=True, env=env)
        assert "maintenance" in r.stdout
        r = subprocess.run([BBMGR, "-u", "unix:" + sock, "policy", "minmax:0.5"],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0 and "minmax:0.5" in r.stdout
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0
