#!/bin/bash
# Reads or changes the DNS host records of a libvirt network, on the KVM host, over SSH.
# Parameters arrive as shell assignments before this script:
#   NETWORK  libvirt network name
#   ACTION   "read" (print the network XML) or "apply"
#   ADD      newline-separated <host> XML records for IPs the network has no record for (apply)
#   MODIFY   newline-separated <host> XML records that replace the record of the same IP (apply)
#   DELETE   newline-separated IPs whose records are removed (apply)
#   DOMAIN   when set, the DHCP domain the network's persistent definition should hand out (apply);
#            libvirt applies it when the network next restarts, and guests at their next lease
# Every change is made --live --config, so the running dnsmasq and the persistent definition agree.
# Records are deleted by IP only: naming the hostname would match every record that shares it.
# Adds run first and deletes last, so a name that moves between addresses never answers nothing.
# `modify dns-host` finds the record by its IP alone and replaces it, hostnames and all, in one
# update (libvirt/libvirt master src/conf/network_conf.c, virNetworkDefUpdateDNSHost; supported
# since libvirt 10.6, autotest/tp-libvirt#6158). Older libvirt refuses it with "DNS HOST records
# cannot be modified, only added or deleted" (so does Debian 12's 9.0.0); the record is then
# deleted and added back at once, which leaves a short gap, and a marker line says so.
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
  while IFS= read -r record; do
    [ -n "$record" ] || continue
    "${virsh[@]}" net-update "$NETWORK" add-last dns-host "$record" --live --config >/dev/null
    echo "added $record" >&2
  done <<<"${ADD:-}"
  while IFS= read -r record; do
    [ -n "$record" ] || continue
    if err="$("${virsh[@]}" net-update "$NETWORK" modify dns-host "$record" --live --config 2>&1 >/dev/null)"; then
      echo "modified $record" >&2
    elif [[ "$err" == *"cannot be modified"* ]]; then
      ip="$(sed -E "s/^<host ip='([^']*)'.*/\1/" <<<"$record")"
      "${virsh[@]}" net-update "$NETWORK" delete dns-host "<host ip='$ip'/>" --live --config >/dev/null
      "${virsh[@]}" net-update "$NETWORK" add-last dns-host "$record" --live --config >/dev/null
      echo "<!-- replaced without modify: $ip -->"
      echo "replaced $record (this libvirt refuses modify of dns-host: deleted and added back)" >&2
    else
      fail "modify of the dns-host record $record failed: $(tr '\n' ' ' <<<"$err")"
    fi
  done <<<"${MODIFY:-}"
  while IFS= read -r ip; do
    [ -n "$ip" ] || continue
    "${virsh[@]}" net-update "$NETWORK" delete dns-host "<host ip='$ip'/>" --live --config >/dev/null
    echo "removed dns-host $ip" >&2
  done <<<"${DELETE:-}"
  if [ -n "${DOMAIN:-}" ]; then
    defined="$("${virsh[@]}" net-dumpxml --inactive "$NETWORK")"
    if ! grep -q "<domain name=['\"]${DOMAIN}['\"]" <<<"$defined"; then
      tmp="$(mktemp)"
      trap 'rm -f "$tmp"' EXIT
      if grep -q "<domain " <<<"$defined"; then
        sed -E "s#<domain name=['\"][^'\"]*['\"]#<domain name='$DOMAIN'#" <<<"$defined" >"$tmp"
      else
        sed -E "s#(</bridge>|<bridge [^>]*/>)#\1<domain name='$DOMAIN'/>#" <<<"$defined" >"$tmp"
      fi
      "${virsh[@]}" net-define "$tmp" >/dev/null
      echo "set DHCP domain $DOMAIN in the persistent definition; it applies when the network restarts, and guests pick it up at their next lease" >&2
    fi
  fi
fi
echo "<!-- persistent domain: $("${virsh[@]}" net-dumpxml --inactive "$NETWORK" | sed -n "s/.*<domain name=['\"]\([^'\"]*\)['\"].*/\1/p" | head -n1) -->"
"${virsh[@]}" net-dumpxml "$NETWORK"
