# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/slurm-source against a local Debian archive (a real HTTP server, a
real gpg signature, apt's own downloader): when 'apt-get source' cannot get a
version, the tarballs named in the suite's signed index are fetched, checked
and patched, and nothing that fails a check is unpacked.  The archive is the
mirror's attack surface: a tarball, an index or a signature that does not
match is refused and DEST is left as it was."""
import functools
import hashlib
import http.server
import io
import lzma
import os
import shutil
import subprocess
import tarfile
import threading

import pytest

from conftest import SRCDIR

TOOL = os.path.join(SRCDIR, "scripts", "slurm-source")
VERSION = "99.1.1-1"
CONFIGURE = """#!/bin/sh
mkdir -p slurm
echo '#define HAVE_CONFIG 1' > config.h
echo '#define SLURM_VERSION_NUMBER 0x630101' > slurm/slurm_version.h
"""
PATCH = """--- a/README
+++ b/README
@@ -1 +1,2 @@
 slurm
+patched by debian
"""


def _tar(members, mode):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, data, perm in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), perm
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _codename():
    with open("/etc/os-release") as f:
        for line in f:
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"')
    pytest.fail("no VERSION_CODENAME in /etc/os-release")


class Archive:
    """A one-package Debian archive under root, served on 127.0.0.1, signed by
    a key of its own; apt sources for it in etc/."""

    def __init__(self, root):
        self.root = root
        self.suite = _codename()
        self.gnupg = os.path.join(root, "gnupg")
        os.makedirs(self.gnupg, mode=0o700)
        self.keyring = self._key("Test Archive <archive@example.org>", "archive.gpg")
        self.other = self._key("Somebody Else <else@example.org>", "other.gpg")
        handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                    directory=os.path.join(root, "www"))
        handler.log_message = lambda *a: None
        os.makedirs(os.path.join(root, "www"))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.uri = "http://127.0.0.1:%d/debian" % self.httpd.server_address[1]
        self.etc = os.path.join(root, "etc")
        os.makedirs(os.path.join(self.etc, "sources.list.d"))
        with open(os.path.join(self.etc, "sources.list.d", "test.sources"), "w") as f:
            f.write("Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n"
                    % (self.uri, self.suite, self.keyring))

    def _gpg(self, *args, **kw):
        return subprocess.run(["gpg", "--batch", "--homedir", self.gnupg, *args],
                              check=True, capture_output=True, **kw)

    def _key(self, uid, name):
        self._gpg("--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
        path = os.path.join(self.root, name)
        with open(path, "wb") as f:
            f.write(self._gpg("--export", uid).stdout)
        return path

    def publish(self, tamper=None):
        """Write the pool, Sources.xz and a signed InRelease.  tamper: the
        attacker's tarball is in the pool, other than the index says ("orig"),
        named by an index other than InRelease says ("index"), or by an
        InRelease signed by another key ("signer")."""
        www = os.path.join(self.root, "www", "debian")
        shutil.rmtree(www, ignore_errors=True)
        pool = os.path.join(www, "pool", "main", "s", "slurm-wlm")
        dists = os.path.join(www, "dists", self.suite)
        os.makedirs(pool)
        os.makedirs(os.path.join(dists, "main", "source"))
        top = "slurm-99.1.1/"
        orig = _tar([(top + "README", b"slurm\n", 0o644),
                     (top + "configure", CONFIGURE.encode(), 0o755),
                     (top + "src/slurmctld/slurmctld.h", b"/* slurmctld */\n", 0o644)],
                    "w:gz")
        deb = _tar([("debian/patches/series", b"# Debian's patches\nfix.patch\n", 0o644),
                    ("debian/patches/fix.patch", PATCH.encode(), 0o644)], "w:xz")
        files = {"slurm-wlm_99.1.1.orig.tar.gz": orig,
                 "slurm-wlm_%s.debian.tar.xz" % VERSION: deb}
        stanza = "Package: slurm-wlm\nVersion: %s\nDirectory: pool/main/s/slurm-wlm\n" \
                 "Checksums-Sha256:\n" % VERSION
        stanza += "".join(" %s %d %s\n" % (_sha(d), len(d), n) for n, d in files.items())
        evil = _tar([(top + "README", b"evil\n", 0o644),
                     (top + "configure", CONFIGURE.encode(), 0o755),
                     (top + "src/slurmctld/slurmctld.h", b"/* evil */\n", 0o644)], "w:gz")
        evil_stanza = stanza.replace(
            " %s %d slurm-wlm_99.1.1.orig" % (_sha(orig), len(orig)),
            " %s %d slurm-wlm_99.1.1.orig" % (_sha(evil), len(evil)))
        sources = lzma.compress(("Package: other\nVersion: 1\n\n" + stanza).encode())
        signed = sources            # the index InRelease names
        if tamper:
            # the attacker's tarball, in the pool ...
            files["slurm-wlm_99.1.1.orig.tar.gz"] = evil
        if tamper in ("index", "signer"):
            # ... named by the index served (with its checksum) ...
            sources = lzma.compress(evil_stanza.encode())
        if tamper == "signer":
            # ... itself named by an InRelease signed by another key
            signed = sources
        release = "Suite: %s\nCodename: %s\nSHA256:\n %s %d main/source/Sources.xz\n" % (
            self.suite, self.suite, _sha(signed), len(signed))
        for n, d in files.items():
            with open(os.path.join(pool, n), "wb") as f:
                f.write(d)
        with open(os.path.join(dists, "main", "source", "Sources.xz"), "wb") as f:
            f.write(sources)
        uid = "Somebody Else" if tamper == "signer" else "Test Archive"
        self._gpg("--yes", "--local-user", uid, "--clearsign",
                  "-o", os.path.join(dists, "InRelease"), input=release.encode())

    def run(self, dest):
        env = dict(os.environ, SLURM_SOURCE_APT_ETC=self.etc)
        return subprocess.run([TOOL, VERSION, dest], capture_output=True, text=True,
                              env=env, timeout=120)

    def close(self):
        self.httpd.shutdown()
        subprocess.run(["gpgconf", "--homedir", self.gnupg, "--kill", "gpg-agent"],
                       capture_output=True)


@pytest.fixture
def archive(tmp_path):
    if os.environ.get("HARMONIA_SLURM_CONF"):
        pytest.skip("tests scripts/slurm-source on the build machine, not on a cluster")
    for tool in ("gpg", "gpgv", "/usr/lib/apt/apt-helper", "dpkg-source"):
        assert shutil.which(tool), "%s not installed (scripts/setup installs it)" % tool
    a = Archive(str(tmp_path))
    yield a
    a.close()


def test_fetches_checks_patches_and_configures(archive, tmp_path):
    archive.publish()
    dest = str(tmp_path / "tree")
    p = archive.run(dest)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "%s %s" % (VERSION, dest)
    assert "checked" in p.stderr and "applied 1 patches" in p.stderr, p.stderr
    with open(os.path.join(dest, "README")) as f:
        assert f.read() == "slurm\npatched by debian\n"
    assert os.path.exists(os.path.join(dest, "slurm", "slurm_version.h"))
    with open(os.path.join(dest, ".harmonia-slurm-source")) as f:
        assert f.read() == VERSION + "\n"
    # a second run keeps the tree it made
    p = archive.run(dest)
    assert p.returncode == 0 and "already in" in p.stderr, p.stderr


@pytest.mark.parametrize("tamper,says", [
    ("orig", "slurm-wlm_99.1.1.orig.tar.gz (sha256 "),
    ("index", "is in no Sources index"),
    ("signer", "InRelease not signed by a key of"),
])
def test_refuses_what_does_not_match(archive, tmp_path, tamper, says):
    archive.publish(tamper)
    dest = str(tmp_path / "tree")
    p = archive.run(dest)
    assert p.returncode == 1, p.stdout + p.stderr
    assert says in p.stderr, p.stderr
    # nothing half made, nothing left beside it
    assert not os.path.exists(dest)
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith("tree")]
