#!/bin/bash
# Prints etcd's member list as seen by the etcd member on this server, as JSON
# (`etcdctl member list -w json`), and fails when it cannot be read. Uses etcdctl when
# it is installed (with RKE2's etcd client certificates when present), else etcdctl inside
# RKE2's etcd container through crictl, as an operator would by hand (seed 003).
# DATA_DIR (optional): RKE2's data-dir, default /var/lib/rancher/rke2.
set -euo pipefail

DATA_DIR="${DATA_DIR:-/var/lib/rancher/rke2}"
TLS="$DATA_DIR/server/tls/etcd"
LIST=(member list -w json)
# RKE2's etcd listens for clients on the loopback address, port 2379 (listenClientURLs in
# k3s-io/k3s@7464a828f03e:pkg/etcd/etcd.go, read as test/lab/STANDINS.md says). Where nothing
# listens there (a server not started yet), say so at once: etcdctl would retry until its
# command timeout, 5 s per server and read.
if ! timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379' 2>/dev/null; then
  echo "error: nothing listens on 127.0.0.1:2379, etcd's client port, on this server" >&2
  exit 3
fi
if command -v etcdctl >/dev/null; then
  if [ -f "$TLS/server-client.crt" ]; then
    exec etcdctl --dial-timeout=2s --command-timeout=5s --endpoints https://127.0.0.1:2379 --cacert "$TLS/server-ca.crt" \
      --cert "$TLS/server-client.crt" --key "$TLS/server-client.key" "${LIST[@]}"
  fi
  exec etcdctl --dial-timeout=2s --command-timeout=5s --endpoints http://127.0.0.1:2379 "${LIST[@]}"
fi
export CONTAINER_RUNTIME_ENDPOINT=unix:///run/k3s/containerd/containerd.sock
crictl="$DATA_DIR/bin/crictl"
[ -x "$crictl" ] || { echo "error: neither etcdctl nor RKE2's crictl is available on this server" >&2; exit 3; }
container="$("$crictl" ps --name '^etcd' -q | head -n1)"
[ -n "$container" ] || { echo "error: no running etcd container on this server" >&2; exit 3; }
exec "$crictl" exec "$container" etcdctl --cacert "$TLS/server-ca.crt" --cert "$TLS/server-client.crt" \
  --key "$TLS/server-client.key" "${LIST[@]}"
