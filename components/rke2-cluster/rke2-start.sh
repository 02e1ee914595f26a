#!/bin/bash
# Applies one start decision on one node. The decision (what to install, whether to move stale
# etcd data aside, which config.yaml to write, whether to start, restart or only verify) is made
# by the caller from this node's facts (rke2-facts.sh) and etcd's member list; this script does
# exactly that and no more.
# Parameters arrive as shell assignments before this script:
#   ROLE              server | agent
#   VERSION           RKE2 release, e.g. v1.35.7+rke2r1
#   INSTALL           yes: run INSTALL_COMMAND with INSTALL_RKE2_VERSION/_TYPE set, then check that
#                     the rke2 binary reports VERSION
#   INSTALL_COMMAND   how RKE2 is installed (the release's install.sh, or an air-gap equivalent)
#   ARTIFACTS_DIR     (optional) instead of INSTALL_COMMAND: the release artifacts staged here,
#                     installed with their install.sh and INSTALL_RKE2_ARTIFACT_PATH, then removed
#   ARTIFACTS_SHA256  "<sha256> <name>" lines: each staged file as the release's checksum file
#                     (install.sh: as the operator's copy) has it; checked before anything changes
#   MOVE_STALE        yes: this joining server's etcd data belongs to no cluster that knows it;
#                     move <data-dir>/server/db aside (never deleted) before it starts
#   DATA_DIR          RKE2's data-dir as config.yaml sets it
#   FOUND_SHA256      the config.yaml this step was decided for (its SHA-256, or none); nothing
#                     is done when the host's file is another
#   NEW_CONFIG_B64    the config.yaml to write (base64), or empty to keep the file as it is; the
#                     replaced file is kept beside it as config.yaml.<UTC timestamp>, mode 0600
#   REGISTRIES_PATH   the registries.yaml RKE2 reads there (private-registry, else its default)
#   REGISTRIES_FOUND_SHA256  that file as the step was decided for (its SHA-256, or none)
#   NEW_REGISTRIES_B64  the registries.yaml to write (base64), or empty to keep it as it is;
#                     written and kept aside as config.yaml is. It may hold registry credentials.
#   ACTION            start | restart | verify
#   FACTS_SCRIPT      the rke2-facts.sh text, read for the installed release after installing
# A change that needs a restart is marked in /var/lib/rke2-remediation/<unit>.restart-pending
# before it is made and unmarked once the restart happened, so a step that fails between the
# two leaves the restart visible to the next refresh and run.
# Prints "changed: ..." for what it changed and "ok: ..." for what it found right, on stderr.
set -euo pipefail
# A command that fails without its own "error:" line still says where (the text, not its values).
trap 'echo "error: rke2-start.sh line $LINENO failed: $BASH_COMMAND" >&2' ERR

UNIT="rke2-$ROLE.service"
CONFIG=/etc/rancher/rke2/config.yaml
DB="$DATA_DIR/server/db"
PENDING="/var/lib/rke2-remediation/$UNIT.restart-pending"

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

