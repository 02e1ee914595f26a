#!/bin/bash
# Reports what RKE2 on one node is, as found: for refresh, and as the facts every start
# decision is made from. Changes nothing. Parameters (shell assignments before this script):
#   ROLE            server | agent
#   MEMBERS_SCRIPT  the etcd-members.sh text (servers)
#   ARTIFACTS_DIR   (optional) where the node step stages RKE2's release artifacts
# Prints key=value lines on stdout (read by the operator over SSH, never logged: config_b64
# holds the join token):
#   version=<release of the installed rke2 binary, or none>
#   unit=yes|no                 whether rke2-<role>.service is installed
#   active=yes|no               whether it runs
#   config_sha256=<hex|none>    of /etc/rancher/rke2/config.yaml
#   config_b64=<base64>         the file itself (absent when there is none)
#   config_dropin=<b64 path> <b64 text>   each *.yaml|*.yml of config.yaml.d, in RKE2's order
#   config_dropin_error=<b64 path>        one that cannot be read
#   env_file=<b64 path> <b64 text>        each environment file of the unit that exists, its
#                                         RKE2_* lines only, in the unit's order
#   token_file=<b64 path> <sha256> <password sha256>   each file a token-file setting names
#   token_file_error=<b64 path> missing|unreadable
#   data_dir=<path>             the last data-dir the files set, else RKE2_DATA_DIR, else RKE2's
#                               default (the operator merges the files and compares)
#   registries_path=<path>      the last private-registry the files set, else RKE2's default (the
#                               flag has no environment variable; compared the same way)
#   registries_sha256=<hex|none>  of that file, and the file itself (never logged: it may hold
#   registries_b64=<base64>     registry credentials), or
#   registries_error=unreadable
#   other_unit=yes|no           whether the other role's unit (rke2-agent for a server) is
#   other_active=yes|no         installed, and whether it runs
#   host_name=<name>            uname -n, which RKE2 names the node after without node-name
#   addresses=<ip ...>          every address of the host
#   restart_pending=<why|none>  a change rke2-start.sh made that its restart has not yet applied
#   etcd_data=yes|no            (servers) whether <data-dir>/server/db/etcd/member exists
#   etcd_name=<base64>          (servers) <data-dir>/server/db/etcd/name, or
#   etcd_name_error=<reason>    missing | unreadable
#   server_token_sha256=<hex>   (servers) of <data-dir>/server/token, and of its password part:
#   server_token_password_sha256=<hex>   k3s-io/k3s pkg/clientaccess/token.go, K10<hash>::<user>:<password>
#   staged_artifact=<sha256> <name>   each file staged in ARTIFACTS_DIR (none once installed)
#   members=<base64 JSON>       (servers with etcd running) etcd's member list read here, or
#   members_error=<reason>      why it could not be read
set -uo pipefail

UNIT="rke2-$ROLE.service"
CONFIG=/etc/rancher/rke2/config.yaml
PENDING="/var/lib/rke2-remediation/$UNIT.restart-pending"

