# SPDX-License-Identifier: GPL-2.0-or-later
"""Paper reproductions with bbsim: Gainaru et al. §4.2 mixes and the IO-Sets study.

Used by test_reproductions.py, and on its own to print the figures of
doc/reproductions.md:

    HARMONIA_BUILDDIR=. python3 testsuite/sim/repro.py [--seeds N]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("HARMONIA_SRCDIR", os.path.normpath(os.path.join(HERE, "..", "..")))
BBSIM = os.path.join(os.environ.get("HARMONIA_BUILDDIR", SRCDIR), "sim", "bbsim")

GAINARU_SCENARIOS = {
    "large-0.2": ["--scenario", "large", "--io-ratio", "0.2"],     # Fig. 6a
    "mixed-0.2": ["--scenario", "mixed", "--io-ratio", "0.2"],     # Fig. 6b
    "mixed-0.35": ["--scenario", "mixed", "--io-ratio", "0.35"],   # Fig. 6c
}
GAINARU_POLICIES = ["fairshare", "fcfs", "roundrobin",
                    "maxsyseff", "maxsyseff-priority",
                    "minmax:0.25", "minmax:0.5", "minmax:0.5-priority", "minmax:0.75",
                    "mindilation", "mindilation-priority"]
IOSETS_POLICIES = ["fairshare", "fcfs", "set10", "set-fairshare", "priority-sharing"]
METRICS = ["sys_efficiency", "upper_limit", "dilation", "stretch_max",
           "io_slowdown_mean", "utilization"]


def _run(gen_args, seed, policies):
    y = subprocess.run([BBSIM, "gen"] + gen_args + ["--seed", str(seed)],
                       capture_output=True, text=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(y)
        path = f.name
    try:
        args = [BBSIM, "run", path, "--format", "json"]
        for p in policies:
            args += ["--policy", p]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(path)
    return json.loads(out)["results"]


def study(gen_args, seeds, policies):
    """Mean of each metric per policy over seeds; also the per-run results."""
    runs = [_run(gen_args, s, policies) for s in seeds]
    mean = {}
    for p in policies:
        rows = [next(e for e in r if e["policy"] == p) for r in runs]
        mean[p] = {m: statistics.mean(e[m] for e in rows) for m in METRICS}
    return mean, runs


def gainaru(scenario, seeds, policies=GAINARU_POLICIES):
    return study(["gainaru"] + GAINARU_SCENARIOS[scenario], seeds, policies)


def iosets(nh, seeds, policies=IOSETS_POLICIES, extra=()):
    return study(["iosets", "--nh", str(nh)] + list(extra), seeds, policies)


def iosets_eta(eta, seeds, policies=IOSETS_POLICIES):
    return study(["iosets", "--eta", str(eta)], seeds, policies)


def main(argv):
    nseeds = 20
    if len(argv) > 2 and argv[1] == "--seeds":
        nseeds = int(argv[2])
    seeds = range(1, nseeds + 1)
    print(f"# Gainaru et al. §4.2 mixes (bbsim gen gainaru), mean of {nseeds} seeds")
    for sc in GAINARU_SCENARIOS:
        mean, _ = gainaru(sc, seeds)
        print(f"\n## {sc}  (upper limit {100 * mean['fairshare']['upper_limit']:.2f}%)")
        print(f"{'policy':24s} {'Dilation':>9s} {'SysEff%':>8s}")
        for p in GAINARU_POLICIES:
            print(f"{p:24s} {mean[p]['dilation']:9.3f} {100 * mean[p]['sys_efficiency']:8.2f}")
    print(f"\n# IO-Sets study (bbsim gen iosets), mean of {nseeds} seeds")
    print(f"{'nH':>3s} " + " ".join(f"{p[:16]:>16s}" for p in IOSETS_POLICIES)
          + "   (max stretch / I/O slowdown / utilization)")
    for nh in range(0, 41, 5):
        mean, _ = iosets(nh, seeds)
        print(f"{nh:3d} " + " ".join(
            f"{mean[p]['stretch_max']:5.3f}/{mean[p]['io_slowdown_mean']:5.2f}/"
            f"{mean[p]['utilization']:.2f}" for p in IOSETS_POLICIES))
    print(f"\n# IO-Sets eta noise study, mean of {nseeds} seeds")
    for eta in (0.0, 0.1, 0.25, 0.5, 1.0):
        mean, _ = iosets_eta(eta, seeds)
        print(f"eta={eta:4.2f} " + " ".join(
            f"{p}: {mean[p]['stretch_max']:5.3f}/{mean[p]['io_slowdown_mean']:5.2f}"
            for p in ("fairshare", "fcfs", "set10")))


if __name__ == "__main__":
    main(sys.argv)
