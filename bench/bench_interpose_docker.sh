#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_interpose_docker.sh — the point of the interposer on the Docker Compose
# cluster (doc/docker.md), which must be running: J concurrent unmodified
# periodic jobs of one program kind, submitted as the test users hmtest1 and
# hmtest2 (alternately), under the policies fairshare, set10 and auto; each time
# once as the unmodified program (#BB_HARMONIA iohints interpose=yes and no other
# hint: the interposer finds and gates its phases) and once as the same workload
# calling libharmonia (bbio-bench, with its iohints, interpose=no).  Kinds:
#   dd     a shell loop of sleep + dd conv=fsync into $HARMONIA_BB (one node)
#   mpiio  bench_interpose_mpiio.c, Debian's OpenMPI, 2 ranks on 2 compute nodes,
#          MPI_File_write_at_all of a shared file + MPI_File_sync; its libharmonia
#          counterpart is bbio-bench on the same 2 nodes (srun -N2), half each
#   h5py   bench_interpose_h5.py, one float64 dataset per checkpoint, fsync
# Every job waits for a common start (all running, then a file on /pfs), so the
# figures are the phases' scheduling, not Slurm's start-up.  Prints, per kind,
# policy and program, the mean and maximum completion time (job end - the
# start), the phases bbmgrd saw finish, each policy's gain over fairshare
# (fairshare's time / the policy's) and the ratio of the interposer's gain to
# libharmonia's; writes per kind an SVG of the phases as bbmgrd scheduled them
# (its phase records: requested, granted, finished), drawn by scripts/demo-compare's
# chart code.  Asserts nothing.
#
# For the run, bbmgr.yaml's platform is set as scripts/demo-compare sets it
# (every buffer and compute node at BENCH_IP_NODE_BW, this machine's calibrated
# device profile: the cluster's buffer devices are volumes on this machine's
# disk) and bbmgrd restarted; both are restored at the end (BENCH_IP_NODE_BW=keep:
# the cluster's own 1 GB/s nodes).
#
#   bench_interpose_docker.sh [run]     the bench (the default)
#   bench_interpose_docker.sh debs DIR  download OpenMPI and h5py's Debian packages
#                                       (with what they need beyond the node image)
#                                       into DIR, through the base image (network)
#   bench_interpose_docker.sh install DIR   dpkg -i DIR/*.deb on ctl and c1..c4
#   python3 bench/bench_interpose_docker.py median OUT1 OUT2 ...
#                                       several runs' medians (one BENCH_IP_OUT each)
#
#   HARMONIA_DOCKER_PROJECT  the cluster's project name (default harmonia)
#   BENCH_IP_JOBS     concurrent jobs (default 4)
#   BENCH_IP_ITERS    iterations per job (default 4)
#   BENCH_IP_COMPUTE  seconds of compute per iteration (default 2)
#   BENCH_IP_VOLUME   MiB written per iteration and job (default 256)
#   BENCH_IP_POLICIES policies, the first the reference (default "fairshare set10 auto")
#   BENCH_IP_KINDS    program kinds (default "dd mpiio h5py")
#   BENCH_IP_NODE_BW  modelled node bandwidth (default 100MB/s; keep: as configured)
#   BENCH_IP_OUT      results: JSON per run, table, charts (default /tmp/harmonia-bench-ipd)
set -euo pipefail
top=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd_=$top/scripts/cluster-docker
jobs=${BENCH_IP_JOBS:-4}
iters=${BENCH_IP_ITERS:-4}
compute=${BENCH_IP_COMPUTE:-2}
vol=${BENCH_IP_VOLUME:-256}
policies=${BENCH_IP_POLICIES:-fairshare set10 auto}
kinds=${BENCH_IP_KINDS:-dd mpiio h5py}
node_bw=${BENCH_IP_NODE_BW:-100MB/s}
out=${BENCH_IP_OUT:-/tmp/harmonia-bench-ipd}
helper=$top/bench/bench_interpose_docker.py
die() { printf 'bench_interpose_docker: %s\n' "$*" >&2; exit 1; }
on() { local s=$1; shift; "$cd_" exec "$s" "$@"; }
nodes="ctl c1 c2 c3 c4"

