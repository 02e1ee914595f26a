#!/bin/bash
# Live-state preflight on a server (seed 003): can it open TCP connections to every other server
# on the RKE2 ports? A refused connection is fine (nothing listens yet); "No route to host" is a
# REJECT --reject-with icmp-host-prohibited somewhere on the path, and a timeout is a DROP.
# Parameters: PEERS (space-separated IPs), PORTS (space-separated), CONNECT_TIMEOUT (seconds).
# Prints one line per peer and port: "<ip> <port> open|closed|prohibited|timeout".
set -uo pipefail

for peer in $PEERS; do
  for port in $PORTS; do
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
  done
done
