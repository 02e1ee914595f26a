ACTION='apply'
NM_CONFIG='[keyfile]
unmanaged-devices+=interface-name:kube-ipvs0;interface-name:cali*;interface-name:vxlan.calico;interface-name:vxlan-v6.calico;interface-name:tunl*;interface-name:flannel*;interface-name:wireguard.cali;interface-name:wg-v6.cali'
BRING_UP_KUBE_IPVS='false'
NODE_IP='192.168.122.30'
KEEP_FIREWALLD='false'
MIN_MEMORY_MIB='3584'
MIN_CPUS='2'
#!/bin/bash
# Node preparation for RKE2 on Rocky Linux 9 (seed 003). Run over SSH as root, one session per
# read or apply. Parameters arrive as shell assignments before this script:
#   ACTION             "read" (report only) or "apply" (converge, then report)
#   NM_CONFIG          the drop-in /etc/NetworkManager/conf.d/99-rke2-unmanaged.conf as the stack
#                      renders it; merged into a file the host has (its entries kept, the
#                      stack's missing ones added, the previous file kept beside it)
#   BRING_UP_KUBE_IPVS "true" to set kube-ipvs0 up (kube-proxy keeps it DOWN by design)
#   NODE_IP            the node's address in the stack
#   KEEP_FIREWALLD     "true" (nodePreparation.firewalld: keep): firewalld is left as found, and
#                      while it runs so are the REJECT rules (they may be its own)
#   MIN_MEMORY_MIB, MIN_CPUS   the memory (MemTotal) and online CPUs RKE2 needs on the node
#   PROFILE            RKE2's profile for the node (cis, etcd) or empty; RKE2 does not change the
#                      host and exits at start when what its profile checks is missing
#                      (components/node-preparation/profile.ts cites each check)
#   CIS_SYSCTL         with cis: the release's rke2-cis-sysctl.conf, written to
#                      /etc/sysctl.d/60-rke2-cis.conf (a different file is kept beside it) and
#                      applied with sysctl -p, which sets those four parameters and nothing else
#   ETCD_USER          "true" on a node that runs rke2 server: with a profile, the etcd user and
#                      group exist in /etc/passwd and /etc/group
# Before it changes anything it checks the host as kubespray's preinstall checks do where they
# apply to RKE2 (kubernetes-sigs/kubespray roles/kubernetes/preinstall/tasks/
# 0040-verify-settings.yml: "Stop if ip var does not match local ips", "Stop if memory is too
# small"): NODE_IP is one of the host's addresses, it has RKE2's minimum memory and CPUs, and
# /etc/resolv.conf names a nameserver (the cluster DNS forwards to it). Any of those missing is
# reported as host_findings (separated by ";", which no finding contains), and apply stops
# before its first change.
# It never stops iptables.service or ip6tables.service: their stop action flushes every rule,
# including kube-proxy's and Calico's. It deletes exactly the REJECT rules Rocky's defaults add.
# firewalld is stopped only when its stop provably leaves every other rule alone (see
# firewalld_stop_blocker); otherwise it is disabled and keeps running until the next reboot.
# The NetworkManager drop-in is merged into what the host has (see write_nm_config). When it
# changes while RKE2 is installed and a device it adds exists, it reports reboot_required=true
# and never reboots by itself. That owed reboot is kept in REBOOT_PENDING with the boot it was
# owed in (the kernel's boot_id), so every later read and apply reports it until the node has
# booted again, even when the run that wrote the drop-in failed afterwards.
# Progress goes to stderr ("changed: ..." / "ok: ..."); the final state goes to stdout as
# key=value lines.
set -euo pipefail

NM_CONF=/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf
REBOOT_PENDING=/var/lib/rke2-remediation/reboot-pending
CIS_SYSCTL_FILE=/etc/sysctl.d/60-rke2-cis.conf
BOOT_ID_FILE=/proc/sys/kernel/random/boot_id
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

