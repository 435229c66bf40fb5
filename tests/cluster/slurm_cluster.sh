#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts and stops a real one-node Slurm cluster (its own munged, slurmctld and slurmd) entirely
# under one temporary folder, so that a CTest test can submit real jobs with sbatch and watch them
# with squeue/scontrol. It never writes to /etc, /run or /var and never touches a system munged or
# Slurm daemon: every daemon gets its key, socket, ports, state, spool, pid and log files under DIR.
#
# Usage (as root; Debian 12 packages slurm-wlm and munge, Slurm 22.05):
#   eval "$(tests/cluster/slurm_cluster.sh start DIR)"   # prints: export SLURM_CONF=DIR/slurm.conf
#   sbatch --parsable ...; squeue -h -j ID; scontrol show job ID
#   tests/cluster/slurm_cluster.sh stop DIR              # idempotent; safe after a failed start
# Exit codes: 0 done; 77 this machine cannot run the cluster (not root, a binary missing, a daemon
# refused to start; one line on stderr, whatever was started is stopped): use it as CTest's
# SKIP_RETURN_CODE; 2 bad usage (or a cluster already runs in DIR).
# Environment: SLURM_TEST_MAX_ARRAY_SIZE (MaxArraySize, default 1001: job arrays of indices
# 0..1000), SLURM_CLUSTER_START_TIMEOUT (seconds to wait for the node to be idle, default 30).
# DIR must exist or be creatable and be short: Unix socket paths (DIR/munge.socket and slurmd's
# per-step sockets under DIR/spool) must fit in 107 bytes. Daemon logs: DIR/log/*.log.
# `stop` cancels the jobs, then ends the daemons, then whatever is left of the cluster, found
# without pid files (so also after a crash): the daemons carry SLURM_CLUSTER_HARNESS=DIR in their
# environment, each slurmstepd holds DIR/log/slurmd.log open, the jobs descend from those.
# Start takes about 0.5 s here, stop 1.5 to 2.5 s (most of it init reaping the exited daemons),
# up to about 8 s when it must end running jobs that ignore SIGTERM (KillWait=2).
#
# What Slurm 22.05 does that a test must know (measured with this harness):
# - The first job submitted in the first ~3 s after start starts ~2.6 s after its submission
#   (later ones within ~1 s): poll with a timeout, never assume a start time.
# - A job or array has ended when `squeue -h -j ID` prints nothing (exit 0). Its tasks' states
#   and exit codes stay readable for MinJobAge=300 s: `squeue -h -t all -j ID -o '%i %T'`,
#   `scontrol show job ID_TASK` (JobState=CANCELLED ExitCode=0:15 for a task cancelled by
#   `scancel ID_TASK`: SIGCONT then SIGTERM at once, SIGKILL KillWait=2 s later).
# - `scontrol ping` answers at once (exit 1 when the controller is down); other commands retry a
#   dead controller for MessageTimeout-1 s (4 s here, 9 s with Debian's default), and a SLURM_CONF
#   naming a missing file for 60 s: test the file exists first.
# - An #SBATCH line is split on unquoted blanks; ' or " group (a backslash escapes anything, even
#   inside quotes, but cannot escape a blank outside them); an unquoted # ends the line. So write
#   --output="P" with \ and " in P backslash-escaped. The pattern P itself: %% is a literal %, and
#   a pattern containing any backslash is not expanded at all (%A, %a stay as written, \\ is a
#   literal \, a lone \ vanishes). A newline cannot be carried.
set -euo pipefail

readonly SKIP=77
readonly MAX_DIR_CHARS=64 # DIR + "/spool/" + host_JOBID.STEPID socket names stay under 107

die_usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

# The process state letter of PID, empty when it is gone (a zombie counts as gone: it runs nothing,
# and in this container init reaps it a moment later).
proc_state() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  [[ ${stat:0:1} == Z ]] || echo "${stat:0:1}"
}

alive() { [[ -n $(proc_state "$1") ]]; }

# Whether PID is a live process that this harness started for DIR (a pid file left by a crash may
# name a process that has nothing to do with us by now).
ours() {
  alive "$2" && grep -qzxF -- "SLURM_CLUSTER_HARNESS=$1" "/proc/$2/environ" 2>/dev/null
}

