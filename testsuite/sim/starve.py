# SPDX-License-Identifier: GPL-2.0-or-later
"""The starvation bound (doc/policies.md, "Starvation bound") measured with bbsim:
the phases that reach it on the papers' workloads (none, at the default), and the
worst Dilation per policy on the workload fuzzer's random workloads with the bound
off and on.  Used by test_starvation.py, and on its own to print the figures of
doc/policies.md:

    HARMONIA_BUILDDIR=. python3 testsuite/sim/starve.py papers [--seeds N]
    HARMONIA_BUILDDIR=. python3 testsuite/sim/starve.py fuzz [--seeds N] [BBSIM_ARGS]

'fuzz' draws its workloads with testsuite/unit/test_sim_fuzz (SIMFUZZ_DUMP=seed,
built by 'make -C testsuite/unit test_sim_fuzz')."""
import json
import os
import subprocess
import sys
import tempfile

import repro

BBSIM = repro.BBSIM
SIMFUZZ = os.path.join(os.environ.get("HARMONIA_BUILDDIR", repro.SRCDIR),
                       "testsuite", "unit", "test_sim_fuzz")
ALL_POLICIES = ["fairshare", "fcfs", "static", "roundrobin", "roundrobin-priority",
                "mindilation", "mindilation-priority", "maxsyseff",
                "maxsyseff-priority", "minmax:0.5", "minmax:0.5-priority", "set10",
                "set:2", "set-fairshare", "priority-sharing", "periodic-throu",
                "periodic-cong", "persched", "harmonia-maxbw", "harmonia-minstall",
                "harmonia-fairness", "harmonia-buffer-eff", "harmonia-priority",
                "auto"]
# the papers' generators (the studies of repro.py), with the policies run on them
PAPERS = (
    [("gainaru " + sc, ["gainaru"] + a,
      repro.GAINARU_POLICIES + repro.PERIODIC_POLICIES)
     for sc, a in repro.GAINARU_SCENARIOS.items()]
    + [(f"iosets nh={nh}", ["iosets", "--nh", str(nh)], repro.IOSETS_POLICIES)
       for nh in range(0, 41, 5)]
    + [(f"iosets eta={e}", ["iosets", "--eta", str(e)], repro.IOSETS_POLICIES)
       for e in (0.0, 0.1, 0.25, 0.5, 1.0)]
    + [(f"persched", ["persched"], repro.PERIODIC_POLICIES + repro.ONLINE_POLICIES)]
)


def run(path, policies, extra=()):
    args = [BBSIM, "run", str(path), "--format", "json"] + list(extra)
    for p in policies:
        args += ["--policy", p]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, args, p.stdout, p.stderr)
    out = p.stdout
    return json.loads(out)["results"]


def gen(gen_args, seed):
    y = subprocess.run([BBSIM, "gen"] + gen_args + ["--seed", str(seed)],
                       capture_output=True, text=True, check=True).stdout
    return y


def with_file(text, fn):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        return fn(path)
    finally:
        os.unlink(path)


def paper_hits(seeds, extra=()):
    """{study: phases that reached the bound, summed over seeds and policies}."""
    hits = {}
    for name, args, pols in PAPERS:
        n = 0
        for s in seeds:
            res = with_file(gen(args, s), lambda p: run(p, pols, extra))
            n += sum(e.get("starvation_bound_hits", 0) for e in res)
        hits[name] = n
    for ex in sorted(os.listdir(repro.os.path.join(repro.SRCDIR, "sim", "examples"))):
        if ex.endswith(".yaml"):
            res = run(os.path.join(repro.SRCDIR, "sim", "examples", ex), ALL_POLICIES,
                      ["--seed", "7"] + list(extra))
            hits["example " + ex] = sum(e.get("starvation_bound_hits", 0) for e in res)
    return hits


def fuzz_workload(seed):
    env = dict(os.environ, SIMFUZZ_DUMP=str(seed))
    return subprocess.run([SIMFUZZ], capture_output=True, text=True, env=env,
                          check=True).stdout


def fuzz_worst(seeds, policies=ALL_POLICIES, extra=()):
    """{policy: (worst Dilation, its seed, SysEff of that run, bound hits summed)}."""
    worst = {p: (0.0, None, None, 0) for p in policies}
    for s in seeds:
        res = []
        for pol in policies:        # one at a time: a run bbsim refuses is skipped
            try:
                res += with_file(fuzz_workload(s), lambda p: run(p, [pol], extra))
            except subprocess.CalledProcessError as e:
                print(f"seed {s} {pol}: {e.stderr.strip()}", file=sys.stderr)
        for e in res:
            d, seed, se, h = worst[e["policy"]]
            h += e.get("starvation_bound_hits", 0)
            if e["dilation"] > d:
                d, seed, se = e["dilation"], s, e["sys_efficiency"]
            worst[e["policy"]] = (d, seed, se, h)
    return worst


def main(argv):
    what = argv[1] if len(argv) > 1 else "papers"
    args = argv[2:]
    nseeds = 10
    if args[:1] == ["--seeds"]:
        nseeds = int(args[1])
        args = args[2:]
    seeds = range(1, nseeds + 1)
    if what == "papers":
        for k, v in paper_hits(seeds, args).items():
            print(f"{k:28s} {v}")
    elif what == "fuzz":
        for p, (d, s, se, h) in fuzz_worst(seeds, extra=args).items():
            print(f"{p:22s} {d:12.2f} (seed {s}, SysEff {se:.4f})  hits {h}")
    else:
        sys.exit(f"usage: {argv[0]} papers|fuzz [--seeds N] [bbsim options]")


if __name__ == "__main__":
    main(sys.argv)