unit_active() { systemctl is-active --quiet "$1" 2>/dev/null; }

disable_unit() {
  local unit="$1"
  case "$(unit_state "$unit")" in
    enabled) systemctl disable "$unit" >/dev/null 2>&1 && changed "disabled $unit (left running; stopping it would flush the ruleset)" ;;
    disabled) ok "$unit is disabled" ;;
    absent) ok "$unit is not installed" ;;
  esac
}

# Why stopping firewalld now would touch rules that are not its own; empty when it would not.
# firewalld/firewalld@v1.3.4 src/firewall/core/fw.py (stop): with CleanupOnExit (default yes,
# config/firewalld.conf) it calls flush(), which runs every available backend's flush rules,
# iptables and ip6tables included even with FirewallBackend=nftables; ipXtables.py
# (build_flush_rules) sends "-t <table> -F/-X/-Z" for each built-in table, which removes
# kube-proxy's and Calico's chains. Otherwise it removes only what is its own: the "inet
# firewalld" table (nftables.py, _build_delete_table_rules), its policy table and the ipsets it
# defined (fw_ipset.py, flush). firewalld/firewalld@v2.0.0 fw.py
# (may_skip_flush_direct_backends, commit "avoid iptables flush if using nftables backend",
# issue #863) skips the iptables flush when the backend is nftables and no direct rule,
# chain or passthrough exists at runtime (fw_direct.py, has_runtime_configuration).
firewalld_stop_blocker() {
  local conf=/etc/firewalld/firewalld.conf cleanup backend version installed skips_iptables
  local query direct
  cleanup="$(sed -n 's/^CleanupOnExit=//p' "$conf" 2>/dev/null | tail -n1 || true)"
  case "${cleanup,,}" in no | false) return 0 ;; esac
  backend="$(sed -n 's/^FirewallBackend=//p' "$conf" 2>/dev/null | tail -n1 || true)"
  if [ "${backend:-nftables}" != nftables ]; then
    echo "FirewallBackend=$backend flushes every iptables table on stop"
    return 0
  fi
  version="$(firewall-cmd --version 2>/dev/null || true)"
  # Distributions carry the v2.0.0 change into 1.x packages: the installed code counts when it is
  # the running daemon's version (a package updated under a running daemon changes nothing yet).
  installed="$(python3 -c 'import importlib.util as u, firewall.config as c; s = u.find_spec("firewall.core.fw"); print(c.VERSION, s.origin if s else "")' 2>/dev/null || true)"
  if [ "${installed%% *}" = "$version" ] && grep -qs 'def may_skip_flush_direct_backends' "${installed#* }"; then
    skips_iptables=true
  elif [ "${version%%.*}" -ge 2 ] 2>/dev/null; then
    skips_iptables=true
  else
    skips_iptables=false
  fi
  if [ "$skips_iptables" = false ] && [[ "$version" =~ ^[0-9]+\. ]]; then
    echo "firewalld $version flushes every iptables table on stop (firewalld/firewalld#863, fixed in 2.0.0)"
    return 0
  fi
  if ! [[ "$version" =~ ^[0-9]+\. ]]; then
    echo "firewall-cmd --version did not answer, so what its stop flushes is unknown"
    return 0
  fi
  for query in --get-all-chains --get-all-rules --get-all-passthroughs; do
    if ! direct="$(firewall-cmd --direct "$query" 2>/dev/null)"; then
      echo "firewall-cmd --direct $query failed, so what its stop flushes is unknown"
      return 0
    fi
    if [ -n "$direct" ]; then
      echo "firewalld has direct configuration ($query), so its stop flushes every iptables table"
      return 0
    fi
  done
}

