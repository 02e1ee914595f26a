#!/bin/bash
# STAND-IN for the RKE2 installer (get.rke2.io) on lab nodes — not RKE2. RKE2 cannot run in the
# lab (no container runtime, no Kubernetes), so this installs the lab's rke2-server stand-in as
# the unit `rke2-server.service` of the systemctl test double, and a kubectl stand-in.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
units="${SYSTEMCTL_DOUBLE_DIR:-/var/lib/systemctl-double}/units"
mkdir -p "$units/rke2-server.service" /var/lib/rancher/rke2/bin
ln -sf "$here/rke2-server" "$units/rke2-server.service/exec"
install -m 0755 "$here/kubectl" /var/lib/rancher/rke2/bin/kubectl
echo "installed the lab's RKE2 stand-in (asked for ${INSTALL_RKE2_VERSION:-latest})" >&2
