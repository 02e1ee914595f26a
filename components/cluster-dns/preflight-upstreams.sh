#!/bin/bash
# Live preflight for seed 004: each upstream must answer (any rcode) within 2 s a HINFO query for
# a random name under in-addr.arpa, the shape of query CoreDNS's loop plugin sends and that
# 114.114.114.114 left unanswered. A silent upstream does not crash the cache: every lookup
# forwarded to it waits for the forward timeout. The loop plugin halts CoreDNS only when its own
# probe comes back to it (a forward path leading back to the cache itself);
# coredns/coredns@v1.14.7:plugin/loop/setup.go and loop.go.
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
