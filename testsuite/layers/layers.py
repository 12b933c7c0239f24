#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The layering of HACKING.md ("Layers"), held against the code.

Two readings of the tree, each compared with the same table (LAYERS below):
  - includes: every '#include "..."' of a source file, resolved to the part that
    holds the header;
  - calls: every symbol an object file of the build uses ('nm'), resolved to the
    part whose object defines it.
A use that the table does not allow is printed, one line each, naming the file,
the header or the function, and the rule; the exit status is then 1.  Inside
bbmgrd (bbmgr/daemon/), every file has a layer (DAEMON_LAYERS): a file includes
the headers of, and calls, only files of lower layers, so that no two files of
the daemon use each other, even through others.  Every extern function of
bbmgr/ and sim/ carries one of its folder's prefixes (PREFIXES, HACKING.md Style).

Usage: layers.py SRCDIR BUILDDIR  (the test harness gives HARMONIA_SRCDIR and
HARMONIA_BUILDDIR; a build must exist: 'make check' builds first).
"""
import glob
import os
import re
import subprocess
import sys

# The parts of bbmgr/, and which parts each may include and call.  bbmgrd's core
# (daemon/core*) is a part of its own: it never reaches the daemon's HTTP side.
BBMGR = ("common", "mover", "core", "daemon", "agent", "cli")
LAYERS = {
    # common/nodeproto.h carries the mover's transfer types (mover/mover.h):
    # a header, never a call (CALLS_ONLY below says which parts it may call)
    "common": {"common", "mover.h"},
    "mover": {"common", "mover"},
    "core": {"common", "mover", "core", "nodes"},
    "nodes": {"common", "mover", "core", "nodes"},
    "daemon": {"common", "mover", "core", "nodes", "daemon"},
    "agent": {"common", "mover", "agent"},
    "cli": {"common", "cli", "harmonia"},
}
RULES = {
    ("core", "daemon"): "bbmgrd's core never reaches the daemon's HTTP side (api, "
                        "routes, auth, metrics)",
    ("mover", "core"): "the mover never reaches bbmgrd's core: it reports through "
                       "its callbacks",
    ("nodes", "daemon"): "the agents' side of the core never reaches the daemon's "
                         "HTTP side: its route is in routes_admin.c",
    ("agent", "core"): "the agent never reaches bbmgrd's internals",
    ("plugins", "*"): "the Slurm plugins reach bbmgrd only through libharmonia's "
                      "client (harmonia/client.h)",
    ("libhsched", "*"): "libhsched is pure: no I/O, no threads, no clock, no Slurm",
}

# bbmgrd's files (bbmgr/daemon/, a file with its header), from the bottom up: a
# file may include the headers of, and call, only the files of lower layers
# (HACKING.md, Layers; core.h lists the core's).  A file named in no layer is
# refused until it is given one.  A header of no source of its own (none now)
# would take the layer of the file whose name it bears.
DAEMON_LAYERS = [
    ("core_model", "hreq", "jout", "auth"),
    ("nodes",),
    ("core_bufdir",),
    ("core_jobs",),
    ("core_alloc", "core_json"),
    ("core_stage",),
    ("core_recover",),
    ("core",),
    ("routes_req", "metrics"),
    ("routes_admin",),
    ("routes",),
    ("api",),
    ("bbmgrd",),
]
DAEMON_LAYER = {f: i + 1 for i, files in enumerate(DAEMON_LAYERS) for f in files}
DAEMON_RULE = ("bbmgrd's files are in layers (HACKING.md, Layers): %s (layer %d) may "
               "use only files of lower layers, and %s is at layer %s")

# The mover's files (bbmgr/mover/, a file with its header), from the bottom up, as
# bbmgrd's: a file may include the headers of, and call, only the files of lower
# layers.  mover.h, the API bbmgrd and bbnoded include, is in the layer of mover.c;
# mover_types.h, the types every layer uses, has no source of its own.
MOVER_LAYERS = [
    ("mover_types", "quota"),
    ("mover_base", "bufdir"),
    ("mover_copy",),
    ("mover_end",),
    ("mover",),
]
MOVER_LAYER = {f: i + 1 for i, files in enumerate(MOVER_LAYERS) for f in files}
MOVER_RULE = ("the mover's files are in layers (HACKING.md, Layers): %s (layer %d) may "
              "use only files of lower layers, and %s is at layer %s")


def folder_includes(srcdir, folder, use):
    """The includes between the files of folder (from the top) that use(src, dst)
    (stems) refuses, one line each."""
    found = []
    d = os.path.join(srcdir, folder)
    inc = re.compile(r'^\s*#\s*include\s*"([^"/]+)"', re.M)
    for p in sorted(glob.glob(os.path.join(d, "*.[ch]"))):
        for name in inc.findall(open(p, encoding="utf-8", errors="replace").read()):
            if os.path.exists(os.path.join(d, name)):
                why = use(os.path.basename(p).split(".")[0], name.split(".")[0])
                if why:
                    found.append("%s includes %s/%s: %s"
                                 % (os.path.relpath(p, srcdir), folder, name, why))
    return found


def mover_layers(srcdir, table):
    """The uses between the mover's files that MOVER_LAYERS does not allow: the
    includes of bbmgr/mover/ and the calls of table (main(): part, file, defined,
    used)."""
    def use(src, dst):
        return daemon_use(src, dst, MOVER_LAYER, "mover", MOVER_RULE)

    found = folder_includes(srcdir, "bbmgr/mover", use)
    owner = {s: src for part, src, defined, _ in table if part == "mover" for s in defined}
    for part, src, _, used in table:
        for s in sorted(used) if part == "mover" else ():
            dst = owner.get(s)
            why = dst and use(src.split("/")[-1][:-2], dst.split("/")[-1][:-2])
            if why:
                found.append("%s calls %s() of %s: %s" % (src, s, dst, why))
    return found


def daemon_use(src, dst, layer=DAEMON_LAYER, folder="daemon", rule=DAEMON_RULE):
    """The problem when daemon file src (a stem) uses daemon file dst, or None (the
    files of another folder of layers: its table and rule)."""
    if src == dst:
        return None
    ls, ld = layer.get(src), layer.get(dst)
    if ls is None or ld is None:
        return "bbmgr/%s/%s has no layer in testsuite/layers/layers.py " \
               "(%s_LAYERS): give it one" % (folder, dst if ls else src, folder.upper())
    if ld < ls:
        return None
    return rule % (src, ls, dst, ld)


# The burst buffer plugin's files, from the bottom up (HACKING.md, Layers): a file
# (with its header) includes the headers of, and calls, only the files of lower
# layers.  bb_common.c is Slurm's own code compiled in, of no layer.
PLUGIN_DIR = "src/plugins/burst_buffer/harmonia"
PLUGIN_LAYERS = [
    ("slurm_compat", "bbh_conf", "bbh_job"),
    ("bbh_model",),
    ("bbh_jobs",),
    ("bbh_steps", "bbh_show", "bbh_sched"),
    ("bbh_agent",),
    ("burst_buffer_harmonia",),
]
PLUGIN_LAYER = {f: i + 1 for i, files in enumerate(PLUGIN_LAYERS) for f in files}
PLUGIN_RULE = ("the burst buffer plugin's files are in layers (HACKING.md, Layers): %s "
               "(layer %d) may use only files of lower layers, and %s is at layer %d")
PLUGIN_FOREIGN = {"bb_common"}
# Slurm's names of a plugin (burst_buffer_harmonia.c's): every file says them in its
# messages, and bbh_job.c, shared with job_submit/harmonia, those of its plugin.
PLUGIN_IDENTITY = {"plugin_name", "plugin_type", "plugin_version"}


def plugin_use(src, dst):
    """The problem when plugin file src (a stem) uses file dst, or None."""
    if src == dst or src in PLUGIN_FOREIGN or dst in PLUGIN_FOREIGN:
        return None
    ls, ld = PLUGIN_LAYER.get(src), PLUGIN_LAYER.get(dst)
    if ls is None or ld is None:
        return "%s/%s has no layer in testsuite/layers/layers.py (PLUGIN_LAYERS): " \
               "give it one" % (PLUGIN_DIR, dst if ls else src)
    return None if ld < ls else PLUGIN_RULE % (src, ls, dst, ld)


def plugin_layers(srcdir, objs, nm):
    """The uses between the burst buffer plugin's files that PLUGIN_LAYERS does not
    allow: their includes, and the calls of the objects objs ({(dir, stem): path},
    main()'s objects()) read with nm (main()'s: defined, used)."""
    found = folder_includes(srcdir, PLUGIN_DIR, plugin_use)
    table = [(stem, nm(o)) for (_, stem), o in sorted(objs.items())]
    owner = {s: stem for stem, (defined, _) in table for s in defined}
    for stem, (_, used) in table:
        for s in sorted(used):
            why = s in owner and s not in PLUGIN_IDENTITY and plugin_use(stem, owner[s])
            if why:
                found.append("%s/%s.c calls %s() of %s/%s.c: %s"
                             % (PLUGIN_DIR, stem, s, PLUGIN_DIR, owner[s], why))
    return found


# libhsched's model, its dynamic programme and its periodic schedules, from the
# bottom up (HACKING.md, Layers): a file (with its header; X_internal.h is X.c's)
# includes the headers of, and calls, only the files of lower layers.  hsched.h and
# policy.h are headers of no source of their own.  The policies stand above the
# model and below the table of them (hs_sched), which the core and auto reach only
# through the pointer they are given (hs_policy_ops_f).  Files named in no layer
# (SFQ, the metrics) are not held by this table.
HSCHED_LAYERS = [
    ("hsched",),
    ("policy",),
    ("hs_model",),
    ("hs_buffer", "hs_dp_types", "hs_periodic_types", "hs_policy"),
    ("hs_bnode", "hs_dp_model", "hs_periodic_model"),
    ("hs_core", "hs_dp_greedy", "hs_pattern"),
    ("hs_decide", "hs_dp", "hs_periodic_profile"),
    ("hs_periodic_ff",),
    ("hs_periodic",),
    ("hs_online",),
    ("hs_pol_auto", "hs_pol_harmonia", "hs_pol_periodic"),
    ("hs_sched",),
]
HSCHED_LAYER = {f: i + 1 for i, files in enumerate(HSCHED_LAYERS) for f in files}
HSCHED_RULE = ("libhsched's files are in layers (HACKING.md, Layers): %s (layer %d) "
               "may use only files of lower layers, and %s is at layer %d")


def hsched_use(src, dst):
    """The problem when libhsched file src (a stem) uses file dst, or None."""
    src = re.sub(r"_internal$", "", src)
    dst = re.sub(r"_internal$", "", dst)
    ls, ld = HSCHED_LAYER.get(src), HSCHED_LAYER.get(dst)
    if src == dst or ls is None or ld is None or ld < ls:
        return None
    return HSCHED_RULE % (src, ls, dst, ld)


# libhsched: the system headers and the C library functions it may use (memory,
# strings, formatting into buffers, maths); everything else is I/O, a thread or a
# clock.
HSCHED_HEADERS = {"assert.h", "ctype.h", "errno.h", "float.h", "inttypes.h",
                  "limits.h", "math.h", "stdarg.h", "stdbool.h", "stddef.h",
                  "stdint.h", "stdio.h", "stdlib.h", "string.h", "strings.h"}
HSCHED_LIBC = set("""calloc malloc realloc free memcpy memmove memset memcmp memchr
strcmp strncmp strcasecmp strncasecmp strlen strnlen strcspn strspn strchr strrchr
strstr strdup strndup strtod strtol strtoul strtoll strtoull snprintf vsnprintf qsort
bsearch abs labs llabs __ctype_b_loc __ctype_tolower_loc __ctype_toupper_loc
__errno_location __assert_fail __stack_chk_fail __popcountdi2 _GLOBAL_OFFSET_TABLE_
fabs fmax fmin fmod floor ceil round lround llround trunc sqrt pow exp log log2 log10
nextafter isnan isinf""".split())
SANITIZER = re.compile(r"^__(asan|ubsan|sanitizer|lsan|tsan)_")

# The prefixes an extern function of bbmgr/ and sim/ may carry, by folder
# (HACKING.md, Style: every extern function carries its file's or folder's
# prefix).  A new file whose functions carry a new prefix adds it here; main() is
# every program's.
PREFIXES = {
    "bbmgr/agent": ("agent_",),
    "bbmgr/cli": ("cmd_",),
    "bbmgr/common": ("bl_", "cfg_", "cksum_", "hmap_", "hostlist_", "np_", "state_",
                     "util_"),
    "bbmgr/daemon": ("api_", "auth_", "core_", "hreq_", "jout_", "metrics_", "nodes_",
                     "routes_", "rq_"),
    "bbmgr/mover": ("bufdir_", "mover_", "quota_"),
    "sim": ("gen_", "sim_", "wl_"),
}
PREFIX_RULE = ("every extern function carries its file's or folder's prefix "
               "(HACKING.md, Style): %s allows %s")


def prefix_problems(builddir):
    """The extern functions (nm's T) of the objects of bbmgr/ and sim/ in builddir
    whose name carries none of their folder's PREFIXES (a prefix without its '_'
    is a name too: cksum())."""
    found = []
    for folder, allowed in sorted(PREFIXES.items()):
        d = os.path.join(builddir, folder)
        objs = sorted(os.path.join(d, sub, f) for sub in ("", ".libs")
                      if os.path.isdir(os.path.join(d, sub))
                      for f in os.listdir(os.path.join(d, sub)) if f.endswith(".o"))
        seen = set()
        for o in objs:
            stem = os.path.basename(o)[:-2]
            stem = stem.split("-", 1)[1] if "-" in stem else stem
            out = subprocess.run(["nm", "-P", "--defined-only", o], capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) < 2 or f[1] != "T" or f[0] == "main" or (stem, f[0]) in seen:
                    continue
                seen.add((stem, f[0]))
                if not any(f[0].startswith(p) or f[0] == p[:-1] for p in allowed):
                    found.append("%s/%s.c defines %s(): %s" % (
                        folder, stem, f[0], PREFIX_RULE % (folder, ", ".join(allowed))))
    return found


problems = []


def rule(src, dst):
    return RULES.get((src, dst)) or RULES.get((src, "*")) or \
        ("agent never reaches bbmgrd's internals" if src == "agent" else
         "HACKING.md allows %s to use only: %s" % (src, ", ".join(sorted(LAYERS[src]))))


def bbmgr_part(path):
    """The part of bbmgr/ a file belongs to, by its folder and name."""
    folder, name = path.split("/")[-2:]
    stem = name.split(".")[0]
    if folder == "daemon":
        if stem.startswith("core"):
            return "core"
        if stem == "nodes":
            return "nodes"
    return folder


def main(srcdir, builddir):
    bb = os.path.join(srcdir, "bbmgr")
    headers = {}                    # bare name -> path, of bbmgr/'s headers
    sources = []
    for folder in ("common", "mover", "daemon", "agent", "cli"):
        for p in sorted(glob.glob(os.path.join(bb, folder, "*.[ch]")) +
                        glob.glob(os.path.join(bb, folder, "*.def"))):
            sources.append(p)
            headers.setdefault(os.path.basename(p), p)
    stray = [p for p in glob.glob(os.path.join(bb, "*.[ch]"))]
    for p in stray:
        problems.append("%s: a source outside bbmgr/'s product folders "
                        "(HACKING.md, Layers)" % os.path.relpath(p, srcdir))
    inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

    # includes of bbmgr/
    for p in sources:
        part = bbmgr_part(p)
        text = open(p, encoding="utf-8", errors="replace").read()
        for kind, name in inc.findall(text):
            if kind != '"':
                continue
            if "/" in name:
                top = name.split("/")[0]
                if top in ("libhutil", "libhsched"):
                    continue
                if top == "harmonia" and "harmonia" in LAYERS[part]:
                    continue
                problems.append("%s includes \"%s\": %s" % (os.path.relpath(p, srcdir),
                                name, rule(part, top)))
                continue
            if os.path.exists(os.path.join(os.path.dirname(p), name)):
                target = os.path.join(os.path.dirname(p), name)
            elif name in headers:
                target = headers[name]
            else:
                continue            # harmonia_config.h and the like
            to = bbmgr_part(target)
            if (to in LAYERS[part] or name in LAYERS[part]) and \
                    os.path.basename(os.path.dirname(p)) == "daemon" and \
                    os.path.basename(os.path.dirname(target)) == "daemon":
                why = daemon_use(os.path.basename(p).split(".")[0],
                                 os.path.basename(target).split(".")[0])
                if why:
                    problems.append("%s includes %s: %s" % (os.path.relpath(p, srcdir),
                                    os.path.relpath(target, srcdir), why))
                continue
            if to in LAYERS[part] or name in LAYERS[part]:
                continue
            problems.append("%s includes %s: %s" % (os.path.relpath(p, srcdir),
                            os.path.relpath(target, srcdir), rule(part, to)))

    # includes of libhsched and of the plugins
    hs = os.path.join(srcdir, "src/common/libhsched")
    for p in sorted(glob.glob(os.path.join(hs, "*.[ch]"))):
        for kind, name in inc.findall(open(p, encoding="utf-8").read()):
            ok = (name in HSCHED_HEADERS) if kind == "<" else \
                (os.path.exists(os.path.join(hs, name)) or name == "harmonia_config.h"
                 or name.startswith("libhsched/") or name.startswith("libhutil/")
                 or name == "../libhutil/hutil.h")
            if not ok:
                problems.append("%s includes %s%s%s: %s" % (
                    os.path.relpath(p, srcdir), kind, name, ">" if kind == "<" else '"',
                    RULES[("libhsched", "*")]))
            elif kind == '"':
                target = name[len("libhsched/"):] if name.startswith("libhsched/") \
                    else name
                why = os.path.exists(os.path.join(hs, target)) and hsched_use(
                    os.path.basename(p).split(".")[0], target.split(".")[0])
                if why:
                    problems.append("%s includes src/common/libhsched/%s: %s" % (
                        os.path.relpath(p, srcdir), target, why))
    plugins = sorted(glob.glob(os.path.join(srcdir, "src/plugins/*/harmonia/*.[ch]")))
    for p in plugins:
        for kind, name in inc.findall(open(p, encoding="utf-8").read()):
            if kind != '"':
                continue
            top = name.split("/")[0] if "/" in name else None
            bad = top in ("libhsched", "bbmgr") or name.startswith("../") or \
                (top is None and name != "config.h" and name in headers and
                 not os.path.exists(os.path.join(os.path.dirname(p), name))) or \
                (top == "harmonia" and name != "harmonia/client.h")
            if bad:
                problems.append("%s includes \"%s\": %s" % (os.path.relpath(p, srcdir),
                                name, RULES[("plugins", "*")]))

    # calls, from the objects of the build
    def objects(top):
        """The object files under builddir/top, libtool's .libs/ included."""
        found = {}
        every = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(builddir, top))
                 for f in fs if f.endswith(".o")]
        for o in sorted(every):
            stem = os.path.basename(o)[:-2]
            stem = stem.split("-", 1)[1] if "-" in stem else stem
            found.setdefault((os.path.dirname(o).replace("/.libs", ""), stem), o)
        return found

    def nm(o):
        out = subprocess.run(["nm", "-P", o], capture_output=True, text=True,
                             check=True).stdout
        defined, used = set(), set()
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            if f[1] == "U":
                used.add(f[0])
            elif f[1].isupper() or f[1] in "uvw":
                defined.add(f[0])
        return defined, used

    objs = objects("bbmgr")
    if not objs:
        problems.append("no object files under %s/bbmgr: build first ('make')" % builddir)
    table = []                          # (part, file, defined, used)
    where = {}                          # symbol -> {part: file}
    daemon_def = {}                     # symbol -> stem of the daemon file defining it
    for (d, stem), o in sorted(objs.items()):
        folder = os.path.basename(d)
        if folder not in ("common", "mover", "daemon", "agent", "cli"):
            continue
        src = "bbmgr/%s/%s.c" % (folder, stem)
        part = bbmgr_part(src)
        defined, used = nm(o)
        table.append((part, src, defined, used))
        for s in defined:
            where.setdefault(s, {})[part] = src
            if folder == "daemon":
                daemon_def[s] = stem
    for part, src, defined, used in table:
        allowed = LAYERS[part]
        for s in sorted(used):
            owners = where.get(s)
            if owners and src.startswith("bbmgr/daemon/") and \
                    any(o in allowed for o in owners):
                dst = daemon_def.get(s)
                why = dst and daemon_use(src.split("/")[-1][:-2], dst)
                if why:
                    problems.append("%s calls %s() of bbmgr/daemon/%s.c: %s"
                                    % (src, s, dst, why))
                continue
            if not owners or any(o in allowed for o in owners):
                continue
            to, dst = sorted(owners.items())[0]
            problems.append("%s calls %s() of %s: %s" % (src, s, dst, rule(part, to)))
    problems.extend(mover_layers(srcdir, table))
    problems.extend(prefix_problems(builddir))

    hs_defined, hs_used = set(), {}
    for (d, stem), o in sorted(objects("src/common/libhsched").items()):
        defined, used = nm(o)
        hs_defined |= defined
        hs_used["src/common/libhsched/%s.c" % stem] = used
    hs_where = {}                       # symbol -> stem of the file defining it
    for (d, stem), o in sorted(objects("src/common/libhsched").items()):
        for s in nm(o)[0]:
            hs_where[s] = stem
    for src, used in sorted(hs_used.items()):
        stem = src.split("/")[-1][:-2]
        for s in sorted(used & hs_defined):
            dst = hs_where.get(s)
            why = dst and hsched_use(stem, dst)
            if why:
                problems.append("%s calls %s() of src/common/libhsched/%s.c: %s"
                                % (src, s, dst, why))
    for src, used in sorted(hs_used.items()):
        for s in sorted(used - hs_defined - HSCHED_LIBC):
            if not SANITIZER.match(s):
                problems.append("%s calls %s(): %s" % (src, s, RULES[("libhsched", "*")]))

    client = open(os.path.join(srcdir, "src/include/harmonia/client.h")).read()
    hc_defined = set()
    for (d, stem), o in objects("src/lib/libharmonia").items():
        if stem != "preload":           # the interposer: libc's own names
            hc_defined |= nm(o)[0]
    for (d, stem), o in sorted(objects("src/plugins").items()):
        src = os.path.relpath(os.path.join(d, stem + ".c"), builddir)
        for s in sorted(nm(o)[1]):
            if s in where or s in hs_defined:
                problems.append("%s calls %s(): %s" % (src, s, RULES[("plugins", "*")]))
            elif s in hc_defined and not re.search(r"\b%s\b" % re.escape(s), client):
                problems.append("%s calls %s() of libharmonia, not of its client: %s"
                                % (src, s, RULES[("plugins", "*")]))

    problems.extend(plugin_layers(srcdir, objects(PLUGIN_DIR), nm))

    for p in problems:
        print("layers: " + p)
    print("layers: %d bbmgr sources, %d objects read; %d rule(s) broken"
          % (len(sources), len(table), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
