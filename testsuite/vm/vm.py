# SPDX-License-Identifier: GPL-2.0-or-later
"""A command run as root in a small virtual machine booted by qemu, on a Debian
kernel other than the machine's own (one installed from a linux-image package:
its /boot/vmlinuz-VERSION and /lib/modules/VERSION).  For the tests that need
what the machine's kernel lacks (project quotas: CONFIG_QFMT_V2, XFS_QUOTA).

The machine is 1 vCPU, no network, its console on the serial port:
  - its root is the host's own / shared read-only over 9p (virtio): the same
    programs, libraries, Python and build tree, at the same paths;
  - /tmp, /run, /var/tmp, /dev/shm are tmpfs of its own; loopback is up; a
    directory the command needs below one of them (the current directory, the
    trees HARMONIA_SRCDIR and HARMONIA_BUILDDIR name: a checkout in /tmp) is
    shared read-only at its own path over that tmpfs;
  - one host directory, OUT, is shared writable at its own path: the command's
    script (OUT/run.sh) is there, and it leaves its exit status in OUT/status;
  - an initramfs made here (busybox and the modules of virtio and 9p) mounts
    all that, switches to that root and runs the script, then powers the
    machine off; the kernel loads the other modules it needs from the host's
    /lib/modules/VERSION.
KVM when /dev/kvm works and boots the machine in KVM_BOOT seconds, qemu's
emulation (TCG) otherwise; HARMONIA_VM_ACCEL=kvm or tcg chooses.

  python3 vm.py [--timeout S] [--kernel VERSION] -- COMMAND...
runs COMMAND (in the current directory, with the environment's HARMONIA_*
variables) and exits with its status; 77 and a reason when no machine can run.
"""
import glob
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

QEMU = "qemu-system-x86_64"
BUSYBOX = "/bin/busybox"   # busybox-static
# the modules the initramfs loads (with those they need) to mount its root
BOOT_MODULES = ["virtio_pci", "9pnet_virtio", "9p"]


class NoVM(Exception):
    """No virtual machine can run here: the reason."""


def kernel_config(version):
    try:
        with open("/boot/config-" + version) as f:
            return f.read()
    except OSError:
        return ""


def find_kernel(version=None, need=("CONFIG_QFMT_V2", "CONFIG_XFS_QUOTA")):
    """(version, vmlinuz) of an installed Debian kernel with its modules and the
    configuration options need; the newest such when version is None."""
    versions = [version] if version else sorted(
        (os.path.basename(p)[len("vmlinuz-"):] for p in glob.glob("/boot/vmlinuz-*")),
        key=lambda v: [int(x) if x.isdigit() else x for x in v.replace("-", ".").split(".")],
        reverse=True)
    why = "no /boot/vmlinuz-* (install linux-image-amd64)"
    for v in versions:
        img = "/boot/vmlinuz-" + v
        if not os.path.exists(img):
            why = "no " + img
            continue
        if not os.path.isdir("/lib/modules/%s/kernel" % v):
            why = "no /lib/modules/%s for %s" % (v, img)
            continue
        conf = kernel_config(v)
        missing = [o for o in need if not any(
            line.startswith(o + "=") for line in conf.splitlines())]
        if missing:
            why = "kernel %s lacks %s" % (v, " ".join(missing))
            continue
        return v, img
    raise NoVM(why)


def modules_dep(version):
    """{module name: (its file, [the files it needs, the last first to load])}."""
    deps = {}
    base = "/lib/modules/%s/" % version
    with open(base + "modules.dep") as f:
        for line in f:
            path, _, needs = line.partition(":")
            name = os.path.basename(path).split(".ko")[0].replace("-", "_")
            deps[name] = (base + path, [base + p for p in needs.split()])
    return deps


def boot_modules(version):
    """The files of BOOT_MODULES and what they need, in an order to load them."""
    deps = modules_dep(version)
    by_path = {p: n for n, (p, _) in deps.items()}
    order = []

    def add(name):
        if name not in deps or deps[name][0] in order:
            return      # built into this kernel, or loaded already
        for p in reversed(deps[name][1]):
            add(by_path[p])
        order.append(deps[name][0])
    for m in BOOT_MODULES:
        add(m)
    return order


def decompressed(path):
    data = open(path, "rb").read()
    if path.endswith(".xz"):
        import lzma
        return lzma.decompress(data)
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    if path.endswith(".gz"):
        import gzip
        return gzip.decompress(data)
    return data


