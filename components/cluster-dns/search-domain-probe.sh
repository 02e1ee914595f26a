#!/bin/bash
# Seed 000, read from a node: does a name under each search domain of the node's resolver get an
# answer, and does the cluster DNS answer it where the node's resolver does not? Read-only.
# The search list is the last `search` (or `domain`) line of /etc/resolv.conf and the server its
# first `nameserver` (resolv.conf(5): the two keywords exclude each other, the last one wins).
# Parameters: NAME (Rancher's host name), CLUSTER_DNS (the cluster's kube-dns Service address, or
# empty when the stack renders none). Each query is one UDP try of 2 s. The node reaches the
# Service address as a pod does: kube-proxy binds every Service address to kube-ipvs0 in IPVS mode
# and DNATs the node's own output in iptables mode (kubernetes/kubernetes@v1.35.4
# pkg/proxy/ipvs/README.md); where it cannot, the line says unreachable and nothing is claimed.
# Prints one line per query: "<node|cluster> <domain> <server> answered <RCODE> <ms>",
# "... silent <ms>" (no answer in time) or "... unreachable <ms>" (no route, or refused).
set -uo pipefail

if ! command -v dig >/dev/null; then
  echo "error: dig is not installed on this node; install bind-utils (Rocky) to probe its resolver." >&2
  exit 3
fi
nameserver="$(awk '$1 == "nameserver" { print $2; exit }' /etc/resolv.conf 2>/dev/null)"
domains="$(awk '$1 == "search" || $1 == "domain" { $1 = ""; line = $0 } END { print line }' /etc/resolv.conf 2>/dev/null)"
if [ -z "$nameserver" ]; then
  echo "error: /etc/resolv.conf names no nameserver" >&2
  exit 3
fi

probe() {
  local via="$1" domain="$2" server="$3" started out rcode verdict
  started="$(date +%s%N)"
  out="$(dig +time=2 +tries=1 "@$server" "$NAME.$domain" A 2>&1)"
  rcode="$(sed -n 's/.*status: \([A-Z]*\).*/\1/p' <<<"$out" | head -n1)"
  if [ -n "$rcode" ]; then
    verdict="answered $rcode"
  elif grep -qiE 'unreachable|refused|no route' <<<"$out"; then
    verdict=unreachable
  else
    verdict=silent
  fi
  echo "$via $domain $server $verdict $((($(date +%s%N) - started) / 1000000))"
  [ "$verdict" = silent ]
}

for domain in $domains; do
  domain="${domain%.}"
  [ -n "$domain" ] || continue
  if probe node "$domain" "$nameserver" && [ -n "${CLUSTER_DNS:-}" ]; then
    probe cluster "$domain" "$CLUSTER_DNS" || true
  fi
done
exit 0