# rancher/rke2-docs@9477b7b1:docs/known_issues.md ("Firewalld conflicts with default
# networking"): firewalld should be disabled on systems running RKE2.
prepare_firewalld() {
  local blocker=""
  if [ "$(unit_state firewalld.service)" = absent ]; then
    ok "firewalld.service is not installed"
    return
  fi
  if unit_active firewalld.service; then blocker="$(firewalld_stop_blocker)"; fi
  if unit_active firewalld.service && [ -z "$blocker" ]; then
    systemctl disable --now firewalld.service >/dev/null 2>&1
    changed "disabled and stopped firewalld.service (its stop removes only its own table)"
  elif [ "$(unit_state firewalld.service)" = enabled ]; then
    systemctl disable firewalld.service >/dev/null 2>&1
    if [ -n "$blocker" ]; then
      changed "disabled firewalld.service and left it running until the next reboot: $blocker"
      echo "warning: firewalld.service still runs (disabled, gone after the next reboot) because stopping it now would not be safe: $blocker" >&2
    else
      changed "disabled firewalld.service"
    fi
  elif [ -n "$blocker" ]; then
    ok "firewalld.service is disabled; still running until the next reboot: $blocker"
  else
    ok "firewalld.service is disabled and stopped"
  fi
}

# rancher/rke2-docs@9477b7b1:docs/known_issues.md (NetworkManager): nm-cloud-setup.service and
# nm-cloud-setup.timer add a routing table that interferes with the CNI; disable them if present.
stop_and_disable() {
  local unit="$1"
  if [ "$(unit_state "$unit")" = absent ]; then
    ok "$unit is not installed"
  elif [ "$(unit_state "$unit")" = enabled ] || unit_active "$unit"; then
    systemctl disable --now "$unit" >/dev/null 2>&1
    changed "disabled and stopped $unit"
  else
    ok "$unit is disabled and stopped"
  fi
}

# RKE2's units as its installer lays them down; "installed" is what the reboot advice is about.
rke2_installed() {
  local unit
  for unit in rke2-server.service rke2-agent.service; do
    if [ "$(unit_state "$unit")" != absent ] || unit_active "$unit"; then return 0; fi
  done
  return 1
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

# NetworkManager's config (NetworkManager.conf(5)): files are read in order, /usr/lib/NetworkManager/
# conf.d, /run/NetworkManager/conf.d, NetworkManager.conf, then /etc/NetworkManager/conf.d by name
# (a name in /etc shadows the same name in /usr/lib and /run); a later `key=` replaces what earlier
# files set, and `key+=` appends to it. The drop-in therefore appends (`unmanaged-devices+=`), so
# an operator's earlier file (a storage NIC in 50-storage-nic.conf) keeps its effect.

# The conf files NetworkManager reads, in its order, one per line; the drop-in is listed at its
# place by name even before it exists.
nm_conf_files() {
  local dir f name
  local -A etc=()
  for f in /etc/NetworkManager/conf.d/*.conf; do [ -f "$f" ] && etc[$(basename "$f")]=1; done
  for dir in /usr/lib/NetworkManager/conf.d /run/NetworkManager/conf.d; do
    for f in "$dir"/*.conf; do
      name="$(basename "$f")"
      [ -f "$f" ] && [ -z "${etc[$name]:-}" ] && echo "$f"
    done
  done
  [ -f /etc/NetworkManager/NetworkManager.conf ] && echo /etc/NetworkManager/NetworkManager.conf
  for f in /etc/NetworkManager/conf.d/*.conf; do [ -f "$f" ] && echo "$f"; done | { cat; echo "$NM_CONF"; } | LC_ALL=C sort -u
}

# The [keyfile] unmanaged-devices lines of FILE (stdin when "-"), as "<op> <value>", op "=" or "+=".
nm_unmanaged_lines() {
  awk '
    /^[[:space:]]*\[/ { section = $0; gsub(/[[:space:]]/, "", section); next }
    section == "[keyfile]" && /^[[:space:]]*unmanaged-devices[[:space:]]*\+?=/ {
      line = $0; sub(/^[[:space:]]*unmanaged-devices[[:space:]]*/, "", line)
      op = substr(line, 1, 1) == "+" ? "+=" : "="
      sub(/^\+?=[[:space:]]*/, "", line)
      print op " " line
    }' "$1"
}

