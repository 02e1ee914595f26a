#!/bin/bash
# Live preflight for seed 004: CoreDNS's loop plugin, and node-local-dns at start, send a HINFO
# query for a random name under in-addr.arpa through the forwarders. An upstream that drops such
# queries makes the cache crash-loop. Each upstream must answer one (any rcode) within 2 s.
# Parameters: UPSTREAMS (space-separated IPs). Prints "<ip> answered <rcode>" or "<ip> silent".
set -uo pipefail

if ! command -v dig >/dev/null; then
  echo "error: dig is not installed on this node; install bind-utils (Rocky) to run the upstream preflight." >&2
  exit 3
fi
for upstream in $UPSTREAMS; do
  name="$RANDOM$RANDOM.$RANDOM$RANDOM.in-addr.arpa"
  out="$(dig +time=2 +tries=1 "@$upstream" "$name" HINFO 2>&1)"
  rcode="$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out" | head -n1)"
  if [ -n "$rcode" ]; then echo "$upstream answered $rcode"; else echo "$upstream silent"; fi
done