# rancher/rke2@v1.35.6+rke2r1 install.sh: the tarball installs to /usr/local (or /opt/rke2 when
# /usr/local is read-only); the RPMs to /usr/bin.
rke2_binary() {
  local candidate
  for candidate in "$(command -v rke2 2>/dev/null)" /usr/local/bin/rke2 /opt/rke2/bin/rke2 /usr/bin/rke2; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# rancher/rke2@v1.35.6+rke2r1 pkg/cli/cmds/root.go (VersionPrinter): "rke2 version <version> (<commit>)".
version=none
if binary="$(rke2_binary)"; then
  found="$("$binary" --version 2>/dev/null | sed -n 's/^rke2 version \([^ ]*\).*/\1/p' | head -n1)"
  version="${found:-unknown}"
fi
echo "version=$version"

if systemctl list-unit-files "$UNIT" 2>/dev/null | grep -q "^$UNIT"; then echo "unit=yes"; else echo "unit=no"; fi
if systemctl is-active --quiet "$UNIT"; then echo "active=yes"; else echo "active=no"; fi

# RKE2 reads config.yaml, then config.yaml.d/*.yaml and *.yml (any case) in byte-wise name
# order (k3s-io/k3s@7464a828:pkg/configfilearg/parser.go, dotDFiles and readConfigFile), and the
# RKE2_* variables of its unit's environment files (rancher/rke2@v1.35.7+rke2r1:
# bundle/lib/systemd/system/rke2-server.service, EnvironmentFile=). The files are reported
# whole; the operator merges them.
FILES=()
[ -f "$CONFIG" ] && FILES+=("$CONFIG")
if [ -d "$CONFIG.d" ]; then
  while IFS= read -r -d '' dropin; do
    case "${dropin,,}" in
      *.yaml | *.yml) ;;
      *) continue ;;
    esac
    [ -f "$dropin" ] || continue
    if [ -r "$dropin" ] && text="$(base64 -w0 <"$dropin")"; then
      echo "config_dropin=$(printf '%s' "$dropin" | base64 -w0) $text"
      FILES+=("$dropin")
    else
      echo "config_dropin_error=$(printf '%s' "$dropin" | base64 -w0)"
    fi
  done < <(find "$CONFIG.d" -mindepth 1 -maxdepth 1 -print0 | LC_ALL=C sort -z)
fi
ENV_FILES=()
for env_file in "/etc/default/rke2-$ROLE" "/etc/sysconfig/rke2-$ROLE" \
  "/usr/local/lib/systemd/system/rke2-$ROLE.env" "/usr/lib/systemd/system/rke2-$ROLE.env"; do
  [ -f "$env_file" ] || continue
  ENV_FILES+=("$env_file")
  echo "env_file=$(printf '%s' "$env_file" | base64 -w0) $(grep -E '^[[:space:]]*(export[[:space:]]+)?RKE2_' "$env_file" | base64 -w0)"
done

# A top-level scalar of the files, the last one that sets it, without quotes or a trailing comment.
file_setting() {
  local file value found=""
  for file in "${FILES[@]}"; do
    value="$(sed -n "s/^$1+\{0,1\}:[[:space:]]*//p" "$file" | tail -n1 | sed 's/[[:space:]]#.*$//; s/[[:space:]]*$//' | tr -d "\"'")"
    [ -n "$value" ] && found="$value"
  done
  printf '%s' "$found"
}
env_setting() {
  local file value found=""
  for file in "${ENV_FILES[@]}"; do
    value="$(sed -n "s/^[[:space:]]*\(export[[:space:]]\{1,\}\)\{0,1\}$1=//p" "$file" | tail -n1 | tr -d "\"'")"
    [ -n "$value" ] && found="$value"
  done
  printf '%s' "$found"
}

if [ -f "$CONFIG" ]; then
  echo "config_sha256=$(sha256sum "$CONFIG" | cut -d' ' -f1)"
  echo "config_b64=$(base64 -w0 <"$CONFIG")"
else
  echo "config_sha256=none"
fi
DATA_DIR="$(file_setting data-dir)"
DATA_DIR="${DATA_DIR:-$(env_setting RKE2_DATA_DIR)}"
DATA_DIR="${DATA_DIR:-/var/lib/rancher/rke2}"
[ "$DATA_DIR" = / ] || DATA_DIR="${DATA_DIR%/}"
echo "data_dir=$DATA_DIR"

# k3s-io/k3s@eaaf1f84:pkg/cli/cmds/agent.go PrivateRegistryFlag: /etc/rancher/rke2/registries.yaml.
REGISTRIES="$(file_setting private-registry)"
REGISTRIES="${REGISTRIES:-/etc/rancher/rke2/registries.yaml}"
echo "registries_path=$REGISTRIES"
if [ ! -e "$REGISTRIES" ]; then
  echo "registries_sha256=none"
elif [ -f "$REGISTRIES" ] && [ -r "$REGISTRIES" ] && text="$(base64 -w0 <"$REGISTRIES")"; then
  echo "registries_sha256=$(sha256sum "$REGISTRIES" | cut -d' ' -f1)"
  echo "registries_b64=$text"
  unset text
