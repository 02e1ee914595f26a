#!/bin/bash
# Looks, from a downstream server node, at whether Rancher's cluster agent can reach Rancher:
# what Rancher's planner waits for when it says "waiting for cluster agent to connect"
# (rancher/rancher@v2.14.3 pkg/capr/planner/planner.go, reconcile). Read-only; changes nothing.
# Parameters, set before this text by the caller:
#   RANCHER_HOST     Rancher's hostname
#   NAMESERVER       the kubelet's cluster-dns address (what pods get as nameserver)
#   CLUSTER_DOMAIN   the cluster domain, e.g. cluster.local
#   LOOKUP_SECONDS   bound of the lookup
#   NEEDS_AGENT_LOG  yes: on a node without the agent's log, stop before the lookup
#   LOOKUP           no: print the log and "lookup=skipped 0", and stop (doctor, which writes
#                    nothing on a host: the lookup below writes a resolv.conf in a temporary
#                    directory)
# Prints on stdout, one per line:
#   agent-log: <line>           the cluster agent's last log lines (none: "agent-log-missing")
#   lookup=ok <seconds> <addresses> | lookup=failed <seconds> | lookup=timeout <seconds>
#   | lookup=unavailable <seconds> <why>   (the pod-like lookup itself could not run)
#   | lookup=skipped 0                     (NEEDS_AGENT_LOG=yes and no agent log here)
set -uo pipefail

# The cattle-cluster-agent Deployment's container is `cluster-register`
# (rancher/rancher@v2.14.3 pkg/systemtemplate/template.go); kubelet writes container logs to
# /var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log.
shopt -s nullglob
logs=(/var/log/pods/cattle-system_cattle-cluster-agent-*/cluster-register/*.log)
if [ "${#logs[@]}" -eq 0 ]; then
  echo "agent-log-missing"
  if [ "${NEEDS_AGENT_LOG:-no}" = yes ]; then
    echo "lookup=skipped 0"
    exit 0
  fi
else
  tail -q -n 8 "${logs[@]}" 2>/dev/null | grep -v '^\s*$' | tail -n 8 | sed 's/^/agent-log: /'
fi
if [ "${LOOKUP:-yes}" = no ]; then
  echo "lookup=skipped 0"
  exit 0
fi

# A pod's resolv.conf as kubelet writes it for a ClusterFirst pod in cattle-system: the
# cluster DNS, the namespace's search domains, then the node's own search list, ndots:5
# (kubernetes/kubernetes pkg/kubelet/network/dns/dns.go). The node's /etc/hosts is no pod's.
node_search="$(awk '$1 == "search" || $1 == "domain" { for (i = 2; i <= NF; i++) printf "%s ", $i }' /etc/resolv.conf 2>/dev/null)"
dir="$(mktemp -d)"
# Only the files written below go; the directory is removed only when empty.
trap 'rm -f "$dir/resolv.conf" "$dir/hosts" "$dir/err"; rmdir "$dir" 2>/dev/null || true' EXIT
{
  echo "nameserver $NAMESERVER"
  echo "search cattle-system.svc.$CLUSTER_DOMAIN svc.$CLUSTER_DOMAIN $CLUSTER_DOMAIN $node_search"
  echo "options ndots:5"
} >"$dir/resolv.conf"
printf '127.0.0.1 localhost\n' >"$dir/hosts"
start=$(date +%s%N)
# shellcheck disable=SC2016 # expanded by the inner shell
answer="$(timeout "$LOOKUP_SECONDS" unshare -m sh -c \
  'mount --bind "$1/resolv.conf" /etc/resolv.conf && mount --bind "$1/hosts" /etc/hosts && getent ahosts "$2"' \
  sh "$dir" "$RANCHER_HOST" 2>"$dir/err")"
rc=$?
seconds="$(awk -v s="$start" -v e="$(date +%s%N)" 'BEGIN { printf "%.1f", (e - s) / 1e9 }')"
# getent exits 2 when the name is not found; anything else is the check failing to run.
if [ "$rc" -eq 0 ]; then
  echo "lookup=ok $seconds $(awk '{ print $1 }' <<<"$answer" | sort -u | tr '\n' ' ')"
elif [ "$rc" -eq 124 ]; then
  echo "lookup=timeout $seconds"
elif [ "$rc" -eq 2 ]; then
  echo "lookup=failed $seconds"
else
  echo "lookup=unavailable $seconds exit $rc: $(tr '\n' ' ' <"$dir/err")"
fi
