#!/bin/bash
# Live-state preflight on a node (seed 003): can it open TCP connections to its peers on the ports
# RKE2 needs? A refused connection is fine (nothing listens yet); "No route to host" is a
# REJECT --reject-with icmp-host-prohibited (or firewalld's reject) somewhere on the path, and a
# timeout is a DROP.
# Parameters: PEERS (space-separated IPs) and PORTS (space-separated), every peer on every port;
# or TARGETS, ";"-separated "<ip> <port> <port> ..." entries, each peer on its own ports;
# CONNECT_TIMEOUT (seconds).
# Prints one line per peer and port: "<ip> <port> open|closed|prohibited|timeout".
set -uo pipefail

probe() {
  local peer="$1" port="$2" err rc verdict
  err="$(timeout "${CONNECT_TIMEOUT:-3}" bash -c "exec 3<>/dev/tcp/$peer/$port" 2>&1)"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    verdict=open
  elif [ "$rc" -eq 124 ]; then
    verdict=timeout
  else
    case "$err" in
      *"No route to host"* | *"Network is unreachable"*) verdict=prohibited ;;
      *"Connection refused"*) verdict=closed ;;
      *) verdict=timeout ;;
    esac
  fi
  echo "$peer $port $verdict"
}

# Probes run 64 at a time, so a node whose peers all drop its packets answers within
# CONNECT_TIMEOUT per 64 probes, not per probe. Each prints one short line (atomic on a pipe).
started=0
start() {
  probe "$1" "$2" &
  started=$((started + 1))
  if [ $((started % 64)) -eq 0 ]; then wait; fi
}
if [ -n "${TARGETS:-}" ]; then
  IFS=';' read -ra entries <<<"$TARGETS"
  for entry in "${entries[@]}"; do
    read -ra fields <<<"$entry"
    [ "${#fields[@]}" -ge 2 ] || continue
    for port in "${fields[@]:1}"; do start "${fields[0]}" "$port"; done
  done
else
  for peer in $PEERS; do
    for port in $PORTS; do start "$peer" "$port"; done
  done
fi
wait