# 1. The files are the ones the decision was made from (checked before anything changes).
sha_of() { if [ -f "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo none; fi; }
[ "$(sha_of "$CONFIG")" = "$FOUND_SHA256" ] ||
  fail "$CONFIG changed on the host since this step was planned; nothing was changed. Re-run pulumi up."
if [ -n "${NEW_REGISTRIES_B64:-}" ]; then
  [ "$(sha_of "$REGISTRIES_PATH")" = "$REGISTRIES_FOUND_SHA256" ] ||
    fail "$REGISTRIES_PATH changed on the host since this step was planned; nothing was changed. Re-run pulumi up."
fi

if [ "$INSTALL" = "yes" ] && [ -n "${ARTIFACTS_DIR:-}" ]; then
  while read -r expected name; do
    [ -n "$name" ] || continue
    [ -f "$ARTIFACTS_DIR/$name" ] ||
      fail "$name is not staged in $ARTIFACTS_DIR; nothing was changed. Re-run pulumi up to copy it again."
    actual="$(sha256sum "$ARTIFACTS_DIR/$name" | cut -d' ' -f1)"
    [ "$actual" = "$expected" ] ||
      fail "$name staged in $ARTIFACTS_DIR has SHA-256 $actual, not the release's $expected; nothing was changed. Re-run pulumi up to copy it again."
  done <<<"$ARTIFACTS_SHA256"
fi

# 2. Mark the restart this step owes before making the change that needs it.
if [ "$ACTION" != "verify" ]; then
  mkdir -p "$(dirname "$PENDING")"
  echo "rke2 $VERSION${NEW_CONFIG_B64:+ with a new config.yaml}${NEW_REGISTRIES_B64:+ with a new registries.yaml}, by pulumi up $(date -u +%FT%TZ)" >"$PENDING"
fi

# 3. Install.
if [ "$INSTALL" = "yes" ]; then
  before="$(installed_version)"
  # rancher/rke2@v1.35.7+rke2r1:install.sh: with INSTALL_RKE2_ARTIFACT_PATH it reads the tarball,
  # sha256sum-<arch>.txt and the images archive from that directory and downloads nothing.
  # Its images go to INSTALL_RKE2_AGENT_IMAGES_DIR, /var/lib/rancher/rke2/agent/images unless set,
  # whatever the data-dir; RKE2 loads them from <data-dir>/agent/images
  # (rancher/rke2@v1.35.7+rke2r1:pkg/bootstrap/bootstrap.go imagesDir), so it is set to that.
  if [ -n "${ARTIFACTS_DIR:-}" ]; then
    INSTALL_COMMAND="INSTALL_RKE2_ARTIFACT_PATH=$(printf '%q' "$ARTIFACTS_DIR") INSTALL_RKE2_AGENT_IMAGES_DIR=$(printf '%q' "$DATA_DIR/agent/images") bash $(printf '%q' "$ARTIFACTS_DIR/install.sh")"
  fi
  if ! INSTALL_RKE2_VERSION="$VERSION" INSTALL_RKE2_TYPE="$ROLE" bash -o pipefail -c "$INSTALL_COMMAND" >&2; then
    fail "installing RKE2 $VERSION failed (see the installer's lines above); RKE2 ${before:-was not installed} and was not restarted"
  fi
  now="$(installed_version)"
  [ "$now" = "$VERSION" ] ||
    fail "the installer finished but rke2 reports '${now:-no binary}', not $VERSION; RKE2 was not restarted"
  changed "installed RKE2 $VERSION ($ROLE)${before:+, replacing $before}${ARTIFACTS_DIR:+ from the release artifacts}"
  # The staged copies are this step's own; the installer copied what RKE2 keeps.
  if [ -n "${ARTIFACTS_DIR:-}" ]; then rm -rf -- "$ARTIFACTS_DIR"; fi
fi

# 4. Stale etcd data of a server no cluster member knows: moved aside, never deleted.
if [ "$MOVE_STALE" = "yes" ]; then
  [ "$ROLE" = "server" ] || fail "only a server has etcd data to move aside"
  aside="$DB.stale-$(date -u +%Y%m%dT%H%M%SZ)"
  systemctl stop "$UNIT" >/dev/null 2>&1 || true
  mv "$DB" "$aside"
  changed "moved etcd data of a server no cluster member knows from $DB to $aside"
fi

# 5. config.yaml and registries.yaml: the replaced file is kept, then the new one replaces it in
# one rename.
write_kept() (
  umask 077
  local file="$1" encoded="$2" kept="" next
  mkdir -p "$(dirname "$file")"
  if [ -f "$file" ]; then
    kept="$file.$(date -u +%Y%m%dT%H%M%SZ)"
    cp -p "$file" "$kept"
    chmod 0600 "$kept"
  fi
  next="$(mktemp "$file.next.XXXXXX")"
  base64 -d <<<"$encoded" >"$next"
  chmod 0600 "$next"
  mv -f "$next" "$file"
  changed "wrote $file${kept:+ (the previous file is kept as $kept)}"
)
[ -z "$NEW_CONFIG_B64" ] || write_kept "$CONFIG" "$NEW_CONFIG_B64"
[ -z "${NEW_REGISTRIES_B64:-}" ] || write_kept "$REGISTRIES_PATH" "$NEW_REGISTRIES_B64"

# 6. Start, restart or verify.
# An enabled unit is left as it is: enabling it again would still be a write on a host whose
# step only verifies.
if ! systemctl is-enabled --quiet "$UNIT"; then
  systemctl enable "$UNIT" >/dev/null 2>&1 || fail "cannot enable $UNIT: the unit is not installed; re-run with the installer"
  changed "enabled $UNIT"
fi
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
rm -f "$PENDING"