# The specs FILE's lines leave in force, one per line ("=" replaces, "+=" appends).
nm_file_specs() {
  local op value spec
  local -a specs=() more
  while read -r op value; do
    [ "$op" = "=" ] && specs=()
    IFS=';' read -ra more <<<"$value"
    for spec in "${more[@]}"; do [ -n "$spec" ] && specs+=("$spec"); done
  done < <(nm_unmanaged_lines "$1")
  [ "${#specs[@]}" -eq 0 ] || printf '%s\n' "${specs[@]}"
}

# Facts of the drop-in among the files NetworkManager reads: nm_missing (the stack's specs it lacks,
# ";"-joined), nm_replaces (earlier files setting the key that its "=" replaces), nm_overridden_by
# (later files whose "=" replaces it: the stack's entries would not take effect).
nm_config_facts() {
  local f seen=false op spec
  local -a missing=() replaces=() overridden=()
  local have=""
  [ -f "$NM_CONF" ] && have=";$(nm_file_specs "$NM_CONF" | paste -sd';');"
  while IFS= read -r spec; do
    [ -n "$spec" ] && [[ "$have" != *";$spec;"* ]] && missing+=("$spec")
  done < <(printf '%s\n' "$NM_CONFIG" | nm_file_specs -)
  local first_op=""
  [ -f "$NM_CONF" ] && first_op="$(nm_unmanaged_lines "$NM_CONF" | head -n1 | cut -d' ' -f1)"
  while IFS= read -r f; do
    if [ "$f" = "$NM_CONF" ]; then seen=true; continue; fi
    op="$(nm_unmanaged_lines "$f" | head -n1 | cut -d' ' -f1)"
    [ -n "$op" ] || continue
    if ! $seen && [ "$first_op" = "=" ]; then replaces+=("$f"); fi
    if $seen && [ "$op" = "=" ]; then overridden+=("$f"); fi
  done < <(nm_conf_files)
  nm_missing="$(IFS=';'; echo "${missing[*]}")"
  nm_replaces="$(IFS=' '; echo "${replaces[*]}")"
  nm_overridden_by="$(IFS=' '; echo "${overridden[*]}")"
}

# The drop-in with the stack's missing specs added to its entries, as "+=" (stdout).
nm_merged_config() {
  if [ ! -f "$NM_CONF" ]; then
    printf '%s\n' "$NM_CONFIG"
    return
  fi
  local specs
  specs="$( { nm_file_specs "$NM_CONF"; tr ';' '\n' <<<"$nm_missing"; } | awk 'NF && !seen[$0]++' | paste -sd';')"
  awk -v line="unmanaged-devices+=$specs" '
    /^[[:space:]]*\[/ {
      if (section == "[keyfile]" && !done) { print line; done = 1 }
      section = $0; gsub(/[[:space:]]/, "", section); print; next
    }
    section == "[keyfile]" && /^[[:space:]]*unmanaged-devices[[:space:]]*\+?=/ {
      if (!done) { print line; done = 1 }
      next
    }
    { print }
    END {
      if (!done && section == "[keyfile]") print line
      else if (!done) { print "[keyfile]"; print line }
    }' "$NM_CONF"
}

# Whether a device the drop-in adds exists on the node (NetworkManager may have taken it).
nm_added_device_exists() {
  local name spec pattern
  while read -r name; do
    for spec in ${nm_missing//;/ }; do
      case "$spec" in
        interface-name:=*) [ "$name" = "${spec#interface-name:=}" ] && return 0 ;;
        interface-name:*)
          pattern="${spec#interface-name:}"
          # shellcheck disable=SC2053 # a glob, as NetworkManager matches interface names
          [[ "$name" == $pattern ]] && return 0
          ;;
        *) return 0 ;; # another kind of spec: whether it matches cannot be told here
      esac
    done
  done < <(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }')
  return 1
}

