#!/bin/bash
# The join gate: waits until a server is fully in before the next one may join (seed 003:
# etcd admits one learner at a time; Node Ready or a healthy :2379 alone is not enough).
# Passes when, all at once:
#   1. the apiserver answers /readyz,
#   2. the Node is Ready,
#   3. its EtcdIsVoter condition is True,
#   4. etcd's member list shows no learner.
# Parameters: NODE_NAME, TIMEOUT_SECONDS, POLL_SECONDS, MEMBERS_SCRIPT (the etcd-members.sh text),
# DATA_DIR (RKE2's data-dir as the node step found it in config.yaml).
# Progress every poll on stderr names what is still missing; on timeout it fails with the
# member list and the node's conditions.
set -uo pipefail

export KUBECONFIG="${KUBECONFIG:-/etc/rancher/rke2/rke2.yaml}"
export DATA_DIR="${DATA_DIR:-/var/lib/rancher/rke2}"
kubectl="$DATA_DIR/bin/kubectl"
command -v "$kubectl" >/dev/null || kubectl="$(command -v kubectl || echo kubectl)"

condition() {
  "$kubectl" get node "$NODE_NAME" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}" 2>/dev/null
}
# (A learner's etcd serves no member list; that shows as the list missing until promotion.)
members() {
  local out
  if out="$(bash -c "$MEMBERS_SCRIPT" 2>&1)"; then echo "$out"; else echo "${out##*$'\n'}"; return 1; fi
}
# In `member list -w json` etcd writes "isLearner":true for learners only.

started=$SECONDS
while :; do
  missing=()
  [ "$("$kubectl" get --raw /readyz 2>/dev/null)" = "ok" ] || missing+=("apiserver /readyz")
  [ "$(condition Ready)" = "True" ] || missing+=("Node Ready")
  [ "$(condition EtcdIsVoter)" = "True" ] || missing+=("EtcdIsVoter")
  if ! list="$(members)"; then missing+=("etcd member list")
  elif grep -q '"isLearner":true' <<<"$list"; then missing+=("no learner in etcd")
  fi
  elapsed=$((SECONDS - started))
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "ok: $NODE_NAME joined after ${elapsed}s: readyz, Ready, EtcdIsVoter, no learner" >&2
    exit 0
  fi
  if [ "$elapsed" -ge "$TIMEOUT_SECONDS" ]; then
    echo "error: join gate for $NODE_NAME timed out after ${elapsed}s; missing: $(IFS=,; echo "${missing[*]}"); member list: $(members | tr '\n' ';') conditions: $("$kubectl" get node "$NODE_NAME" -o json 2>&1 | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "waiting for $NODE_NAME (${elapsed}s of ${TIMEOUT_SECONDS}s): missing $(IFS=,; echo "${missing[*]}")" >&2
  sleep "$POLL_SECONDS"
done