case ${1:-run} in
debs)
    [ $# -eq 2 ] || die "usage: bench_interpose_docker.sh debs DIR"
    mkdir -p "$2"; dir=$(cd "$2" && pwd)
    # the newest base image of the release (cluster-docker up or prepare made it)
    base=$(docker images --format '{{.Repository}}:{{.Tag}}' \
               "harmonia-base-${HARMONIA_DOCKER_RELEASE:-bookworm}" | head -1)
    [ -n "$base" ] || die "no base image: scripts/cluster-docker prepare first"
    # the host's apt sources in the container, as cluster-docker's base build does
    srcs=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    # libopenmpi-dev is only fetched (its headers compile the MPI program on ctl):
    # installing it wants libevent-dev, which the mirror may hold at another
    # version than the base image's libevent
    docker run --rm -v "$dir:/var/cache/apt/archives" -e SRCS="$srcs" "$base" sh -c '
        printf "%s\n" "$SRCS" > /etc/apt/sources.list.d/host.sources
        apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only \
            --no-install-recommends openmpi-bin python3-h5py python3-numpy >/dev/null &&
        mkdir -p /var/cache/apt/archives/dev && cd /var/cache/apt/archives/dev &&
        apt-get download -q libopenmpi-dev >/dev/null' \
        || die "apt-get --download-only failed in $base"
    ls "$dir"/*.deb | wc -l | sed 's/$/ packages in '"${dir//\//\\/}"'/'
    exit 0 ;;
install)
    [ $# -eq 2 ] || die "usage: bench_interpose_docker.sh install DIR"
    ls "$2"/*.deb >/dev/null 2>&1 || die "$2: no .deb files (bench_interpose_docker.sh debs $2)"
    for s in $nodes; do
        tar -C "$2" -cf - --exclude=partial --exclude=lock . | on "$s" sh -c \
            'rm -rf /tmp/ipd-debs && mkdir /tmp/ipd-debs && tar -xf - -C /tmp/ipd-debs &&
             DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/ipd-debs/*.deb >/tmp/ipd-debs.log 2>&1 ||
             { tail -n 20 /tmp/ipd-debs.log; exit 1; }
             rm -rf /opt/ipd-mpi-dev; for d in /tmp/ipd-debs/dev/*.deb; do dpkg -x "$d" /opt/ipd-mpi-dev; done
             rm -rf /tmp/ipd-debs' \
            || die "dpkg -i failed on $s"
        echo "installed on $s"
    done
    exit 0 ;;
run) ;;
*) die "unknown command '$1' (run|debs DIR|install DIR)" ;;
esac

if ! on ctl true 2>/dev/null; then
    echo "bench_interpose_docker: no running Docker cluster (scripts/cluster-docker up), skipped"
    exit 0
fi
mkdir -p "$out"
# the programs and the in-cluster driver, on the shared PFS
tar -C "$top/bench" -cf - bench_interpose_docker.py bench_interpose_mpiio.c bench_interpose_h5.py |
    on ctl sh -c 'rm -rf /pfs/bench-ipd && mkdir -p /pfs/bench-ipd && tar -xf - -C /pfs/bench-ipd &&
                  chmod -R a+rX /pfs/bench-ipd'
# the kinds whose programs the cluster lacks are skipped (said)
ready=
skip() { echo "bench_interpose_docker: $1 skipped: $2 (bench_interpose_docker.sh debs DIR; ... install DIR)"; }
for k in $kinds; do
    case $k in
    dd) ready+=" dd" ;;
    mpiio)
        # Debian's OpenMPI, compiled against libopenmpi-dev's headers (install DIR
        # unpacks them in /opt/ipd-mpi-dev on ctl) and linked to libopenmpi3
        inc=/opt/ipd-mpi-dev/usr/lib/x86_64-linux-gnu/openmpi/include
        if ! on ctl test -e "$inc/mpi.h"; then skip mpiio "no OpenMPI headers on ctl"
        elif ! on c1 sh -c 'command -v mpirun >/dev/null'; then skip mpiio "no mpirun on c1"
        else
            on ctl gcc -O2 -I"$inc" -o /pfs/bench-ipd/mpiio /pfs/bench-ipd/bench_interpose_mpiio.c \
                /usr/lib/x86_64-linux-gnu/libmpi.so.40
            ready+=" mpiio"
        fi ;;
    h5py)
        if on c1 python3 -c 'import h5py' 2>/dev/null; then ready+=" h5py"
        else skip h5py "no h5py on c1"; fi ;;
    *) die "unknown kind '$k' (dd mpiio h5py)" ;;
    esac
done
kinds=${ready# }
[ -n "$kinds" ] || exit 0

node_mbs=1000                   # the cluster's own bbmgr.yaml: nodes at 1 GB/s
[ "$node_bw" = keep ] || node_mbs=$(python3 "$helper" platform --mbs "$node_bw")
yaml_saved=
restore() {
    on ctl bbmgr policy fairshare >/dev/null || true
    if [ -n "$yaml_saved" ]; then
        on ctl sh -c 'cat > /etc/harmonia/bbmgr.yaml' < "$yaml_saved" || true
        on ctl /opt/harmonia/docker/control bbmgrd-stop || true
        on ctl /opt/harmonia/docker/control bbmgrd-start >/dev/null || true
    fi
}
trap restore EXIT
if [ "$node_bw" != keep ]; then
    on ctl cat /etc/harmonia/bbmgr.yaml > "$out/bbmgr.yaml.orig"
    python3 "$helper" platform "$node_bw" < "$out/bbmgr.yaml.orig" > "$out/bbmgr.yaml"
    yaml_saved=$out/bbmgr.yaml.orig
    on ctl sh -c 'cat > /etc/harmonia/bbmgr.yaml' < "$out/bbmgr.yaml"
    on ctl /opt/harmonia/docker/control bbmgrd-stop
    on ctl /opt/harmonia/docker/control bbmgrd-start >/dev/null
fi

load=$(uptime)
printf 'bench_interpose_docker: %d jobs at once, %d iterations of %ss compute + %d MiB each; nodes modelled at %s\n' \
    "$jobs" "$iters" "$compute" "$vol" "$node_bw" | tee "$out/table.txt"
printf 'load before: %s\n' "$load" | tee -a "$out/table.txt"
for k in $kinds; do
    for p in $policies; do
        on ctl bbmgr policy "$p" >/dev/null
        for m in interposer libharmonia; do
            on ctl python3 /pfs/bench-ipd/bench_interpose_docker.py run --kind "$k" --mode "$m" \
                --policy "$p" --jobs "$jobs" --iters "$iters" --compute "$compute" \
                --volume "$vol" --node-mbs "$node_mbs" > "$out/$k-$p-$m.json" \
                || die "$k $p $m failed"
        done
    done
done
printf 'load after: %s\n' "$(uptime)" | tee -a "$out/table.txt"
python3 "$helper" report --dir "$out" --kinds "$kinds" --policies "$policies" \
    --node-bw "$node_bw" | tee -a "$out/table.txt"
