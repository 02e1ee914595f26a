#!/bin/bash
# STAND-IN for the RKE2 installer (get.rke2.io) on lab nodes — not RKE2. RKE2 cannot run in the
# lab (no container runtime, no Kubernetes), so this installs the lab's rke2-server stand-in as
# the unit `rke2-server.service` of the systemctl test double, the REAL kubectl (from the toolchain
# cache, STANDIN_BIN in the lab's /etc/rke2-standin.env) where RKE2 puts it, and an `rke2`
# binary stand-in that answers `rke2 --version` with the release asked for, in the format of
# rancher/rke2@v1.35.6+rke2r1 pkg/cli/cmds/root.go (VersionPrinter), at the tarball install's
# path (/usr/local/bin, install.sh of the same tag). A file /etc/rancher/standin-install-fails
# on the node makes it fail as a failed download does.
#
# With INSTALL_RKE2_ARTIFACT_PATH it installs from the release artifacts in that directory, as
# rancher/rke2@v1.35.7+rke2r1:install.sh does (do_install_tar, stage_local_checksums,
# stage_local_airgap_tarball, verify_airgap_tarball, install_airgap_tarball, verify_tarball,
# unpack_tarball): the expected hashes are the lines of sha256sum-amd64.txt naming
# rke2.linux-amd64.tar.gz and the images archive (rke2-images.linux-amd64.tar.zst, else .tar.gz);
# an images archive the file does not name is not installed; a hash that differs stops it with
# "[ERROR]  download sha256 does not match <expected>, got <actual>" (exit 1) before the tarball
# is unpacked; the archive goes to INSTALL_RKE2_AGENT_IMAGES_DIR, default /var/lib/rancher/rke2/agent/images (zst as it is, gz
# decompressed to .tar), with every rke2-images-*.linux-amd64* beside it copied unchecked; the
# tarball is unpacked into /usr/local, and INSTALL_RKE2_VERSION is not read: the release is the
# tarball's. The lab's tarballs hold bin/rke2 only (the version stand-in above), so nothing lands
# outside the node's own /usr/local/bin.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC1091 # written by the lab per node
[ -f /etc/rke2-standin.env ] && . /etc/rke2-standin.env
# Run from a copy among the artifacts, the stand-in's own files are where the lab says.
standin="${STANDIN_HOME:-$here}"
units="${SYSTEMCTL_DOUBLE_DIR:-/var/lib/systemctl-double}/units"
fatal() {
  echo "[ERROR]  $*" >&2
  exit 1
}
mkdir -p "$units/rke2-server.service" /var/lib/rancher/rke2/bin
if [ -f /etc/rancher/standin-install-fails ]; then
  echo "[ERROR]  download failed (lab stand-in told to fail)" >&2
  exit 22
fi

if [ -n "${INSTALL_RKE2_ARTIFACT_PATH:-}" ]; then
  artifacts="$INSTALL_RKE2_ARTIFACT_PATH" suffix=linux-amd64
  checksums="$artifacts/sha256sum-amd64.txt"
  echo "[INFO]  staging local checksums from $checksums"
  expected="$(grep "rke2.$suffix.tar.gz" "$checksums" | awk '{print $1}')"
  images="" images_expected=""
  for format in zst gz; do
    if [ -f "$artifacts/rke2-images.$suffix.tar.$format" ]; then
      images="$artifacts/rke2-images.$suffix.tar.$format"
      images_expected="$(grep "rke2-images.$suffix.tar.$format" "$checksums" | awk '{print $1}')"
      break
    fi
  done
  if [ -n "$images_expected" ]; then
    echo "[INFO]  verifying airgap tarball"
    actual="$(sha256sum "$images" | awk '{print $1}')"
    [ "$images_expected" = "$actual" ] || fatal "download sha256 does not match $images_expected, got $actual"
    # INSTALL_RKE2_AGENT_IMAGES_DIR, default /var/lib/rancher/rke2/agent/images (install.sh).
    dest="${INSTALL_RKE2_AGENT_IMAGES_DIR:-/var/lib/rancher/rke2/agent/images}"
    mkdir -p "$dest"
    case "$images" in
      *.zst) cp -f "$images" "$dest/rke2-images.$suffix.tar.zst" ;;
      *) gzip -dc "$images" >"$dest/rke2-images.$suffix.tar" ;;
    esac
    for extra in "$artifacts"/rke2-images-*."$suffix"*; do
      if [ -f "$extra" ]; then cp "$extra" "$dest"; fi
    done
  fi
  echo "[INFO]  verifying tarball"
  actual="$(sha256sum "$artifacts/rke2.$suffix.tar.gz" | awk '{print $1}')"
  [ "$expected" = "$actual" ] || fatal "download sha256 does not match $expected, got $actual"
  echo "[INFO]  unpacking tarball file to /usr/local"
  mkdir -p /usr/local
  tar xzf "$artifacts/rke2.$suffix.tar.gz" -C /usr/local
else
  version="${INSTALL_RKE2_VERSION:?the lab stand-in installs only a named release}"
  mkdir -p /usr/local/bin
  printf '#!/bin/sh\n# STAND-IN for rke2 (lab): version only.\necho "rke2 version %s (lab-standin)"\necho "go version go1.24"\n' \
    "$version" >/usr/local/bin/rke2
  chmod 0755 /usr/local/bin/rke2
fi
ln -sf "$standin/rke2-server" "$units/rke2-server.service/exec"
bin="${STANDIN_BIN:-${RKE2R_TOOLCHAIN_CACHE:-/var/cache/rke2-remediation/toolchain}/bin}"
[ -x "$bin/kubectl" ] || { echo "[ERROR]  no kubectl in $bin: run scripts/toolchain/build" >&2; exit 1; }
install -m 0755 "$(readlink -f "$bin/kubectl")" /var/lib/rancher/rke2/bin/kubectl
echo "installed the lab's RKE2 stand-in (asked for ${INSTALL_RKE2_VERSION:-latest}${INSTALL_RKE2_ARTIFACT_PATH:+, from the artifacts in $INSTALL_RKE2_ARTIFACT_PATH})" >&2