# PIDs of the processes of the cluster in DIR: those whose environment holds
# SLURM_CLUSTER_HARNESS=DIR (munged, slurmctld, slurmd), those that hold DIR/log/slurmd.log open
# (slurmstepd: slurmd starts it with an empty environment and detaches it), and their
# descendants (the job scripts), never this script or its callers.
harness_pids() {
  local dir=$1 roots all pid ppid grew table spare
  roots=$({
    grep -lzxF -- "SLURM_CLUSTER_HARNESS=$dir" /proc/[0-9]*/environ 2>/dev/null || true
    find /proc/[0-9]*/fd -maxdepth 1 -type l -printf '%h\t%l\n' 2>/dev/null |
      LOG=$dir/log/slurmd.log awk -F '\t' '$2 == ENVIRON["LOG"] { print $1 }' || true
  } | cut -d/ -f3 | sort -u)
  spare=" $(callers) "
  all=" "
  for pid in $roots; do [[ $spare == *" $pid "* ]] || all+="$pid "; done
  [[ $all != " " ]] || return 0
  table=$(ps -e -o pid=,ppid=)
  grew=1
  while ((grew)); do
    grew=0
    while read -r pid ppid; do
      if [[ $all != *" $pid "* && $all == *" $ppid "* && $spare != *" $pid "* ]]; then
        all+="$pid "
        grew=1
      fi
    done <<<"$table"
  done
  for pid in $all; do alive "$pid" && echo "$pid"; done
  return 0
}

# This script's PID, its subshell's and their ancestors: never to be signalled.
callers() {
  local pid=$BASHPID
  echo "$$"
  while [[ -n $pid && $pid != 0 && $pid != 1 ]]; do
    echo "$pid"
    pid=$(awk '{ sub(/^.*\) /, ""); print $2 }' "/proc/$pid/stat" 2>/dev/null) || break
  done
}

