#!/bin/bash
# Applies one start decision on one node. The decision (what to install, whether to move stale
# etcd data aside, whether to start, restart or only verify) is made by the caller from this
# node's facts (rke2-facts.sh) and etcd's member list; this script does exactly that and no more.
# Parameters arrive as shell assignments before this script:
#   ROLE             server | agent
#   VERSION          RKE2 release, e.g. v1.35.7+rke2r1
#   INSTALL          yes: run INSTALL_COMMAND with INSTALL_RKE2_VERSION/_TYPE set, then check that
#                    the rke2 binary reports VERSION
#   INSTALL_COMMAND  how RKE2 is installed (the release's install.sh, or an air-gap equivalent)
#   MOVE_STALE       yes: this joining server's etcd data belongs to no cluster that knows it;
#                    move server/db aside (never deleted) before it starts
#   ACTION           start | restart | verify
#   CONFIG_SHA256    the config.yaml this step was decided for; RKE2 is not (re)started on another
#   FACTS_SCRIPT     the rke2-facts.sh text, read for the installed release after installing
# Prints "changed: ..." for what it changed and "ok: ..." for what it found right, on stderr.
set -euo pipefail

UNIT="rke2-$ROLE.service"
CONFIG=/etc/rancher/rke2/config.yaml
DB=/var/lib/rancher/rke2/server/db

changed() { echo "changed: $*" >&2; }
ok() { echo "ok: $*" >&2; }
fail() {
  echo "error: $*" >&2
  exit 1
}

# The release the rke2 binary reports, as rke2-facts.sh finds it (one lookup for both scripts).
installed_version() {
  ROLE="$ROLE" MEMBERS_SCRIPT="exit 1" bash -c "$FACTS_SCRIPT" 2>/dev/null | sed -n 's/^version=//p' | grep -vx none || true
}

if [ "$INSTALL" = "yes" ]; then
  before="$(installed_version)"
  if ! INSTALL_RKE2_VERSION="$VERSION" INSTALL_RKE2_TYPE="$ROLE" bash -o pipefail -c "$INSTALL_COMMAND" >&2; then
    fail "installing RKE2 $VERSION failed (see the installer's lines above); RKE2 ${before:-was not installed} and was not restarted"
  fi
  now="$(installed_version)"
  [ "$now" = "$VERSION" ] ||
    fail "the installer finished but rke2 reports '${now:-no binary}', not $VERSION; RKE2 was not restarted"
  changed "installed RKE2 $VERSION ($ROLE)${before:+, replacing $before}"
fi

if [ "$MOVE_STALE" = "yes" ]; then
  [ "$ROLE" = "server" ] || fail "only a server has etcd data to move aside"
  aside="$DB.stale-$(date -u +%Y%m%dT%H%M%SZ)"
  systemctl stop "$UNIT" >/dev/null 2>&1 || true
  mv "$DB" "$aside"
  changed "moved etcd data of a server no cluster member knows from $DB to $aside"
fi

if [ "$ACTION" != "verify" ]; then
  found="$(sha256sum "$CONFIG" 2>/dev/null | cut -d' ' -f1)"
  [ "$found" = "$CONFIG_SHA256" ] ||
    fail "$CONFIG changed on the host since this step was planned; RKE2 was not (re)started. Re-run pulumi up."
fi

systemctl enable "$UNIT" >/dev/null 2>&1 || fail "cannot enable $UNIT: the unit is not installed; re-run with the installer"
case "$ACTION" in
  start)
    if systemctl is-active --quiet "$UNIT"; then
      ok "$UNIT is running"
    else
      systemctl start "$UNIT"
      changed "started $UNIT"
    fi ;;
  restart)
    systemctl restart "$UNIT"
    changed "restarted $UNIT" ;;
  verify)
    systemctl is-active --quiet "$UNIT" || fail "$UNIT is not running"
    ok "$UNIT is running; left as it is" ;;
  *) fail "unknown ACTION '$ACTION'" ;;
esac
