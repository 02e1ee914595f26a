#!/bin/bash
# Node preparation for RKE2 on Rocky Linux 9 (seed 003). Run over SSH as root, one session per
# read or apply. Parameters arrive as shell assignments before this script:
#   ACTION             "read" (report only) or "apply" (converge, then report)
#   NM_CONFIG          desired content of /etc/NetworkManager/conf.d/99-rke2-unmanaged.conf
#   BRING_UP_KUBE_IPVS "true" to set kube-ipvs0 up (kube-proxy keeps it DOWN by design)
# It never stops iptables.service or ip6tables.service: their stop action flushes every rule,
# including kube-proxy's and Calico's. It deletes exactly the REJECT rules Rocky's defaults add.
# Progress goes to stderr ("changed: ..." / "ok: ..."); the final state goes to stdout as
# key=value lines.
set -euo pipefail

NM_CONF=/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf
REJECT_V4=(-j REJECT --reject-with icmp-host-prohibited)
REJECT_V6=(-j REJECT --reject-with icmp6-adm-prohibited)

changed() { echo "changed: $*" >&2; }
ok() { echo "ok: $*" >&2; }

unit_state() {
  local unit="$1" state
  state="$(systemctl is-enabled "$unit" 2>/dev/null || true)"
  case "$state" in
    enabled | enabled-runtime | alias | static | indirect | generated) echo enabled ;;
    disabled | masked | masked-runtime) echo disabled ;;
    *) echo absent ;;
  esac
}

disable_unit() {
  local unit="$1"
  case "$(unit_state "$unit")" in
    enabled) systemctl disable "$unit" >/dev/null 2>&1 && changed "disabled $unit (left running; stopping it would flush the ruleset)" ;;
    disabled) ok "$unit is disabled" ;;
    absent) ok "$unit is not installed" ;;
  esac
}

reject_count() {
  local tool="$1" chain="$2"
  shift 2
  local rule
  rule="$(printf '%s ' -A "$chain" "$@")"
  "$tool" -S "$chain" 2>/dev/null | grep -cxF -- "${rule% }" || true
}

remove_reject() {
  local tool="$1" chain="$2"
  shift 2
  local removed=0
  while "$tool" -C "$chain" "$@" 2>/dev/null; do
    "$tool" -D "$chain" "$@"
    removed=$((removed + 1))
  done
  if [ "$removed" -gt 0 ]; then changed "removed $removed REJECT rule(s) from $tool $chain"; else ok "$tool $chain has no REJECT rule"; fi
}

write_nm_config() {
  local current=""
  [ -f "$NM_CONF" ] && current="$(cat "$NM_CONF")"
  if [ "$current" = "$NM_CONFIG" ]; then
    ok "$NM_CONF is as desired"
    return
  fi
  mkdir -p "$(dirname "$NM_CONF")"
  local tmp
  tmp="$(mktemp "$NM_CONF.XXXXXX")"
  printf '%s\n' "$NM_CONFIG" >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$NM_CONF"
  changed "wrote $NM_CONF"
  if [ "$(unit_state NetworkManager.service)" != absent ]; then
    systemctl reload NetworkManager.service
    changed "reloaded NetworkManager"
  fi
}

if [ "$ACTION" = "apply" ]; then
  # 1. Firewall services: disabled, never stopped.
  disable_unit iptables.service
  disable_unit ip6tables.service
  disable_unit firewalld.service
  # 2. nm-cloud-setup rewrites routing on some images; RKE2 requires it off.
  disable_unit nm-cloud-setup.service
  disable_unit nm-cloud-setup.timer
  # 3. The REJECT rules iptables.service loaded at boot, and nothing else.
  remove_reject iptables INPUT "${REJECT_V4[@]}"
  remove_reject iptables FORWARD "${REJECT_V4[@]}"
  remove_reject ip6tables INPUT "${REJECT_V6[@]}"
  remove_reject ip6tables FORWARD "${REJECT_V6[@]}"
  # 4. NetworkManager leaves kube-ipvs0 and the CNI devices alone.
  write_nm_config
  # 5. kube-ipvs0 up only on request.
  if [ "${BRING_UP_KUBE_IPVS:-false}" = "true" ] && ip link show kube-ipvs0 >/dev/null 2>&1; then
    if ip link show kube-ipvs0 | grep -q ',UP'; then ok "kube-ipvs0 is up"; else ip link set kube-ipvs0 up && changed "set kube-ipvs0 up"; fi
  fi
fi

nm_current=""
[ -f "$NM_CONF" ] && nm_current="$(cat "$NM_CONF")"
kube_ipvs0=absent
if ip link show kube-ipvs0 >/dev/null 2>&1; then
  if ip link show kube-ipvs0 | grep -q ',UP'; then kube_ipvs0=up; else kube_ipvs0=down; fi
fi
echo "iptables_service=$(unit_state iptables.service)"
echo "ip6tables_service=$(unit_state ip6tables.service)"
echo "firewalld_service=$(unit_state firewalld.service)"
echo "nm_cloud_setup_service=$(unit_state nm-cloud-setup.service)"
echo "nm_cloud_setup_timer=$(unit_state nm-cloud-setup.timer)"
echo "reject_rules=$(($(reject_count iptables INPUT "${REJECT_V4[@]}") + $(reject_count iptables FORWARD "${REJECT_V4[@]}") + $(reject_count ip6tables INPUT "${REJECT_V6[@]}") + $(reject_count ip6tables FORWARD "${REJECT_V6[@]}")))"
echo "nm_config_b64=$(printf '%s' "$nm_current" | base64 -w0)"
echo "kube_ipvs0=$kube_ipvs0"
