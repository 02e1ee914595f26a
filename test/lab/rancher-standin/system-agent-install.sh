#!/bin/sh
# STAND-IN for Rancher's system-agent-install.sh on lab nodes — not Rancher's installer. The real
# one downloads rancher-system-agent from GitHub, which the lab cannot reach. This one keeps the
# behaviour registration depends on: arguments as Rancher's node command passes them, root only,
# the CA check (Rancher's certificate verified by the system store, else the CA from /cacerts
# must match --ca-checksum), then rancher-system-agent installed as a unit of the systemctl test
# double, enabled and (re)started with the server, token, roles and CA it needs.
set -eu

fatal() {
  echo "[FATAL] $*" >&2
  exit 1
}

SERVER=""
TOKEN=""
CA_CHECKSUM=""
ROLES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --server) SERVER="$2"; shift 2 ;;
    --token) TOKEN="$2"; shift 2 ;;
    --ca-checksum) CA_CHECKSUM="$2"; shift 2 ;;
    --label | --taint | --address | --internal-address | --node-name) shift 2 ;;
    --etcd) ROLES="$ROLES etcd"; shift ;;
    --controlplane) ROLES="$ROLES controlplane"; shift ;;
    --worker) ROLES="$ROLES worker"; shift ;;
    *) fatal "Unknown argument passed in ($1)" ;;
  esac
done
[ "$(id -u)" = 0 ] || fatal "This script must be run as root."
[ -n "$SERVER" ] || fatal "\$CATTLE_SERVER was not set"
[ -n "$TOKEN" ] || fatal "--token was not set"

CONFIG_DIR=/etc/rancher/agent
VAR_DIR=/var/lib/rancher/agent
mkdir -p "$CONFIG_DIR" "$VAR_DIR"
chmod 700 "$CONFIG_DIR" "$VAR_DIR"

CACERT=""
if curl -fsS --max-time 10 "$SERVER/healthz" -o /dev/null 2>/dev/null; then
  echo "[INFO] Determined CA is not necessary to connect to Rancher"
elif [ -n "$CA_CHECKSUM" ]; then
  CACERT="$CONFIG_DIR/rancher-ca.pem"
  curl -fsS --max-time 10 --insecure "$SERVER/cacerts" -o "$CACERT" ||
    fatal "could not download $SERVER/cacerts"
  actual="$(sha256sum "$CACERT" | awk '{print $1}')"
  [ "$actual" = "$CA_CHECKSUM" ] ||
    fatal "Configured cacerts checksum ($actual) does not match given --ca-checksum ($CA_CHECKSUM)"
else
  fatal "Error connecting to Rancher. Perhaps --ca-checksum needs to be set?"
fi

curl_ca() { if [ -n "$CACERT" ]; then echo "--cacert $CACERT"; fi; }
# shellcheck disable=SC2046
curl -fsS --max-time 30 $(curl_ca) "$SERVER/assets/rancher-system-agent" -o "$VAR_DIR/rancher-system-agent" ||
  fatal "could not download rancher-system-agent from $SERVER"
chmod 0755 "$VAR_DIR/rancher-system-agent"

umask 077
cat >"$CONFIG_DIR/config.yaml" <<EOF
server: $SERVER
token: $TOKEN
cacert: $CACERT
roles: $ROLES
EOF

units="${SYSTEMCTL_DOUBLE_DIR:-/var/lib/systemctl-double}/units"
mkdir -p "$units/rancher-system-agent.service"
ln -sf "$VAR_DIR/rancher-system-agent" "$units/rancher-system-agent.service/exec"
systemctl enable rancher-system-agent
systemctl restart rancher-system-agent
echo "[INFO] rancher-system-agent (lab stand-in) installed for roles:$ROLES"
