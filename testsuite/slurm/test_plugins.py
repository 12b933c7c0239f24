# SPDX-License-Identifier: GPL-2.0-or-later
"""The plugins as built: they export only Slurm's plugin API (nm -D) and carry
the version of the Slurm they were built for."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BUILDDIR

PLUGINS = {
    "src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so":
        {"plugin_name", "plugin_type", "plugin_version", "init", "fini"} | {
            "bb_p_" + f for f in (
                "get_system_size load_state get_status state_pack reconfig job_validate "
                "job_validate2 job_set_tres_cnt job_get_est_start job_try_stage_in "
                "job_test_stage_in job_begin job_revoke_alloc job_start_stage_out "
                "job_test_post_run job_test_stage_out job_cancel run_script "
                "xlate_bb_2_tres_str build_het_job_script").split()},
    "src/plugins/job_submit/harmonia/.libs/job_submit_harmonia.so":
        {"plugin_name", "plugin_type", "plugin_version", "init", "fini",
         "job_submit", "job_modify"},
}


@pytest.mark.parametrize("path", sorted(PLUGINS))
def test_only_plugin_api_is_exported(path):
    so = os.path.join(BUILDDIR, path)
    if not os.path.exists(so):
        pytest.skip("plugins not built")
    nm = shutil.which("nm")
    out = subprocess.run([nm, "-D", "--defined-only", so], capture_output=True,
                         text=True, check=True).stdout
    syms = {l.split()[-1] for l in out.splitlines() if l.strip()}
    assert syms == PLUGINS[path]


def _slurm_binaries():
    """slurmctld and the libslurmfull it loads: where the names of the plugin
    API symbols slurmctld looks up are (its tables of required symbols)."""
    ctld = shutil.which("slurmctld") or "/usr/sbin/slurmctld"
    if not os.path.exists(ctld):
        return []
    ldd = subprocess.run(["ldd", ctld], capture_output=True, text=True).stdout
    return [ctld] + re.findall(r"=> (\S*libslurmfull\S*\.so)", ldd)


@pytest.mark.parametrize("path,pattern", [
    ("src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so",
     r"bb_p_[a-z0-9_]+"),
    ("src/plugins/job_submit/harmonia/.libs/job_submit_harmonia.so",
     r"job_(submit|modify)")])
def test_exports_what_installed_slurmctld_requires(path, pattern):
    """Every API symbol the installed slurmctld looks up is defined: a missing
    one (bb_p_build_het_job_script since 23.02) makes slurmctld exit at
    start."""
    so = os.path.join(BUILDDIR, path)
    bins = _slurm_binaries()
    if not os.path.exists(so) or not bins:
        pytest.skip("plugins or slurmctld missing")
    wanted = set()
    for b in bins:
        out = subprocess.run(["strings", b], capture_output=True, text=True).stdout
        wanted |= {l for l in out.splitlines() if re.fullmatch(pattern, l)}
    assert wanted, f"no {pattern} names in {bins}"
    out = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                         text=True, check=True).stdout
    syms = {l.split()[-1] for l in out.splitlines() if l.strip()}
    assert wanted <= syms, f"{so} lacks {sorted(wanted - syms)}"


def test_plugin_version_matches_installed_slurm():
    so = os.path.join(BUILDDIR, "src/plugins/job_submit/harmonia/.libs/job_submit_harmonia.so")
    ctld = shutil.which("slurmctld") or "/usr/sbin/slurmctld"
    if not os.path.exists(so) or not os.path.exists(ctld):
        pytest.skip("plugins or slurmctld missing")
    ver = subprocess.run([ctld, "-V"], capture_output=True, text=True).stdout
    major, minor, micro = map(int, re.search(r"(\d+)\.(\d+)\.(\d+)", ver).groups())
    # plugin_version is a const uint32_t in .rodata: find its bytes in the file
    nm = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                        text=True, check=True).stdout
    addr = int(next(l.split()[0] for l in nm.splitlines()
                    if l.split()[-1] == "plugin_version"), 16)
    sec = subprocess.run(["readelf", "-SW", so], capture_output=True, text=True).stdout
    for line in sec.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if not m:
            continue
        start, off, size = int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)
        if start <= addr < start + size and start:
            with open(so, "rb") as f:
                f.seek(off + addr - start)
                v = int.from_bytes(f.read(4), "little")
            break
    else:
        raise AssertionError("plugin_version not found in any section")
    assert v == (major << 16) + (minor << 8) + micro
