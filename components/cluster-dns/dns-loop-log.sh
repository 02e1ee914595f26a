#!/bin/bash
# Seed 004, read from a node: a CoreDNS of kube-system (the cluster DNS or the node-local cache)
# that its loop plugin stopped. The plugin halts CoreDNS when its own HINFO probe comes back to it
# more than twice, logging `[FATAL] plugin/loop: Loop (<from> -> <to>) detected for zone "<zone>"`
# (coredns/coredns@v1.14.7 plugin/loop/loop.go ServeDNS). Reads the last 200 lines of each
# kube-system container log kubelet keeps on the node
# (/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log). Read-only.
# Prints "loop <pod dir>/<container> <the latest such line, cut to 300 chars>" per log that has one.
set -uo pipefail
shopt -s nullglob

for log in /var/log/pods/kube-system_*/*/*.log; do
  line="$(tail -n 200 "$log" 2>/dev/null | grep -F 'plugin/loop: Loop (' | tail -n1)"
  [ -n "$line" ] || continue
  relative="${log#/var/log/pods/}"
  echo "loop ${relative%%/*}/$(basename "$(dirname "$log")") ${line:0:300}"
done
exit 0