# Uses the facts the host checks read (nm_config_facts); nothing changes NetworkManager's files in between.
write_nm_config() {
  if [ -z "$nm_missing" ] && [ -z "$nm_replaces" ]; then
    ok "$NM_CONF lists every device the stack leaves unmanaged"
    return
  fi
  mkdir -p "$(dirname "$NM_CONF")"
  local tmp kept=""
  tmp="$(mktemp "$NM_CONF.XXXXXX")"
  nm_merged_config >"$tmp"
  chmod 0644 "$tmp"
  if [ -f "$NM_CONF" ]; then
    kept="$NM_CONF.$(date -u +%Y%m%dT%H%M%SZ)"
    cp -p "$NM_CONF" "$kept"
  fi
  mv -f "$tmp" "$NM_CONF"
  changed "wrote $NM_CONF${nm_missing:+, adding ${nm_missing}}${nm_replaces:+, appending to what $nm_replaces set}${kept:+ (the previous file is kept as $kept)}"
  # rancher/rke2-docs@9477b7b1:docs/known_issues.md (NetworkManager): on a system that already has
  # RKE2 installed, the changed unmanaged devices take effect only after a reboot of the node. Only
  # a device NetworkManager may already have taken needs it: one the change adds that exists now.
  if [ "$rke2_present" = true ] && nm_added_device_exists; then
    reboot_required=true
    mkdir -p "$(dirname "$REBOOT_PENDING")"
    { cat "$BOOT_ID_FILE"; echo "$NM_CONF changed on a node that already has RKE2"; } >"$REBOOT_PENDING"
    echo "warning: $NM_CONF changed on a node that already has RKE2 and a device it adds exists; reboot the node for NetworkManager to leave the CNI devices alone (this run does not reboot it)" >&2
  elif [ "$rke2_present" = true ]; then
    ok "no device the change adds exists on the node, so no reboot is owed"
  fi
  if [ "$(unit_state NetworkManager.service)" != absent ]; then
    systemctl reload NetworkManager.service
    changed "reloaded NetworkManager"
  fi
}

