#!/bin/bash
# Read-only: the files in a server's manifests directory that RKE2 would apply and that may define
# the HelmChartConfig kube-system/rke2-coredns, so that the DNS fix is not written beside an
# operator's own (two AddOns applying one object: the one applied last wins, at every start).
# Which files RKE2 applies (k3s-io/k3s@0301210fa15f:pkg/deploy/controller.go, listFilesIn,
# walkFiles, shouldSkipFile; rancher/rke2-docs@9477b7b1:docs/install/packaged_components.md):
#   - every file under <data-dir>/server/manifests, subdirectories included, symlinked
#     directories followed;
#   - only names ending in .yaml, .yml or .json, any case, and not starting with a dot;
#   - not a file whose name has a `<name>.skip` beside any file of the tree: the skip list is
#     keyed by the file's name, not its path.
# RKE2_FACTS_SCRIPT (the rke2-facts.sh text) finds the data-dir RKE2 reads there; without it, the
# default data-dir. Parameters: OWN (the product's own manifest on this server, left out, as a path
# under the default data-dir /var/lib/rancher/rke2 that moves with the data-dir found, as
# remote-file.sh moves it; empty on a server the product writes none to).
# Prints `dir <manifests directory>`, then, for each applied file that names both HelmChartConfig
# and rke2-coredns, `file <path> <base64 of its content>`; the caller parses them.
set -uo pipefail

data_dir=/var/lib/rancher/rke2
if [ -n "${RKE2_FACTS_SCRIPT:-}" ]; then
  data_dir="$(ROLE=server MEMBERS_SCRIPT="exit 1" bash -c "$RKE2_FACTS_SCRIPT" 2>/dev/null | sed -n 's/^data_dir=//p')"
  [ -n "$data_dir" ] || { echo "error: cannot read RKE2's data-dir on this server" >&2; exit 3; }
fi
dir="$data_dir/server/manifests"
own=""
[ -z "${OWN:-}" ] || own="$data_dir/${OWN#/var/lib/rancher/rke2/}"
echo "dir $dir"
[ -e "$dir" ] || exit 0
[ -d "$dir" ] || { echo "error: $dir is not a directory" >&2; exit 3; }

if ! listing="$(find -L "$dir" -type f -print0 2>/dev/null | tr '\0' '\n')"; then
  echo "error: cannot list $dir" >&2
  exit 3
fi
declare -A skipped=()
while IFS= read -r path; do
  name="${path##*/}"
  [[ "$name" == *.skip ]] && skipped["${name%.skip}"]=1
done <<<"$listing"

while IFS= read -r path; do
  [ -n "$path" ] || continue
  name="${path##*/}"
  lower="${name,,}"
  [[ "$name" == .* ]] && continue
  [[ "$lower" == *.yaml || "$lower" == *.yml || "$lower" == *.json ]] || continue
  [ -z "${skipped[$name]:-}" ] || continue
  [ "$path" != "$own" ] || continue
  [ -r "$path" ] || { echo "error: cannot read $path" >&2; exit 3; }
  if ! grep -q HelmChartConfig "$path" || ! grep -q rke2-coredns "$path"; then continue; fi
  echo "file $path $(base64 -w0 <"$path")"
done <<<"$listing"
