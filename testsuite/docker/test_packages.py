# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian packages the Docker cluster's images were installed from
(debian/, doc/install.md), as a site meets them.

scripts/cluster-docker test sets HARMONIA_DEB_DIR to the directory of the .deb
files of the release under test (made by dpkg-buildpackage inside that
release's image) and HARMONIA_IMAGE to the image that installed them.

- dpkg itself refuses the plugin package next to another slurmctld release than
  the one it was built for, and accepts it next to any Debian revision of that
  release (a private dpkg database under a temporary root: the package manager's
  own decision, not a comparison of strings);
- lintian, of the release the packages are for, reports no error and no warning;
- in the image, the packages are installed, their units start nothing without
  /etc/harmonia/bbmgr.yaml, and the files a site needs are where doc/install.md
  says.
"""
import glob
import os
import re
import subprocess

import pytest

DEB_DIR = os.environ.get("HARMONIA_DEB_DIR")
IMAGE = os.environ.get("HARMONIA_IMAGE")
PROJECT = os.environ.get("HARMONIA_DOCKER_PROJECT")

pytestmark = pytest.mark.skipif(not DEB_DIR or not PROJECT,
                                reason="HARMONIA_DEB_DIR and HARMONIA_DOCKER_PROJECT not set "
                                       "(run by scripts/cluster-docker test)")


def deb(name):
    found = glob.glob(os.path.join(DEB_DIR, name + "_*.deb"))
    assert len(found) == 1, "%s: %r in %s" % (name, found, DEB_DIR)
    return found[0]


def field(path, name):
    return subprocess.run(["dpkg-deb", "-f", path, name], capture_output=True, text=True,
                          check=True).stdout.strip()


def built_slurm(plugin_deb):
    """The (>= V) bound on slurmctld in the plugin package's Depends."""
    m = re.search(r"slurmctld \(>= ([0-9.]+)\)", field(plugin_deb, "Depends"))
    assert m, field(plugin_deb, "Depends")
    return m.group(1)


def fake_root(tmp_path, plugin_deb, slurmctld_version):
    """A root with a dpkg database holding slurmctld at this version and every
    other dependency of the plugin package."""
    root = tmp_path / ("root-" + slurmctld_version)
    admin = root / "var/lib/dpkg"
    (admin / "updates").mkdir(parents=True)
    (admin / "info").mkdir()
    (admin / "available").write_text("")
    arch = field(plugin_deb, "Architecture")
    names = {"slurmctld": slurmctld_version}
    for dep in field(plugin_deb, "Depends").split(","):
        first = dep.split("|")[0].strip()
        name = first.split()[0].split(":")[0]
        names.setdefault(name, "99:1")
    stanzas = ["Package: %s\nStatus: install ok installed\nPriority: optional\n"
               "Maintainer: test <test@example.org>\nArchitecture: %s\nVersion: %s\n"
               "Description: stand-in for the test\n" % (n, arch, v)
               for n, v in sorted(names.items())]
    (admin / "status").write_text("\n".join(stanzas))
    return root


def dpkg_install(root, path):
    return subprocess.run(["dpkg", "--root=%s" % root, "--force-script-chrootless",
                           "--log=/dev/null", "-i", path], capture_output=True, text=True)


def next_micro(v):
    a, b, c = v.split(".")
    return "%s.%s.%d" % (a, b, int(c) + 1)


def prev_micro(v):
    a, b, c = v.split(".")
    assert int(c) > 0, v
    return "%s.%s.%d" % (a, b, int(c) - 1)


def test_plugin_package_refused_by_another_slurmctld_release(tmp_path):
    plugin = deb("harmonia-slurm-plugins")
    v = built_slurm(plugin)
    for other in (prev_micro(v) + "-1", next_micro(v) + "-1"):
        p = dpkg_install(fake_root(tmp_path, plugin, other), plugin)
        out = p.stdout + p.stderr
        assert p.returncode != 0, out
        assert "dependency problems" in out and "slurmctld" in out, out
        assert "Version of slurmctld on system is %s" % other in out, out


def test_plugin_package_accepted_by_its_slurmctld_release(tmp_path):
    plugin = deb("harmonia-slurm-plugins")
    v = built_slurm(plugin)
    for same in (v + "-1", v + "-4+deb12u3", v + "-4+deb13u1"):
        root = fake_root(tmp_path, plugin, same)
        p = dpkg_install(root, plugin)
        assert p.returncode == 0, p.stdout + p.stderr
        so = glob.glob(str(root / "usr/lib/*/slurm-wlm/burst_buffer_harmonia.so"))
        assert so, "no burst_buffer_harmonia.so installed under %s" % root


def test_lintian_reports_no_error_or_warning():
    """lintian of the packages' own release, run in its image."""
    changes = glob.glob(os.path.join(DEB_DIR, "*.changes"))
    assert len(changes) == 1, changes
    p = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v",
                        "%s:/debs:ro" % DEB_DIR, "--entrypoint", "lintian", IMAGE,
                        "--pedantic", "/debs/" + os.path.basename(changes[0])],
                       capture_output=True, text=True, timeout=600)
    tags = [line for line in p.stdout.splitlines() if re.match(r"^[EW]: ", line)]
    assert not tags, "\n".join(tags)
    assert p.returncode == 0, p.stdout + p.stderr