class Cpio:
    """An initramfs: a cpio archive in the kernel's "newc" format."""

    def __init__(self):
        self.out = bytearray()
        self.ino = 1

    def entry(self, name, mode, data=b"", rdev=(0, 0)):
        name = name.encode() + b"\0"
        hdr = b"070701" + b"".join(b"%08X" % v for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name), 0))
        self.ino += 1
        self.out += hdr + name
        self.out += b"\0" * (-len(self.out) % 4)
        self.out += data
        self.out += b"\0" * (-len(self.out) % 4)

    def dir(self, name):
        self.entry(name, 0o040755)

    def file(self, name, data, mode=0o755):
        self.entry(name, 0o100000 | mode, data)

    def chardev(self, name, major, minor):
        self.entry(name, 0o020600, rdev=(major, minor))

    def bytes(self):
        self.entry("TRAILER!!!", 0)
        return bytes(self.out) + b"\0" * (-len(self.out) % 512)


INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules); do insmod /lib/modules/$m.ko || echo "vm: insmod $m failed"; done
out=$(sed -n 's/.*harmonia\.out=\([^ ]*\).*/\1/p' /proc/cmdline)
trees=$(sed -n 's/.*harmonia\.trees=\([^ ]*\).*/\1/p' /proc/cmdline)
r=/root
o="-o trans=virtio,version=9p2000.L,msize=262144"
root=no
if mount -t 9p $o,ro,cache=loose host $r; then
    root=yes
    mount -t proc proc $r/proc
    mount -t sysfs sysfs $r/sys
    mount -t devtmpfs devtmpfs $r/dev
    mkdir -p $r/dev/pts $r/dev/shm
    mount -t devpts devpts $r/dev/pts
    for d in /dev/shm /tmp /run /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs $r$d; done
    i=0
    for t in $(echo "$trees" | tr , ' '); do
        mkdir -p $r$t
        mount -t 9p $o,ro,cache=loose tree$i $r$t || echo "vm: cannot mount $t"
        i=$((i + 1))
    done
    mkdir -p $r$out
fi
if [ $root = yes ] && mount -t 9p $o,cache=none out $r$out; then
    ip link set lo up || ifconfig lo 127.0.0.1 up
    echo "vm: running $out/run.sh"
    # the host's root becomes the machine's: the kernel's request_module() runs
    # its /sbin/modprobe, for the modules of the kernel's own /lib/modules
    exec switch_root $r /bin/sh -c "cd / && /bin/sh $out/run.sh; echo \$? > $out/status;
        sync; echo o > /proc/sysrq-trigger; while :; do read x < /dev/console; done"
else
    echo "vm: cannot mount the shares"
fi
echo "vm: powering off"
poweroff -f
"""


def initramfs(version, path):
    """Write the initramfs of kernel version to path."""
    c = Cpio()
    for d in ("bin", "dev", "proc", "sys", "root", "lib", "lib/modules"):
        c.dir(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3)
    c.file("bin/busybox", open(BUSYBOX, "rb").read())
    c.file("init", INIT.encode())
    names = []
    for p in boot_modules(version):
        m = os.path.basename(p).split(".ko")[0]
        c.file("lib/modules/%s.ko" % m, decompressed(p), 0o644)
        names.append(m)
    c.file("modules", ("\n".join(names) + "\n").encode(), 0o644)
    with open(path, "wb") as f:
        f.write(c.bytes())


def kvm_usable():
    """None when qemu can use KVM here, else why not."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return "/dev/kvm: %s" % e.strerror
    os.close(fd)
    return None


# What the machine mounts tmpfs of its own on.
MASKED = ("/tmp", "/run", "/var/tmp", "/dev/shm")


def masked_trees(paths):
    """The directories just below a MASKED one that hold any of paths (which the
    machine's tmpfs would hide), sorted."""
    trees = set()
    for p in paths:
        p = os.path.realpath(p)
        for m in MASKED:
            if p.startswith(m + "/"):
                trees.add(m + "/" + p[len(m) + 1:].split("/")[0])
    for t in trees:
        if "," in t or any(c.isspace() for c in t):
            raise AssertionError("vm: cannot share %r with the machine (a comma or a space "
                                 "in its name)" % t)
    return sorted(trees)


def qemu_argv(version, kernel, initrd, out, accel, memory, trees=()):
    cpu = "host" if accel == "kvm" else "max"
    shares = []
    for i, t in enumerate(trees):
        shares += ["-virtfs", "local,path=%s,mount_tag=tree%d,security_model=passthrough,"
                   "readonly=on,multidevs=remap" % (t, i)]
    return [QEMU, "-accel", accel, "-cpu", cpu, "-smp", "1", "-m", str(memory),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 loglevel=4 harmonia.out=" + out
            + (" harmonia.trees=" + ",".join(trees) if trees else ""),
            "-virtfs", "local,path=/,mount_tag=host,security_model=passthrough,"
            "readonly=on,multidevs=remap",
            "-virtfs", "local,path=%s,mount_tag=out,security_model=passthrough,"
            "multidevs=remap" % out] + shares


