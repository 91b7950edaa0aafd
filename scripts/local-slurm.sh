#!/bin/bash
# Starts a one-node Slurm cluster on this machine, for the Slurm integration test
# (tests/it/slurm.rs) and for trying `normscope slurm --submit` without a cluster.
#
# Debian or Ubuntu, as root; no systemd needed (it runs inside a container). Installs
# slurmctld, slurmd, slurm-client and munge from the distribution if they are missing, writes a
# minimal /etc/slurm/slurm.conf (select/cons_tres, proctrack/linuxproc, task/none, no
# accounting database) for this host's CPUs and memory, starts munged, slurmctld and slurmd, and
# waits until the node is idle.
#
#   sudo scripts/local-slurm.sh          # start (about a minute with the install)
#   sudo scripts/local-slurm.sh stop     # stop the daemons
set -euo pipefail

# Whether a live (not zombie) process named $1 exists: a daemon that has just exited can stay a
# zombie for a while in a container whose init reaps lazily, and `pgrep -x` still matches it.
running() {
    ps -C "$1" -o stat= 2>/dev/null | grep -qv '^Z'
}

# Stops $1 and waits (up to 30 s) until it has exited, so a start right after a stop works.
stop() {
    pkill -x "$1" || true
    for _ in $(seq 1 60); do
        running "$1" || return 0
        sleep 0.5
    done
    echo "$1 did not exit; killing it" >&2
    pkill -9 -x "$1" || true
}

if [ "${1:-}" = stop ]; then
    stop slurmd
    stop slurmctld
    stop munged
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "run as root (it installs packages and starts daemons)" >&2
    exit 2
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge
fi

host=$(hostname -s)
# slurmctld and slurmd look the node's name up; make sure it resolves.
if ! getent hosts "$host" >/dev/null; then
    echo "127.0.0.1 $host" >>/etc/hosts
fi
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
# The node's layout as slurmd sees it (sockets, cores), so slurmd does not complain that the
# configuration differs from the hardware; just the CPU count if slurmd -C fails.
topo=$(slurmd -C 2>/dev/null | head -n 1 \
    | grep -oE '(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=[0-9]+' \
    | tr '\n' ' ' || true)
[ -n "$topo" ] || topo="CPUs=$cpus"

# munge: a key, its run folder, the daemon.
mkdir -p /etc/munge /run/munge /var/log/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
chmod 755 /run/munge
running munged || runuser -u munge -- /usr/sbin/munged

# Slurm: one node, one partition, no accounting.
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=normscope-local
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
MailProg=/bin/true
# Without a default, a job that gives no --mem gets the whole node's memory and jobs run one at
# a time; this lets one job per CPU run at once.
DefMemPerCPU=$(( mem / cpus ))
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host ${topo}RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# No cgroup.conf: Slurm 22.05 (bookworm) autodetects the cgroup plugin and only loads it;
# with proctrack/linuxproc and task/none nothing uses it.

running slurmctld || slurmctld
running slurmd || slurmd

for _ in $(seq 1 60); do
    ping=$(scontrol ping 2>/dev/null || true)
    state=$(sinfo -h -o %T 2>/dev/null || true)
    if [[ $ping == *UP* ]] && grep -Eq '^(idle|mixed|allocated)' <<<"$state"; then
        sinfo
        exit 0
    fi
    sleep 1
done
echo "Slurm did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
exit 1
