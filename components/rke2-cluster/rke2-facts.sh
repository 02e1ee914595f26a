#!/bin/bash
# Reports what RKE2 on one node is, as found: for refresh, and as the facts every start
# decision is made from. Changes nothing. Parameters (shell assignments before this script):
#   ROLE            server | agent
#   MEMBERS_SCRIPT  the etcd-members.sh text (servers)
# Prints key=value lines on stdout (read by the operator over SSH, never logged: config_b64
# holds the join token):
#   version=<release of the installed rke2 binary, or none>
#   unit=yes|no                 whether rke2-<role>.service is installed
#   active=yes|no               whether it runs
#   config_sha256=<hex|none>    of /etc/rancher/rke2/config.yaml
#   config_b64=<base64>         the file itself (absent when there is none)
#   data_dir=<path>             the file's data-dir, else RKE2's default
#   host_name=<name>            uname -n, which RKE2 names the node after without node-name
#   addresses=<ip ...>          every address of the host
#   restart_pending=<why|none>  a change rke2-start.sh made that its restart has not yet applied
#   etcd_data=yes|no            (servers) whether <data-dir>/server/db/etcd/member exists
#   etcd_name=<base64>          (servers) <data-dir>/server/db/etcd/name, or
#   etcd_name_error=<reason>    missing | unreadable
#   server_token_sha256=<hex>   (servers) of <data-dir>/server/token, and of its password part:
#   server_token_password_sha256=<hex>   k3s-io/k3s pkg/clientaccess/token.go, K10<hash>::<user>:<password>
#   members=<base64 JSON>       (servers with etcd running) etcd's member list read here, or
#   members_error=<reason>      why it could not be read
set -uo pipefail

UNIT="rke2-$ROLE.service"
CONFIG=/etc/rancher/rke2/config.yaml
PENDING="/var/lib/rke2-remediation/$UNIT.restart-pending"

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

# data-dir as a plain top-level scalar; the operator parses the whole file and refuses to go on
# when its reading differs from this one.
DATA_DIR=/var/lib/rancher/rke2
if [ -f "$CONFIG" ]; then
  echo "config_sha256=$(sha256sum "$CONFIG" | cut -d' ' -f1)"
  echo "config_b64=$(base64 -w0 <"$CONFIG")"
  configured="$(sed -n 's/^data-dir:[[:space:]]*//p' "$CONFIG" | head -n1 | sed 's/[[:space:]]#.*$//; s/[[:space:]]*$//' | tr -d "\"'")"
  [ -n "$configured" ] && DATA_DIR="${configured%/}"
else
  echo "config_sha256=none"
fi
echo "data_dir=$DATA_DIR"
echo "host_name=$(uname -n)"
echo "addresses=$(ip -o addr show 2>/dev/null | awk '{ sub(/\/.*/, "", $4); printf "%s ", $4 }')"
if [ -f "$PENDING" ]; then echo "restart_pending=$(head -c 300 "$PENDING" | tr '\n' ' ')"; else echo "restart_pending=none"; fi

if [ "$ROLE" = "server" ]; then
  if [ -d "$DATA_DIR/server/db/etcd/member" ]; then echo "etcd_data=yes"; else echo "etcd_data=no"; fi
  name_file="$DATA_DIR/server/db/etcd/name"
  if [ -f "$name_file" ] && [ -r "$name_file" ]; then
    echo "etcd_name=$(base64 -w0 <"$name_file")"
  elif [ -e "$name_file" ]; then
    echo "etcd_name_error=unreadable"
  else
    echo "etcd_name_error=missing"
  fi
  if [ -f "$DATA_DIR/server/token" ]; then
    token="$(tr -d '[:space:]' <"$DATA_DIR/server/token")"
    echo "server_token_sha256=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
    echo "server_token_password_sha256=$(printf '%s' "${token#*::*:}" | sha256sum | cut -d' ' -f1)"
    unset token
  fi
  # The list is stdout only: etcdctl logs its retries as JSON lines on stderr.
  errors="$(mktemp)"
  if out="$(DATA_DIR="$DATA_DIR" bash -c "$MEMBERS_SCRIPT" 2>"$errors")"; then
    echo "members=$(printf '%s' "$out" | base64 -w0)"
  else
    echo "members_error=$(tail -n1 "$errors" | tr -d '\r' | head -c 300)"
  fi
  rm -f "$errors"
fi
