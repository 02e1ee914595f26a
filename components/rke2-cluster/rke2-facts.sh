#!/bin/bash
# Reports what RKE2 on one node is, as found: for refresh, and as the facts every start
# decision is made from. Changes nothing. Parameters (shell assignments before this script):
#   ROLE            server | agent
#   MEMBERS_SCRIPT  the etcd-members.sh text (servers)
# Prints key=value lines on stdout:
#   version=<release of the installed rke2 binary, or none>
#   unit=yes|no                 whether rke2-<role>.service is installed
#   active=yes|no               whether it runs
#   config_sha256=<hex|none>    of /etc/rancher/rke2/config.yaml
#   etcd_data=yes|no            (servers) whether server/db/etcd/member exists
#   members=<base64 JSON>       (servers with etcd running) etcd's member list read here, or
#   members_error=<reason>      why it could not be read
set -uo pipefail

UNIT="rke2-$ROLE.service"
CONFIG=/etc/rancher/rke2/config.yaml
ETCD_MEMBER_DIR=/var/lib/rancher/rke2/server/db/etcd/member

# rancher/rke2@v1.35.6+rke2r1 install.sh: the tarball installs to /usr/local (or /opt/rke2 when
# /usr/local is read-only); the RPMs to /usr/bin.
rke2_binary() {
  local candidate
  for candidate in "$(command -v rke2 2>/dev/null)" /usr/local/bin/rke2 /opt/rke2/bin/rke2 /usr/bin/rke2; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# rancher/rke2@v1.35.6+rke2r1 pkg/cli/cmds/root.go (VersionPrinter): "rke2 version <version> (<commit>)".
version=none
if binary="$(rke2_binary)"; then
  found="$("$binary" --version 2>/dev/null | sed -n 's/^rke2 version \([^ ]*\).*/\1/p' | head -n1)"
  version="${found:-unknown}"
fi
echo "version=$version"

if systemctl list-unit-files "$UNIT" 2>/dev/null | grep -q "^$UNIT"; then echo "unit=yes"; else echo "unit=no"; fi
if systemctl is-active --quiet "$UNIT"; then echo "active=yes"; else echo "active=no"; fi

if [ -f "$CONFIG" ]; then
  echo "config_sha256=$(sha256sum "$CONFIG" | cut -d' ' -f1)"
else
  echo "config_sha256=none"
fi

if [ "$ROLE" = "server" ]; then
  if [ -d "$ETCD_MEMBER_DIR" ]; then echo "etcd_data=yes"; else echo "etcd_data=no"; fi
  # The list is stdout only: etcdctl logs its retries as JSON lines on stderr.
  errors="$(mktemp)"
  if out="$(bash -c "$MEMBERS_SCRIPT" 2>"$errors")"; then
    echo "members=$(printf '%s' "$out" | base64 -w0)"
  else
    echo "members_error=$(tail -n1 "$errors" | tr -d '\r' | head -c 300)"
  fi
  rm -f "$errors"
fi
