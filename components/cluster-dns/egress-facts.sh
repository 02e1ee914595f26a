#!/bin/bash
# Read-only: the NetworkPolicies, pods and workloads (the kinds whose controllers start pods from a
# template) of each namespace the DNS egress policy is meant for,
# read with RKE2's own kubectl and admin kubeconfig on a server (rancher/rke2-docs@9477b7b1
# docs/cluster_access.md: /etc/rancher/rke2/rke2.yaml, /var/lib/rancher/rke2/bin/kubectl).
# RKE2_FACTS_SCRIPT (the rke2-facts.sh text) finds the data-dir RKE2 reads there, whose bin/ holds
# its kubectl; without it, the default data-dir.
# Parameters: NAMESPACES (space-separated). Prints `not-running` when the apiserver does not
# answer (RKE2 not started yet), else per namespace one tab-separated line:
#   <namespace> <1 when it exists, else 0> <NetworkPolicyList JSON> <PodList JSON> <List JSON of
#   its Deployments, StatefulSets, DaemonSets, Jobs and CronJobs>
set -uo pipefail

export KUBECONFIG="${KUBECONFIG:-/etc/rancher/rke2/rke2.yaml}"
data_dir=/var/lib/rancher/rke2
if [ -n "${RKE2_FACTS_SCRIPT:-}" ]; then
  data_dir="$(ROLE=server MEMBERS_SCRIPT="exit 1" bash -c "$RKE2_FACTS_SCRIPT" 2>/dev/null | sed -n 's/^data_dir=//p')"
  [ -n "$data_dir" ] || { echo "error: cannot read RKE2's data-dir on this server" >&2; exit 3; }
fi
kubectl="$data_dir/bin/kubectl"
if [ ! -x "$kubectl" ] || [ ! -r "$KUBECONFIG" ] ||
  [ "$("$kubectl" --request-timeout=5s get --raw /readyz 2>/dev/null)" != "ok" ]; then
  echo "not-running"
  exit 0
fi
# One line per list: JSON has no raw newline or tab inside its strings.
oneline() { tr -d '\n\t'; }
for ns in $NAMESPACES; do
  if ! err="$("$kubectl" --request-timeout=10s get namespace "$ns" -o name 2>&1 >/dev/null)"; then
    if [[ "$err" == *NotFound* ]]; then
      printf '%s\t0\t{}\t{}\t{}\n' "$ns"
      continue
    fi
    echo "error: cannot read namespace $ns: $err" >&2
    exit 3
  fi
  policies="$("$kubectl" --request-timeout=10s -n "$ns" get networkpolicies -o json)" || exit 3
  pods="$("$kubectl" --request-timeout=10s -n "$ns" get pods -o json)" || exit 3
  workloads="$("$kubectl" --request-timeout=10s -n "$ns" get \
    deployments.apps,statefulsets.apps,daemonsets.apps,jobs.batch,cronjobs.batch -o json)" || exit 3
  printf '%s\t1\t%s\t%s\t%s\n' "$ns" "$(oneline <<<"$policies")" "$(oneline <<<"$pods")" \
    "$(oneline <<<"$workloads")"
done
