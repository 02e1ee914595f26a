#!/bin/bash
# Prints the admin kubeconfig RKE2 wrote on this server, for the stack output. Changes nothing.
# RKE2 writes it to /etc/rancher/rke2/rke2.yaml (rancher/rke2-docs@9477b7b1
# docs/cluster_access.md); with `write-kubeconfig` set, it writes that file and makes the default
# path a symlink to it (k3s-io/k3s@25c0b5fb9bb3 pkg/server/server.go writeKubeConfig), so the
# default path is read either way. Prints key=value lines on stdout, read by the operator over
# SSH and never logged (the file holds the admin client key):
#   kubeconfig_b64=<base64 of the file>
#   kubeconfig_error=<reason>    missing | unreadable, instead of the file
set -uo pipefail

KUBECONFIG_PATH=/etc/rancher/rke2/rke2.yaml
if [ ! -e "$KUBECONFIG_PATH" ]; then
  echo "kubeconfig_error=missing"
elif ! content="$(base64 -w0 < "$KUBECONFIG_PATH" 2>/dev/null)" || [ -z "$content" ]; then
  echo "kubeconfig_error=unreadable"
else
  echo "kubeconfig_b64=$content"
fi