else
  echo "registries_error=unreadable"
fi

# Each file a token-file setting names (k3s-io/k3s@7464a828:pkg/cli/server/server.go: token-file
# replaces token; pkg/util/file.go ReadFile trims it).
token_paths="$(
  for file in "${FILES[@]}"; do sed -n 's/^token-file:[[:space:]]*//p' "$file"; done
  for file in "${ENV_FILES[@]}"; do sed -n 's/^[[:space:]]*\(export[[:space:]]\{1,\}\)\{0,1\}RKE2_TOKEN_FILE=//p' "$file"; done
)"
while IFS= read -r path; do
  path="$(sed 's/[[:space:]]#.*$//; s/[[:space:]]*$//' <<<"$path" | tr -d "\"'")"
  [ -n "$path" ] || continue
  encoded="$(printf '%s' "$path" | base64 -w0)"
  if [ ! -e "$path" ]; then
    echo "token_file_error=$encoded missing"
  elif [ ! -r "$path" ] || ! token="$(tr -d '[:space:]' <"$path")"; then
    echo "token_file_error=$encoded unreadable"
  else
    echo "token_file=$encoded $(printf '%s' "$token" | sha256sum | cut -d' ' -f1) $(printf '%s' "${token#K10*::*:}" | sha256sum | cut -d' ' -f1)"
    unset token
  fi
done <<<"$token_paths"

OTHER="rke2-$([ "$ROLE" = server ] && echo agent || echo server).service"
if systemctl list-unit-files "$OTHER" 2>/dev/null | grep -q "^$OTHER"; then echo "other_unit=yes"; else echo "other_unit=no"; fi
if systemctl is-active --quiet "$OTHER"; then echo "other_active=yes"; else echo "other_active=no"; fi
# Release artifacts a step staged and has not installed yet (it removes them once it has).
if [ -n "${ARTIFACTS_DIR:-}" ] && [ -d "$ARTIFACTS_DIR" ]; then
  for staged in "$ARTIFACTS_DIR"/*; do
    if [ -f "$staged" ]; then echo "staged_artifact=$(sha256sum "$staged" | cut -d' ' -f1) ${staged##*/}"; fi
  done
fi
echo "host_name=$(uname -n)"
echo "addresses=$(ip -o addr show 2>/dev/null | awk '{ sub(/\/.*/, "", $4); printf "%s ", $4 }')"
if [ -f "$PENDING" ]; then echo "restart_pending=$(head -c 300 "$PENDING" | tr '\n' ' ')"; else echo "restart_pending=none"; fi

# Servers, and agents too: a host declared an agent that holds etcd data was a server.
if [ -d "$DATA_DIR/server/db/etcd/member" ]; then echo "etcd_data=yes"; else echo "etcd_data=no"; fi
if [ "$ROLE" = "server" ]; then
  name_file="$DATA_DIR/server/db/etcd/name"
  if [ -f "$name_file" ] && [ -r "$name_file" ]; then
    echo "etcd_name=$(base64 -w0 <"$name_file")"
  elif [ -e "$name_file" ]; then
    echo "etcd_name_error=unreadable"
  else
    echo "etcd_name_error=missing"
  fi
  if [ -f "$DATA_DIR/server/token" ]; then
    token="$(tr -d '[:space:]' <"$DATA_DIR/server/token")"
    echo "server_token_sha256=$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)"
    echo "server_token_password_sha256=$(printf '%s' "${token#*::*:}" | sha256sum | cut -d' ' -f1)"
    unset token
  fi
  # The list is stdout only: etcdctl logs its retries as JSON lines on stderr.
  errors="$(mktemp)"
  if out="$(DATA_DIR="$DATA_DIR" bash -c "$MEMBERS_SCRIPT" 2>"$errors")"; then
    echo "members=$(printf '%s' "$out" | base64 -w0)"
  else
    echo "members_error=$(tail -n1 "$errors" | tr -d '\r' | head -c 300)"
  fi
  rm -f "$errors"
fi