# What the host lacks for RKE2's profile, separated by ";": each kernel parameter of CIS_SYSCTL
# whose /proc/sys value differs (RKE2 reads /proc/sys), and the etcd user or group missing from
# /etc/passwd or /etc/group (RKE2 looks them up with Go's os/user, which reads those files, not NSS).
profile_findings() {
  local findings=() key want have
  if [ "${PROFILE:-}" = cis ]; then
    while IFS='=' read -r key want; do
      [ -n "$key" ] || continue
      have="$(cat "/proc/sys/${key//.//}" 2>/dev/null || echo unreadable)"
      [ "$have" = "$want" ] || findings+=("$key is $have, the cis profile needs $want")
    done <<<"${CIS_SYSCTL:-}"
  fi
  if [ -n "${PROFILE:-}" ] && [ "${ETCD_USER:-false}" = true ]; then
    grep -q '^etcd:' /etc/passwd || findings+=("no etcd user in /etc/passwd")
    grep -q '^etcd:' /etc/group || findings+=("no etcd group in /etc/group")
  fi
  (IFS=';'; echo "${findings[*]}")
}

# The hardening guide's host steps for the profile (rancher/rke2-docs@9477b7b1:
# docs/security/hardening_guide.md): the sysctl file in /etc/sysctl.d, applied now; the etcd
# user and group (useradd -r -c "etcd user" -s /sbin/nologin -M etcd, its group first).
apply_profile() {
  [ -n "${PROFILE:-}" ] || return 0
  if [ "$PROFILE" = cis ]; then
    local wanted kept="" tmp
    wanted="$(printf '%s' "$CIS_SYSCTL")"
    if [ "$(cat "$CIS_SYSCTL_FILE" 2>/dev/null)" = "$wanted" ]; then
      ok "$CIS_SYSCTL_FILE has the cis profile's kernel parameters"
    else
      mkdir -p "$(dirname "$CIS_SYSCTL_FILE")"
      if [ -f "$CIS_SYSCTL_FILE" ]; then
        kept="$CIS_SYSCTL_FILE.$(date -u +%Y%m%dT%H%M%SZ)"
        cp -p "$CIS_SYSCTL_FILE" "$kept"
      fi
      tmp="$(mktemp "$CIS_SYSCTL_FILE.XXXXXX")"
      printf '%s\n' "$wanted" >"$tmp"
      chmod 0644 "$tmp"
      mv -f "$tmp" "$CIS_SYSCTL_FILE"
      changed "wrote $CIS_SYSCTL_FILE${kept:+ (the previous file is kept as $kept)}"
    fi
    if [ -n "$(PROFILE=cis ETCD_USER=false profile_findings)" ]; then
      sysctl -q -p "$CIS_SYSCTL_FILE" >/dev/null
      changed "applied $CIS_SYSCTL_FILE (sysctl -p: vm.panic_on_oom, vm.overcommit_memory, kernel.panic, kernel.panic_on_oops)"
    else
      ok "the kernel has the cis profile's parameters"
    fi
  fi
  if [ "${ETCD_USER:-false}" = true ]; then
    if grep -q '^etcd:' /etc/group; then ok "group etcd exists"; else groupadd -r etcd && changed "added the system group etcd"; fi
    if grep -q '^etcd:' /etc/passwd; then
      ok "user etcd exists"
    else
      useradd -r -c "etcd user" -s /sbin/nologin -M -g etcd etcd && changed "added the system user etcd"
    fi
  fi
}

# A reboot owed in this boot is still owed; one owed in an earlier boot has happened.
reboot_required=false
if [ -f "$REBOOT_PENDING" ]; then
  if [ "$(head -n1 "$REBOOT_PENDING")" = "$(cat "$BOOT_ID_FILE")" ]; then
    reboot_required=true
  elif [ "$ACTION" = "apply" ]; then
    rm -f "$REBOOT_PENDING"
    changed "the node has rebooted since NetworkManager's drop-in changed"
  fi
fi
rke2_present=false
if rke2_installed; then rke2_present=true; fi

# 0. The host is the one the stack describes, and can run RKE2.
host_findings=()
addresses=" $(ip -o addr show 2>/dev/null | awk '{ sub(/\/.*/, "", $4); printf "%s ", $4 }')"
if [ -n "${NODE_IP:-}" ] && [[ "$addresses" != *" $NODE_IP "* ]]; then
  host_findings+=("the stack's ip $NODE_IP is not an address of this host (it has:${addresses% })")
fi
if ! grep -qE '^[[:space:]]*nameserver[[:space:]]+[^[:space:]]' /etc/resolv.conf 2>/dev/null; then
  host_findings+=("/etc/resolv.conf names no nameserver, so the cluster DNS would have no upstream")
fi
memory_mib=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) / 1024))
if [ "$memory_mib" -lt "${MIN_MEMORY_MIB:-0}" ]; then
  host_findings+=("it has ${memory_mib} MiB of memory, less than the 4 GB RKE2 needs (MemTotal ${MIN_MEMORY_MIB} MiB or more)")
fi
cpus="$(nproc)"
if [ "$cpus" -lt "${MIN_CPUS:-0}" ]; then
  host_findings+=("it has ${cpus} CPU(s), fewer than the ${MIN_CPUS} RKE2 needs")
fi
nm_config_facts
if [ -n "$nm_overridden_by" ]; then
  host_findings+=("$nm_overridden_by sets unmanaged-devices= after $NM_CONF, so the devices the stack lists would stay managed; change its line to unmanaged-devices+= (or list the devices there)")
fi
if [ "$ACTION" = "apply" ] && [ "${#host_findings[@]}" -gt 0 ]; then
  echo "error: nothing was changed: $(IFS=';'; echo "${host_findings[*]}")" >&2
  exit 1
