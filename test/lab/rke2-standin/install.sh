#!/bin/bash
# STAND-IN for the RKE2 installer (get.rke2.io) on lab nodes — not RKE2. RKE2 cannot run in the
# lab (no container runtime, no Kubernetes), so this installs the lab's rke2-server stand-in as
# the unit `rke2-server.service` of the systemctl test double, the REAL kubectl (from the toolchain
# cache, STANDIN_BIN in the lab's /etc/rke2-standin.env) where RKE2 puts it, and an `rke2`
# binary stand-in that answers `rke2 --version` with the release asked for, in the format of
# rancher/rke2@v1.35.6+rke2r1 pkg/cli/cmds/root.go (VersionPrinter), at the tarball install's
# path (/usr/local/bin, install.sh of the same tag). A file /etc/rancher/standin-install-fails
# on the node makes it fail as a failed download does.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
units="${SYSTEMCTL_DOUBLE_DIR:-/var/lib/systemctl-double}/units"
mkdir -p "$units/rke2-server.service" /var/lib/rancher/rke2/bin
if [ -f /etc/rancher/standin-install-fails ]; then
  echo "[ERROR]  download failed (lab stand-in told to fail)" >&2
  exit 22
fi
version="${INSTALL_RKE2_VERSION:?the lab stand-in installs only a named release}"
ln -sf "$here/rke2-server" "$units/rke2-server.service/exec"
mkdir -p /usr/local/bin
printf '#!/bin/sh\n# STAND-IN for rke2 (lab): version only.\necho "rke2 version %s (lab-standin)"\necho "go version go1.24"\n' \
  "$version" >/usr/local/bin/rke2
chmod 0755 /usr/local/bin/rke2
# shellcheck disable=SC1091 # written by the lab per node
[ -f /etc/rke2-standin.env ] && . /etc/rke2-standin.env
bin="${STANDIN_BIN:-${RKE2R_TOOLCHAIN_CACHE:-/var/cache/rke2-remediation/toolchain}/bin}"
[ -x "$bin/kubectl" ] || { echo "[ERROR]  no kubectl in $bin: run scripts/toolchain/build" >&2; exit 1; }
install -m 0755 "$(readlink -f "$bin/kubectl")" /var/lib/rancher/rke2/bin/kubectl
echo "installed the lab's RKE2 stand-in (asked for ${INSTALL_RKE2_VERSION:-latest})" >&2
