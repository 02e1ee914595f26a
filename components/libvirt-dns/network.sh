#!/bin/bash
# Reads or changes the DNS host records of a libvirt network, on the KVM host, over SSH.
# Parameters arrive as shell assignments before this script:
#   NETWORK  libvirt network name
#   ACTION   "read" (print the network XML) or "apply"
#   DELETE   newline-separated IPs whose records are removed (apply)
#   ADD      newline-separated <host> XML records to add (apply)
# Every change is made --live --config, so the running dnsmasq and the persistent definition agree.
# Records are deleted by IP only: naming the hostname would match every record that shares it.
set -euo pipefail

fail() {
  echo "error: $*" >&2
  exit 3
}

command -v virsh >/dev/null || fail "virsh is not installed on this host; install libvirt-clients."
virsh=(virsh --quiet -c "${LIBVIRT_URI:-qemu:///system}")
if ! info="$("${virsh[@]}" net-info "$NETWORK" 2>&1)"; then
  info="$(tr '\n' ' ' <<<"$info")"
  case "$info" in
    *"ermission denied"* | *"authentication"*) fail "permission denied talking to libvirt; the SSH user needs to be root or in group libvirt." ;;
    *) fail "libvirt network '$NETWORK' does not exist on this host ($info)." ;;
  esac
fi
grep -Eq '^Active:[[:space:]]+yes' <<<"$info" || fail "libvirt network '$NETWORK' is not active; start it with: virsh net-start $NETWORK"

if [ "$ACTION" = "apply" ]; then
  while IFS= read -r ip; do
    [ -n "$ip" ] || continue
    "${virsh[@]}" net-update "$NETWORK" delete dns-host "<host ip='$ip'/>" --live --config >/dev/null
    echo "removed dns-host $ip" >&2
  done <<<"${DELETE:-}"
  while IFS= read -r record; do
    [ -n "$record" ] || continue
    "${virsh[@]}" net-update "$NETWORK" add-last dns-host "$record" --live --config >/dev/null
    echo "added $record" >&2
  done <<<"${ADD:-}"
fi
"${virsh[@]}" net-dumpxml "$NETWORK"
