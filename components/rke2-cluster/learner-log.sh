#!/bin/bash
# Seed 003, read from a server: whether rke2-server's recent log shows its join held up by etcd.
# RKE2 retries a join once a second while etcd refuses a new learner because another is still
# one ("too many learner members in cluster", etcd's ErrTooManyLearners) or reports the cluster
# unhealthy ("unhealthy cluster"), logging "Waiting for other members to finish joining etcd
# cluster: <error>" (k3s-io/k3s@2614da01e7f1 pkg/etcd/etcd.go Start). The log is read as
# `systemctl status` shows it: the unit's most recent journal lines (systemctl(1), --lines).
# Read-only. Parameters: LINES (how many of the most recent lines to read).
# Prints "learner=<count>", "unhealthy=<count>" and, when either is above 0, "last=<etcd's error
# in the latest such line>".
set -uo pipefail

out="$(systemctl status --no-pager --full --lines="${LINES:-500}" rke2-server.service 2>/dev/null |
  grep 'Waiting for other members to finish joining etcd cluster')"
echo "learner=$(grep -c 'too many learner members in cluster' <<<"$out")"
echo "unhealthy=$(grep -c 'unhealthy cluster' <<<"$out")"
last="$(tail -n1 <<<"$out" | grep -o 'etcdserver: [a-z ]*' | tail -n1)"
[ -z "$last" ] || echo "last=$last"
