# SPDX-License-Identifier: GPL-2.0-or-later
"""Paper reproductions with bbsim: Gainaru et al. §4.2 mixes, the IO-Sets study,
Harmonia's synthetic study and the periodic heuristics against the online ones.

Used by test_reproductions.py, and on its own to print the figures of
doc/reproductions.md:

    HARMONIA_BUILDDIR=. python3 testsuite/sim/repro.py [--seeds N] [--only PARTS]
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


# ---------------------------------------------------------------- Harmonia [Harmonia]

HARMONIA_PROFILES = ["compute", "balanced", "io", "only-io"]
HARMONIA_POLICIES = ["static", "fairshare", "harmonia-maxbw", "harmonia-minstall",
                     "harmonia-fairness", "harmonia-buffer-eff", "harmonia-priority"]
# the figures the claims of [Harmonia] are about, per run
HARMONIA_FIGURES = ["io_time", "bandwidth", "fairness", "stall_time",
                    "buffer_efficiency", "completion", "makespan"]


def harmonia_figures(e):
    """io_time: mean I/O time of a phase (s); bandwidth: bytes moved over the time
    spent in I/O (GB/s, the jobs' mean I/O bandwidth); completion: mean over the
    instances of end - release (s)."""
    apps = e["apps"]
    io = sum(a["io_time"] for a in apps)
    phases = sum(a["phases"] for a in apps)
    return {
        "io_time": io / phases,
        "bandwidth": sum(a["bytes"] for a in apps) / io / 1e9,
        "fairness": e["fairness"],
        "stall_time": e["stall_time"],
        "buffer_efficiency": e["buffer_efficiency"],
        "completion": statistics.mean(a["end"] - a["release"] for a in apps),
        "makespan": e["makespan"],
    }


def harmonia(profile, instances, seeds, policies=HARMONIA_POLICIES, extra=()):
    """Mean Harmonia figures per policy over seeds (bbsim gen harmonia)."""
    args = ["harmonia", "--profile", profile, "--instances", str(instances)]
    runs = [_run(args + list(extra), s, policies) for s in seeds]
    mean = {}
    for p in policies:
        rows = [harmonia_figures(next(e for e in r if e["policy"] == p)) for r in runs]
        mean[p] = {m: statistics.mean(x[m] for x in rows) for m in HARMONIA_FIGURES}
    return mean, runs


# ---------------------------------------------------------------- periodic vs online

PERIODIC_POLICIES = ["persched", "periodic-throu", "periodic-cong"]
ONLINE_POLICIES = ["fairshare", "fcfs", "roundrobin", "mindilation", "maxsyseff",
                   "minmax:0.5"]
PATTERN_FIGURES = ["period", "period_min", "period_sys_efficiency", "period_dilation",
                   "schedules", "schedule_compute_s", "schedule_compute_max_s"]


def periodic(scenario, seeds, policies=PERIODIC_POLICIES + ONLINE_POLICIES):
    """Gainaru's periodic mixes: run metrics per policy, and for the periodic
    policies the pattern figures (period, its own SysEfficiency/Dilation, cost)."""
    mean, runs = gainaru(scenario, seeds, policies)
    for p in policies:
        if p not in PERIODIC_POLICIES:
            continue
        rows = [next(e for e in r if e["policy"] == p) for r in runs]
        for m in PATTERN_FIGURES:
            # null: a job without an instance (Dilation infinite)
            mean[p][m] = statistics.mean(float("inf") if e[m] is None else e[m]
                                         for e in rows)
    return mean, runs


def main_harmonia(seeds, instances=(2, 4, 6, 8), extra=()):
    print(f"# Harmonia synthetic study (bbsim gen harmonia {' '.join(extra)}), "
          f"mean of {len(seeds)} seeds")
    for prof in HARMONIA_PROFILES:
        for n in instances:
            mean, _ = harmonia(prof, n, seeds, extra=extra)
            print(f"\n## {prof}, {n} instances")
            print(f"{'policy':20s} {'io/phase':>9s} {'GB/s':>7s} {'Jain':>7s} "
                  f"{'stall':>8s} {'bufeff':>7s} {'compl':>8s} {'makespan':>8s}")
            for p in HARMONIA_POLICIES:
                m = mean[p]
                print(f"{p:20s} {m['io_time']:9.2f} {m['bandwidth']:7.3f} "
                      f"{m['fairness']:7.4f} {m['stall_time']:8.1f} "
                      f"{m['buffer_efficiency']:7.3f} {m['completion']:8.1f} "
                      f"{m['makespan']:8.1f}")


def main_periodic(seeds, scenarios=("large-0.2", "mixed-0.2", "mixed-0.35")):
    print(f"# Periodic vs online on Gainaru's periodic mixes, mean of {len(seeds)} seeds")
    for sc in scenarios:
        mean, _ = periodic(sc, seeds)
        print(f"\n## {sc}  (upper limit {100 * mean['fairshare']['upper_limit']:.2f}%)")
        print(f"{'policy':16s} {'Dilation':>9s} {'SysEff%':>8s}   pattern: "
              f"{'T':>8s} {'T_min':>8s} {'SysEff%':>8s} {'Dil':>6s} {'n':>4s} "
              f"{'time s':>7s} {'max s':>7s}")
        for p in PERIODIC_POLICIES + ONLINE_POLICIES:
            m = mean[p]
            line = f"{p:16s} {m['dilation']:9.3f} {100 * m['sys_efficiency']:8.2f}"
            if p in PERIODIC_POLICIES:
                line += (f"            {m['period']:8.1f} {m['period_min']:8.1f} "
                         f"{100 * m['period_sys_efficiency']:8.2f} "
                         f"{m['period_dilation']:6.3f} {m['schedules']:4.0f} "
                         f"{m['schedule_compute_s']:7.3f} "
                         f"{m['schedule_compute_max_s']:7.3f}")
            print(line)


def main(argv):
    nseeds = 20
    parts = {"gainaru", "iosets", "harmonia", "periodic"}
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--seeds":
            nseeds = int(args.pop(0))
        elif a == "--only":
            parts = set(args.pop(0).split(","))
        else:
            sys.exit(f"usage: {argv[0]} [--seeds N] [--only gainaru,iosets,harmonia,periodic]")
    seeds = range(1, nseeds + 1)
    if "harmonia" in parts:
        main_harmonia(seeds)
        main_harmonia(seeds, instances=(8,), extra=("--bandwidth", "8GB/s"))
    if "periodic" in parts:
        main_periodic(seeds)
    if not parts & {"gainaru", "iosets"}:
        return
    if "gainaru" in parts:
        main_gainaru(seeds, nseeds)
    if "iosets" in parts:
        main_iosets(seeds, nseeds)


def main_gainaru(seeds, nseeds):
    print(f"# Gainaru et al. §4.2 mixes (bbsim gen gainaru), mean of {nseeds} seeds")
    for sc in GAINARU_SCENARIOS:
        mean, _ = gainaru(sc, seeds)
        print(f"\n## {sc}  (upper limit {100 * mean['fairshare']['upper_limit']:.2f}%)")
        print(f"{'policy':24s} {'Dilation':>9s} {'SysEff%':>8s}")
        for p in GAINARU_POLICIES:
            print(f"{p:24s} {mean[p]['dilation']:9.3f} {100 * mean[p]['sys_efficiency']:8.2f}")


def main_iosets(seeds, nseeds):
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
