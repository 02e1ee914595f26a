#!/bin/bash
# The join gate: waits until a server is fully in before the next one may join (seed 003:
# etcd admits one learner at a time; Node Ready or a healthy :2379 alone is not enough).
# Passes when, all at once:
#   1. the apiserver answers /readyz,
#   2. the Node is Ready,
#   3. its EtcdIsVoter condition is True,
#   4. etcd's member list shows no learner,
#   5. that list comes from the cluster the first server serves (its cluster ID): a server that
#      started an etcd cluster of its own passes 1-4 on its own, and fails here at once.
# Parameters: NODE_NAME, TIMEOUT_SECONDS, POLL_SECONDS, MEMBERS_SCRIPT (the etcd-members.sh text),
# DATA_DIR (RKE2's data-dir as the node step found it in config.yaml), and for a joining server
# FIRST_SERVER and FIRST_SERVER_CLUSTER_ID (the hex ID of the etcd cluster the first server's own
# etcd answers for, read there by the provider; empty on the first server).
# Progress every poll on stderr names what is still missing; on timeout it fails with the
# member list and the node's conditions.
set -uo pipefail

export KUBECONFIG="${KUBECONFIG:-/etc/rancher/rke2/rke2.yaml}"
export DATA_DIR="${DATA_DIR:-/var/lib/rancher/rke2}"
kubectl="$DATA_DIR/bin/kubectl"
command -v "$kubectl" >/dev/null || kubectl="$(command -v kubectl || echo kubectl)"
# Each call bounded: an apiserver that accepts connections before it can answer (its etcd not
# ready) would otherwise hold a poll in kubectl's TLS handshake.
kube() { "$kubectl" --request-timeout=5s "$@"; }

condition() {
  kube get node "$NODE_NAME" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}" 2>/dev/null
}
# (A learner's etcd serves no member list; that shows as the list missing until promotion.)
members() {
  local out
  if out="$(bash -c "$MEMBERS_SCRIPT" 2>&1)"; then echo "$out"; else echo "${out##*$'\n'}"; return 1; fi
}
# In `member list -w json` etcd writes "isLearner":true for learners only.

# A decimal uint64 (the IDs of `member list -w json`) in hex, as etcdctl's table and etcd's logs
# show IDs; bash's arithmetic is signed 64-bit, so the digits are divided by 16 by hand.
hex_of() {
  local n="$1" hex="" quotient digit rest i
  while [ -n "$n" ] && [ "$n" != 0 ]; do
    quotient="" rest=0
    for ((i = 0; i < ${#n}; i++)); do
      digit=$((rest * 10 + ${n:i:1}))
      quotient+=$((digit / 16))
      rest=$((digit % 16))
    done
    hex="$(printf '%x' "$rest")$hex"
    while [ "${quotient:0:1}" = 0 ]; do quotient="${quotient:1}"; done
    n="$quotient"
  done
  echo "${hex:-0}"
}
# The hex cluster ID in a member list's header, or nothing.
cluster_id_of() {
  local id
  id="$(sed -n 's/.*"cluster_id":"\{0,1\}\([0-9]\{1,20\}\)[",}].*/\1/p' <<<"$1" | head -n1)"
  [ -z "$id" ] || hex_of "$id"
}

started=$SECONDS
while :; do
  missing=()
  [ "$(kube get --raw /readyz 2>/dev/null)" = "ok" ] || missing+=("apiserver /readyz")
  [ "$(condition Ready)" = "True" ] || missing+=("Node Ready")
  [ "$(condition EtcdIsVoter)" = "True" ] || missing+=("EtcdIsVoter")
  if ! list="$(members)"; then missing+=("etcd member list")
  else
    grep -q '"isLearner":true' <<<"$list" && missing+=("no learner in etcd")
    own="$(cluster_id_of "$list")"
    if [ -n "${FIRST_SERVER_CLUSTER_ID:-}" ] && [ "$own" != "$FIRST_SERVER_CLUSTER_ID" ]; then
      echo "error: join gate for $NODE_NAME: its etcd serves cluster ${own:-(no cluster ID in its member list)}, not cluster $FIRST_SERVER_CLUSTER_ID of the first server ${FIRST_SERVER:-}: $NODE_NAME started an etcd cluster of its own instead of joining it. Check the server: line of its /etc/rancher/rke2/config.yaml and its etcd data under $DATA_DIR/server/db, then re-run." >&2
      exit 1
    fi
  fi
  elapsed=$((SECONDS - started))
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "ok: $NODE_NAME joined after ${elapsed}s: readyz, Ready, EtcdIsVoter, no learner" >&2
    exit 0
  fi
  if [ "$elapsed" -ge "$TIMEOUT_SECONDS" ]; then
    echo "error: join gate for $NODE_NAME timed out after ${elapsed}s; missing: $(IFS=,; echo "${missing[*]}"); member list: $(members | tr '\n' ';') conditions: $(kube get node "$NODE_NAME" -o json 2>&1 | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "waiting for $NODE_NAME (${elapsed}s of ${TIMEOUT_SECONDS}s): missing $(IFS=,; echo "${missing[*]}")" >&2
  sleep "$POLL_SECONDS"
done
