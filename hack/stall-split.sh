#!/bin/sh
# stall-split.sh MODE [SECONDS]: the scenarios behind docs/top.md's stall split (cpu.pressure
# against cpu.stat's throttled time). Run as root, under the host lock, in a throwaway place:
# MODE v2 in a pure cgroup v2 guest (the VMs: /sys/fs/cgroup, as PID 1's child with busybox),
# MODE hybrid on a host with the cpu controller on v1 (/sys/fs/cgroup/cpu) and PSI per v2
# group (/sys/fs/cgroup/unified): each process is placed in both, at the same path.
# Prints SNAP lines (cumulative counters at the start and end of each window); rates are
# their differences over the uptime's. SHARES (hybrid) sets the v1 groups' cpu.shares.
# It makes stall-split/A and stall-split/N and removes them.
# stall-split.sh rates <LOG: turns the SNAP lines (and RESULT-KERNEL lines) into per-second
# figures: throttled, nr_throttled, some, full and usage.
if [ "$1" = rates ]; then
  exec awk '
# pairs of SNAP lines per scenario/group -> per-second rates
/SNAP/ { k=$2" "$3; for(i=4;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]}
  if (k in up) { dt=v["up"]-up[k];
    printf "%s %s %s dt=%.2f thr/s=%.3f nthr/s=%.1f some/s=%.3f full/s=%.3f use/s=%.3f\n", kern, $2, $3, dt, (v["thr"]-thr[k])/1e6/dt, (v["nthr"]-nthr[k])/dt, (v["some"]-some[k])/1e6/dt, (v["full"]-full[k])/1e6/dt, (v["use"]-use[k])/1e6/dt; delete up[k] }
  else { up[k]=v["up"]; thr[k]=v["thr"]; nthr[k]=v["nthr"]; some[k]=v["some"]; full[k]=v["full"]; use[k]=v["use"] } }
/RESULT-KERNEL/ { for(i=1;i<NF;i++) if ($i ~ /RESULT-KERNEL$/) kern=$(i+1) }
  '
fi
MODE=$1; DUR=${2:-5}
if [ "$MODE" = v2 ]; then V2=/sys/fs/cgroup; V1=; else V2=/sys/fs/cgroup/unified; V1=/sys/fs/cgroup/cpu; fi
P=stall-split
mk() { # mk NAME QUOTA_USEC|max
  mkdir -p $V2/$P/$1; [ -n "$V1" ] || echo +cpu >$V2/$P/cgroup.subtree_control
  if [ -n "$V1" ]; then mkdir -p $V1/$P/$1; [ "$2" = max ] && q=-1 || q=$2; echo 100000 >$V1/$P/$1/cpu.cfs_period_us; echo $q >$V1/$P/$1/cpu.cfs_quota_us; echo ${SHARES:-1024} >$V1/$P/$1/cpu.shares
  else echo "$2 100000" >$V2/$P/$1/cpu.max; fi
}
put() { echo $2 >$V2/$P/$1/cgroup.procs; [ -z "$V1" ] || echo $2 >$V1/$P/$1/cgroup.procs; }
loop() { # loop GROUP CPU
  taskset -c $2 sh -c 'while :; do :; done' & pid=$!; put $1 $pid; PIDS="$PIDS $pid"
}
snap() { # snap SCEN GROUP
  up=$(cut -d' ' -f1 /proc/uptime)
  if [ -n "$V1" ]; then
    thr=$(awk '/^throttled_time/{printf "%d", $2/1000}' $V1/$P/$2/cpu.stat); nthr=$(awk '/^nr_throttled/{print $2}' $V1/$P/$2/cpu.stat)
  else
    thr=$(awk '/^throttled_usec/{print $2}' $V2/$P/$2/cpu.stat); nthr=$(awk '/^nr_throttled/{print $2}' $V2/$P/$2/cpu.stat)
  fi
  use=$(awk '/^usage_usec/{print $2}' $V2/$P/$2/cpu.stat)
  some=$(awk '/^some/{sub("total=","",$5); print $5}' $V2/$P/$2/cpu.pressure)
  full=$(awk '/^full/{sub("total=","",$5); print $5}' $V2/$P/$2/cpu.pressure)
  echo "SNAP $1 $2 up=$up thr=$thr nthr=$nthr some=$some full=$full use=$use"
}
clean() {
  for p in $PIDS; do kill $p; done; wait 2>/dev/null; PIDS=
  for d in $V2/$P/*/ $V2/$P; do rmdir $d 2>/dev/null; done
  [ -z "$V1" ] || for d in $V1/$P/*/ $V1/$P; do rmdir $d; done
}
run() { # run SCEN: groups set up and loops started by the caller
  sleep 1; snap $1 A; [ -d $V2/$P/N ] && snap $1 N; sleep $DUR; snap $1 A; [ -d $V2/$P/N ] && snap $1 N; clean
}
mkdir -p $V2/$P; [ -z "$V1" ] || mkdir -p $V1/$P
[ "$MODE" = v2 ] && echo +cpu >$V2/cgroup.subtree_control
# a: throttled alone, one thread under 20%
mk A 20000; loop A 0; run a
# b: unlimited, crowded by an unlimited neighbour on the same CPU
mk A max; mk N max; loop A 0; loop N 0; run b
# c: both: 20% quota and the neighbour on the same CPU
mk A 20000; mk N max; loop A 0; loop N 0; run c
# d: throttled alone, two threads on two CPUs under 20%
mk A 20000; loop A 0; loop A 1; run d
# e: 60% quota, two threads on two CPUs, neighbour busy on both
mk A 60000; mk N max; loop A 0; loop A 1; loop N 0; loop N 1; run e
# f: unlimited, two threads on two CPUs, neighbour busy on both
mk A max; mk N max; loop A 0; loop A 1; loop N 0; loop N 1; run f
echo DONE