def ctl(command):
    p = subprocess.run(["docker", "exec", PROJECT + "-ctl", "bash", "-c", command],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, "%s: %s%s" % (command, p.stdout, p.stderr)
    return p.stdout


def test_image_runs_the_installed_packages():
    status = ctl("dpkg-query -W -f='${Package} ${Status}\\n' bbmgrd bbnoded harmonia-client "
                 "harmonia-common libharmonia0 libharmonia-dev harmonia-slurm-plugins")
    for line in status.splitlines():
        assert line.endswith("install ok installed"), status
    files = ctl("dpkg -L bbmgrd bbnoded harmonia-client harmonia-common harmonia-slurm-plugins "
                "libharmonia-dev")
    for want in ("/usr/sbin/bbmgrd", "/usr/sbin/bbnoded", "/etc/logrotate.d/bbmgrd",
                 "systemd/system/bbmgrd.service", "systemd/system/bbnoded.service",
                 "/usr/share/man/man8/bbmgrd.8.gz", "/usr/share/man/man5/harmonia.conf.5.gz",
                 "/usr/share/doc/harmonia-common/examples/bbmgr.yaml.example",
                 "/usr/share/doc/harmonia-slurm-plugins/examples/harmonia.conf.example",
                 "slurm-wlm/burst_buffer_harmonia.so", "slurm-wlm/job_submit_harmonia.so",
                 "/usr/include/harmonia/harmonia.h", "pkgconfig/harmonia.pc",
                 "/usr/sbin/harmonia-epilog", "/usr/share/man/man8/harmonia-epilog.8.gz"):
        assert want in files, "%s not installed by the packages" % want
    # no configuration is shipped: the units' condition keeps them stopped
    assert "/etc/harmonia/bbmgr.yaml\n" not in files
    for unit in ("bbmgrd", "bbnoded"):
        text = ctl("cat $(dpkg -L %s | grep 'systemd/system/%s.service$')" % (unit, unit))
        assert "ConditionPathExists=/etc/harmonia/bbmgr.yaml" in text, text
    # the running daemons are the packaged ones
    assert ctl("readlink /proc/$(pgrep -o -x bbmgrd)/exe").strip() == "/usr/sbin/bbmgrd"
    # libharmonia-dev: an application builds against it with pkg-config
    ctl("printf '#include <harmonia/harmonia.h>\\nint main(void) { return 0; }\\n' > /tmp/t.c "
        "&& cc $(pkg-config --cflags harmonia) /tmp/t.c $(pkg-config --libs harmonia) -o /tmp/t "
        "&& /tmp/t")