fi

if [ "$ACTION" = "apply" ]; then
  # 1. iptables services: disabled, never stopped.
  disable_unit iptables.service
  disable_unit ip6tables.service
  # 2. firewalld: disabled, and stopped when that leaves other rules alone; or kept.
  if [ "${KEEP_FIREWALLD:-false}" = "true" ]; then
    ok "firewalld.service kept as found ($(unit_state firewalld.service), $(unit_active firewalld.service && echo running || echo stopped)): nodePreparation.firewalld is keep"
  else
    prepare_firewalld
  fi
  # 3. nm-cloud-setup rewrites routing on some images; RKE2 requires it off. Timer first, so it
  #    cannot start the service again.
  stop_and_disable nm-cloud-setup.timer
  stop_and_disable nm-cloud-setup.service
  # 4. The REJECT rules iptables.service loaded at boot, and nothing else. A firewalld kept
  #    running may have written the same rule itself; its rules are its operators' then, and the
  #    ports preflight says what they block.
  if [ "${KEEP_FIREWALLD:-false}" = "true" ] && unit_active firewalld.service; then
    ok "left the REJECT rules of INPUT and FORWARD as found: firewalld runs and is kept (nodePreparation.firewalld: keep), so they may be its own"
  else
    remove_reject iptables INPUT "${REJECT_V4[@]}"
    remove_reject iptables FORWARD "${REJECT_V4[@]}"
    remove_reject ip6tables INPUT "${REJECT_V6[@]}"
    remove_reject ip6tables FORWARD "${REJECT_V6[@]}"
  fi
  # 5. NetworkManager leaves kube-ipvs0 and the CNI devices alone.
  write_nm_config
  # 6. kube-ipvs0 up only on request.
  if [ "${BRING_UP_KUBE_IPVS:-false}" = "true" ] && ip link show kube-ipvs0 >/dev/null 2>&1; then
    if ip link show kube-ipvs0 | grep -q ',UP'; then ok "kube-ipvs0 is up"; else ip link set kube-ipvs0 up && changed "set kube-ipvs0 up"; fi
  fi
  # 7. What RKE2's profile checks at start.
  apply_profile
fi

nm_current=""
[ -f "$NM_CONF" ] && nm_current="$(cat "$NM_CONF")"
nm_config_facts
kube_ipvs0=absent
if ip link show kube-ipvs0 >/dev/null 2>&1; then
  if ip link show kube-ipvs0 | grep -q ',UP'; then kube_ipvs0=up; else kube_ipvs0=down; fi
fi
echo "iptables_service=$(unit_state iptables.service)"
echo "ip6tables_service=$(unit_state ip6tables.service)"
echo "firewalld_service=$(unit_state firewalld.service)"
echo "firewalld_active=$(unit_active firewalld.service && echo true || echo false)"
echo "nm_cloud_setup_service=$(unit_state nm-cloud-setup.service)"
echo "nm_cloud_setup_timer=$(unit_state nm-cloud-setup.timer)"
echo "nm_cloud_setup_active=$({ unit_active nm-cloud-setup.service || unit_active nm-cloud-setup.timer; } && echo true || echo false)"
echo "reject_rules=$(($(reject_count iptables INPUT "${REJECT_V4[@]}") + $(reject_count iptables FORWARD "${REJECT_V4[@]}") + $(reject_count ip6tables INPUT "${REJECT_V6[@]}") + $(reject_count ip6tables FORWARD "${REJECT_V6[@]}")))"
echo "nm_config_b64=$(printf '%s' "$nm_current" | base64 -w0)"
echo "nm_replaces=$nm_replaces"
echo "kube_ipvs0=$kube_ipvs0"
echo "rke2_installed=$rke2_present"
echo "reboot_required=$reboot_required"
echo "host_findings=$(IFS=';'; echo "${host_findings[*]}")"
[ -z "${PROFILE:-}" ] || echo "profile_findings=$(profile_findings)"