# Sends SIG to PIDS and waits up to SECONDS for all of them to be gone. Returns 1 if some remain.
signal_and_wait() {
  local sig=$1 seconds=$2 p left
  shift 2
  for p in "$@"; do kill "-$sig" "$p" 2>/dev/null || true; done
  local deadline=$((SECONDS + seconds))
  while :; do
    left=0
    for p in "$@"; do alive "$p" && left=1; done
    ((left)) || return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

cmd_stop() {
  local dir=$1 seen left
  [[ -d $dir ]] || return 0
  mapfile -t seen < <(harness_pids "$dir")
  # Cancel the jobs first, while slurmctld and slurmd still run: a SIGTERM to slurmd ends no job
  # (slurmstepd and its job survive a slurmd restart on purpose), and a cancel is what has
  # slurmstepd end its job's processes cleanly (SIGTERM, SIGKILL after KillWait).
  if [[ -s $dir/run/slurmctld.pid ]] && ours "$dir" "$(<"$dir/run/slurmctld.pid")"; then
    SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --user=root >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 5))
    while ((SECONDS < deadline)) &&
      [[ -n $(SLURM_CONF=$dir/slurm.conf timeout 3 squeue -h -t R,CG,S -o %i 2>/dev/null) ]]; do
      sleep 0.2
    done
  fi
  local daemon pid
  for daemon in slurmd slurmctld; do
    if [[ -s $dir/run/$daemon.pid ]]; then
      pid=$(<"$dir/run/$daemon.pid")
      ours "$dir" "$pid" && { signal_and_wait TERM 10 "$pid" || signal_and_wait KILL 5 "$pid" || true; }
    fi
  done
  # munged last: the Slurm daemons talk to it until they exit. Then anything left (a slurmstepd
  # or job process of a job the cancel did not reach).
  mapfile -t left < <(harness_pids "$dir")
  if ((${#left[@]})); then
    signal_and_wait TERM 5 "${left[@]}" || signal_and_wait KILL 5 "${left[@]}" || true
  fi
  mapfile -t left < <(harness_pids "$dir")
  if ((${#left[@]})); then
    echo "slurm_cluster.sh stop: processes still alive after SIGKILL: ${left[*]}" >&2
    return 1
  fi
  # The daemons were children of an earlier `start`, so init reaps them, here about a second
  # later: wait for that too (bounded), so that a pgrep right after stop finds no zombie.
  local deadline=$((SECONDS + 5))
  for pid in "${seen[@]}"; do
    while [[ -e /proc/$pid ]] && ((SECONDS < deadline)); do sleep 0.1; done
  done
  rm -f "$dir"/run/*.pid
}

# Prints the last lines of FILE joined on one line, for a one-line skip message.
log_tail() {
  [[ -s $1 ]] || {
    echo "(no $1)"
    return
  }
  tail -n "${2:-4}" "$1" | tr '\n' '|' | sed 's/|$//; s/|/ | /g'
}

# What a daemon said last: its stderr (where it reports a configuration it refuses, before it
# opens its log file), else its log file.
daemon_output() {
  if [[ -s $DIR/log/$1.stderr ]]; then
    log_tail "$DIR/log/$1.stderr"
  else
    log_tail "$DIR/log/$1.log"
  fi
}

skip() {
  echo "slurm_cluster.sh: cannot run a Slurm cluster here: $*" >&2
  cmd_stop "$DIR" >/dev/null 2>&1 || true
  exit "$SKIP"
}

# A TCP port on which nothing listens, below the kernel's ephemeral range so that no client socket
# takes it between this check and the daemon's bind. EXCLUDE is a port already chosen.
free_port() {
  local exclude=${1:-0} port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    ((port == exclude)) && continue
    if command -v ss >/dev/null; then
      ss -Htan "( sport = :$port )" 2>/dev/null | grep -q . && continue
    else
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    fi
    echo "$port"
    return 0
  done
  return 1
}

write_slurm_conf() {
  local dir=$1 host=$2 ctld_port=$3 slurmd_port=$4 cpus mem_mib
  cpus=$(nproc)
  mem_mib=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) / 1024))
  cat >"$dir/slurm.conf" <<EOF
# Written by slurm_cluster.sh for a test: a one-node cluster living under $dir.
ClusterName=backofftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
TmpFS=$dir/tmp
# No cgroups at all: process tracking by the /proc parent tree, no task binding or containment,
# no accounting gathering. Only proctrack/cgroup, task/cgroup and jobacct_gather/cgroup load
# Slurm's cgroup plugin; with none of them nothing creates a cgroup, and cgroup.conf (looked for
# beside slurm.conf, absent) just gives defaults. Tried here with proctrack/cgroup: slurmd starts
# and the node is idle, but every job's slurmstepd then fails ("cgroup namespace 'freezer' not
# mounted. aborting": a container's cgroup hierarchy is not Slurm's to write), the job ends with
# no output and the node is drained.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobContainerType=job_container/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# Queued jobs start on the next second, not up to 3 s later (22.05 coalesces scheduling passes
# that job ends and submissions ask for into one per batch_sched_delay seconds, default 3).
SchedulerParameters=batch_sched_delay=0
MaxArraySize=${SLURM_TEST_MAX_ARRAY_SIZE:-1001}
ReturnToService=2
# Short timeouts so that start, cancel and stop take seconds, not minutes.
MessageTimeout=5
TCPTimeout=2
SlurmctldTimeout=5
SlurmdTimeout=5
BatchStartTimeout=5
KillWait=2
UnkillableStepTimeout=30
InactiveLimit=0
WaitTime=0
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mib State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

# Starts a Slurm daemon in the foreground (-D) in its own session, detached from our stdio so
# that `$(slurm_cluster.sh start DIR)` and CTest do not wait for it. Sets SPAWNED to its PID
# (setsid execs in place: a background child of a script is no process group leader).
spawn() {
  local dir=$1 name=$2
  shift 2
  SLURM_CLUSTER_HARNESS=$dir SLURM_CONF=$dir/slurm.conf setsid "$@" \
    </dev/null >"$dir/log/$name.stderr" 2>&1 &
  SPAWNED=$!
}

# Waits up to SECONDS for CHECK to succeed while process PID lives; fails at once if PID exits
# (a daemon that refused its configuration), so that a skip takes no 30 s.
wait_until() {
  local seconds=$1 pid=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@"; do
    alive "$pid" && ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

ctld_answers() { SLURM_CONF=$DIR/slurm.conf timeout 5 scontrol ping 2>/dev/null | grep -q UP; }
node_idle() {
  [[ $(SLURM_CONF=$DIR/slurm.conf timeout 5 sinfo -h -n "$HOST" -o %T 2>/dev/null) == idle ]]
}

cmd_start() {
  local dir=$DIR
  local max_array=${SLURM_TEST_MAX_ARRAY_SIZE:-1001}
  if ! [[ $max_array =~ ^[0-9]+$ ]] || ((max_array > 4000001)); then
    echo "slurm_cluster.sh: SLURM_TEST_MAX_ARRAY_SIZE=$max_array is not a whole number in" \
      "0..4000001 (Slurm's bounds for MaxArraySize)" >&2
    exit 2
  fi
  [[ $(id -u) == 0 ]] || skip "not root (slurmd must run as root to start jobs as their user)"
  local bin
  for bin in munged mungekey slurmctld slurmd slurmstepd sbatch squeue sinfo scontrol scancel; do
    command -v "$bin" >/dev/null || skip "$bin not found (Debian packages: slurm-wlm munge)"
  done
  ((${#dir} <= MAX_DIR_CHARS)) ||
    skip "DIR is ${#dir} characters, more than $MAX_DIR_CHARS: Unix socket paths under it would not fit"
  if [[ -n $(harness_pids "$dir") ]]; then
    echo "slurm_cluster.sh: a cluster already runs in $dir: stop it first" >&2
    exit 2
  fi
  rm -rf "$dir/state" "$dir/spool" "$dir/run" "$dir/log" "$dir/tmp"
  mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log" "$dir/tmp"
  chmod 0700 "$dir/state" "$dir/spool"
  : >"$dir/plugstack.conf"

  # munge: its own key, socket, seed, pid and log. --force because munged refuses a socket in a
  # folder that is not world-searchable (mktemp -d makes 0700 folders) and key or log folders
  # that others may write (/tmp): neither matters for a private test cluster.
  rm -f "$dir/munge.key"
  mungekey --create --keyfile="$dir/munge.key" --bits=1024 >/dev/null 2>&1 ||
    skip "mungekey could not create $dir/munge.key"
  chmod 0400 "$dir/munge.key"
  SLURM_CLUSTER_HARNESS=$dir munged --force --socket="$dir/munge.socket" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/run/munged.seed" --key-file="$dir/munge.key" \
    </dev/null >"$dir/log/munged.stderr" 2>&1 ||
    skip "munged refused to start: $(log_tail "$dir/log/munged.log")"

  local ctld_port slurmd_port
  ctld_port=$(free_port) || skip "no free TCP port for slurmctld"
  slurmd_port=$(free_port "$ctld_port") || skip "no free TCP port for slurmd"
  write_slurm_conf "$dir" "$HOST" "$ctld_port" "$slurmd_port"

  local timeout=${SLURM_CLUSTER_START_TIMEOUT:-30}
  spawn "$dir" slurmctld slurmctld -D -i
  if ! wait_until "$timeout" "$SPAWNED" ctld_answers; then
    skip "slurmctld exited or did not answer within ${timeout}s: $(daemon_output slurmctld)"
  fi
  spawn "$dir" slurmd slurmd -D
  if ! wait_until "$timeout" "$SPAWNED" node_idle; then
    skip "slurmd exited or node $HOST was not idle within ${timeout}s: $(daemon_output slurmd)"
  fi
  echo "export SLURM_CONF=$dir/slurm.conf"
}

(($# == 2)) || die_usage
case $2 in
/*) DIR=${2%/} ;;
*) DIR=$PWD/${2%/} ;;
esac
HOST=$(hostname -s)
case $1 in
start)
  mkdir -p "$DIR" || die_usage
  cmd_start
  ;;
stop) cmd_stop "$DIR" ;;
*) die_usage ;;
esac
