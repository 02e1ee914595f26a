#!/bin/bash
# Installs and starts RKE2 on one node, once it may (the caller orders servers one at a time).
# Parameters arrive as shell assignments before this script:
#   ROLE             server | agent
#   VERSION          RKE2 release to install, e.g. v1.35.6+rke2r1
#   INSTALL_COMMAND  how to install RKE2 when it is missing (INSTALL_RKE2_VERSION/TYPE are set)
#   MEMBERSHIP       for a joining server, what the cluster's etcd says of it: voter, learner,
#                    none; "first" for the first server
# Adoption: a server that already runs RKE2 as a voting member is left alone (no restart).
# Retry safety: a joining server that is not an etcd member gets its stale etcd data removed
# before it starts again; a member's data is never touched.
set -euo pipefail

UNIT="rke2-$ROLE.service"
DB=/var/lib/rancher/rke2/server/db

changed() { echo "changed: $*" >&2; }
ok() { echo "ok: $*" >&2; }

installed() { systemctl list-unit-files "$UNIT" 2>/dev/null | grep -q "^$UNIT"; }

if [ "$ROLE" = "server" ] && [ "$MEMBERSHIP" = "voter" ] && systemctl is-active --quiet "$UNIT"; then
  ok "$UNIT is running and this server is a voting etcd member; left as it is"
  echo "state=running"
  exit 0
fi

if ! installed; then
  INSTALL_RKE2_VERSION="$VERSION" INSTALL_RKE2_TYPE="$ROLE" bash -c "$INSTALL_COMMAND" >&2
  changed "installed RKE2 $VERSION ($ROLE)"
else
  ok "RKE2 is installed"
fi

if [ "$ROLE" = "server" ] && [ "$MEMBERSHIP" = "none" ] && [ -d "$DB" ]; then
  # It never joined: its etcd data belongs to no cluster and would keep it from joining.
  systemctl stop "$UNIT" >/dev/null 2>&1 || true
  rm -rf "$DB"
  changed "removed $DB of a server that is not an etcd member"
fi

systemctl enable "$UNIT" >/dev/null 2>&1
if systemctl is-active --quiet "$UNIT"; then
  ok "$UNIT is running"
else
  systemctl start "$UNIT"
  changed "started $UNIT"
fi
echo "state=running"
