#!/bin/bash
# Registers this node into a Rancher downstream custom cluster, once, then waits until the RKE2
# unit of Rancher's plan runs here. Safe to re-run: a node whose rancher-system-agent is already
# registered is not registered again (that would re-plan a running node); the wait runs again.
#
# Parameters, set before this text by the caller (they arrive on stdin, never on a command line):
#   MODE                 apply | check
#   REGISTRATION_COMMAND Rancher's node command; a secret (it carries the registration token)
#   RANCHER_CA           Rancher's CA as the stack pins it (empty: none). Rancher's node command
#                        fetches the installer with plain `curl -fL`, and rancher-system-agent
#                        trusts the system store, so the CA goes into the node's trust anchors.
#   RANCHER_HOST         Rancher's hostname, for the anchor's file name
#   ROLE_FLAGS           e.g. "--etcd --controlplane"
#   WAIT_UNIT            rke2-server | rke2-agent
#   TIMEOUT_SECONDS      bound of the wait; POLL_SECONDS its pace
# Reports on stderr: "ok: ..." for what was already right, "changed: ..." for what it did,
# "waiting: ..." while it waits, "error: ..." last when it fails. `check` prints on stdout:
#   registered=yes|no unit=<state of WAIT_UNIT>
set -euo pipefail

AGENT_CONFIG=/etc/rancher/agent/config.yaml

registered() {
  [ -s "$AGENT_CONFIG" ] && systemctl is-enabled --quiet rancher-system-agent.service
}

unit_state() {
  systemctl is-active "$1" 2>/dev/null || true
}

# The anchor directory and refresh command of the node's trust store (RHEL family first).
trust_store() {
  if command -v update-ca-trust >/dev/null; then
    echo "/etc/pki/ca-trust/source/anchors update-ca-trust extract"
  elif command -v update-ca-certificates >/dev/null; then
    echo "/usr/local/share/ca-certificates update-ca-certificates"
  else
    echo "error: neither update-ca-trust nor update-ca-certificates is installed; install ca-certificates" >&2
    exit 1
  fi
}

trust_rancher_ca() {
  [ -n "$RANCHER_CA" ] || return 0
  local store anchors refresh anchor
  store="$(trust_store)"
  anchors="${store%% *}"
  refresh="${store#* }"
  anchor="$anchors/rancher-${RANCHER_HOST}.crt"
  if [ -f "$anchor" ] && [ "$(cat "$anchor")" = "$(printf '%s' "$RANCHER_CA")" ]; then
    echo "ok: Rancher's CA is in the trust store ($anchor)" >&2
    return 0
  fi
  mkdir -p "$anchors"
  printf '%s\n' "$RANCHER_CA" >"$anchor.tmp"
  mv "$anchor.tmp" "$anchor"
  $refresh >/dev/null 2>&1 || {
    echo "error: $refresh failed after adding $anchor" >&2
    exit 1
  }
  echo "changed: added Rancher's CA to the trust store ($anchor)" >&2
}

if [ "$MODE" = check ]; then
  if registered; then echo "registered=yes unit=$(unit_state "$WAIT_UNIT")"; else echo "registered=no unit=$(unit_state "$WAIT_UNIT")"; fi
  exit 0
fi

trust_rancher_ca
if registered; then
  echo "ok: rancher-system-agent is registered already; not registering again" >&2
else
  echo "changed: registering with roles ${ROLE_FLAGS}" >&2
  # The installer's output is kept back: it can echo its arguments, the token among them.
  if ! output="$(bash -o pipefail -c "${REGISTRATION_COMMAND} ${ROLE_FLAGS}" 2>&1)"; then
    echo "error: the registration command failed: $(printf '%s\n' "$output" | grep -v '^\s*$' | tail -n 1)" >&2
    exit 1
  fi
  registered || {
    echo "error: the registration command finished but rancher-system-agent is not registered ($AGENT_CONFIG missing or the unit not enabled)" >&2
    exit 1
  }
fi

started=$SECONDS
last_report=$SECONDS
until [ "$(unit_state "$WAIT_UNIT")" = active ]; do
  elapsed=$((SECONDS - started))
  if [ "$elapsed" -ge "$TIMEOUT_SECONDS" ]; then
    echo "error: ${WAIT_UNIT} is not active ${TIMEOUT_SECONDS} s after registration (rancher-system-agent: $(unit_state rancher-system-agent.service)); look at the node in Rancher and at 'journalctl -u rancher-system-agent', then run pulumi up again: the node stays registered and the wait resumes" >&2
    exit 1
  fi
  if [ $((SECONDS - last_report)) -ge 10 ] || [ "$elapsed" -eq 0 ]; then
    echo "waiting: ${WAIT_UNIT} not active yet (${elapsed} s of ${TIMEOUT_SECONDS} s; rancher-system-agent: $(unit_state rancher-system-agent.service))" >&2
    last_report=$SECONDS
  fi
  sleep "$POLL_SECONDS"
done
echo "ok: ${WAIT_UNIT} is active" >&2