def run(argv, out, timeout=600, version=None, memory=512, log=sys.stdout, cwd=None,
        env_names=("HARMONIA_",), modules=()):
    """Run argv as root in the machine, in cwd (default: the current directory),
    with the environment variables whose names begin with env_names, once the
    modules are loaded (those no device or mount asks the kernel for: loop).
    out: a host directory of the caller's, shared writable.  Its exit status;
    the console's output written to log.  Raises NoVM when no machine can run."""
    if not shutil.which(QEMU):
        raise NoVM("no %s (install qemu-system-x86)" % QEMU)
    if not os.access(BUSYBOX, os.X_OK):
        raise NoVM("no %s (install busybox-static)" % BUSYBOX)
    version, kernel = find_kernel(version)
    out = os.path.realpath(out)
    env = "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in sorted(os.environ.items())
                  if k.startswith(tuple(env_names)))
    with open(os.path.join(out, "run.sh"), "w") as f:
        f.write("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
                "export HOME=/root LANG=C.UTF-8\n%s%scd %s || exit 99\nexec %s\n"
                % (env, "modprobe -a %s || exit 99\n" % shlex.join(modules) if modules else "",
                   shlex.quote(cwd or os.getcwd()), shlex.join(argv)))
    status = os.path.join(out, "status")
    if os.path.exists(status):
        os.unlink(status)
    with tempfile.TemporaryDirectory(prefix="harmonia-vm-") as tmp:
        initrd = os.path.join(tmp, "initramfs")
        initramfs(version, initrd)
        trees = masked_trees([cwd or os.getcwd()] + [os.environ[k] for k in (
            "HARMONIA_SRCDIR", "HARMONIA_BUILDDIR") if os.environ.get(k)])
        for accel in accelerators(log):
            cmd = qemu_argv(version, kernel, initrd, out, accel, memory, trees)
            print("vm: kernel %s, %s\n+ %s" % (version, accel, shlex.join(cmd)), file=log,
                  flush=True)
            booted = boot(cmd, log, timeout, KVM_BOOT if accel == "kvm" else None)
            if os.path.exists(status):
                return int(open(status).read().strip() or 99)
            if accel == "kvm" and not booted:
                print("vm: KVM did not boot the machine in %d s: qemu emulates (TCG) from "
                      "now on" % KVM_BOOT, file=log, flush=True)
                _kvm_fails.append(True)
                continue
            raise AssertionError("vm: the command left no status (see the console above)")
    raise AssertionError("vm: no accelerator")


# A machine that KVM runs reaches its command in a few seconds; one that it does
# not run (KVM offered by a hypervisor that does not nest it) may hang at its
# first instruction in long mode: then qemu's emulation, for this process's life.
KVM_BOOT = 20
_kvm_fails = []


def accelerators(log):
    """The accelerators to try, in their order (HARMONIA_VM_ACCEL: kvm or tcg)."""
    forced = os.environ.get("HARMONIA_VM_ACCEL")
    if forced:
        return [forced]
    why = kvm_usable() or (_kvm_fails and "it did not boot a machine")
    if why:
        print("vm: no KVM (%s): qemu emulates (TCG)" % why, file=log, flush=True)
        return ["tcg"]
    return ["kvm", "tcg"]


def boot(cmd, log, timeout, boot_timeout=None):
    """Run qemu's cmd, its console copied to log, for at most timeout seconds (an
    AssertionError then); stopped when boot_timeout is given and the machine has
    not reached its command by then.  Whether it did."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    booted = threading.Event()

    def copy():
        for line in iter(p.stdout.readline, b""):
            line = line.decode(errors="replace")
            if line.startswith("vm: running"):
                booted.set()
            log.write(line)
    reader = threading.Thread(target=copy, daemon=True)
    reader.start()
    try:
        if boot_timeout is not None and not booted.wait(boot_timeout):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=max(1, timeout - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        reader.join(5)
        raise AssertionError("vm: the machine did not power off in %d s" % timeout)
    reader.join(5)
    print("vm: qemu exited %d after %.1f s" % (p.returncode, time.monotonic() - t0),
          file=log, flush=True)
    return booted.is_set()


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--kernel", help="a VERSION of /boot/vmlinuz-VERSION")
    ap.add_argument("--memory", type=int, default=512, help="MiB")
    ap.add_argument("--modules", default="", help="modules to load first (a,b,...)")
    ap.add_argument("command", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="harmonia-vm-out-") as out:
        os.chmod(out, 0o755)
        try:
            return run(a.command, out, a.timeout, a.kernel, a.memory,
                       modules=[m for m in a.modules.split(",") if m])
        except NoVM as e:
            print("no virtual machine can run here: %s" % e)
            return 77


if __name__ == "__main__":
    sys.exit(main())
