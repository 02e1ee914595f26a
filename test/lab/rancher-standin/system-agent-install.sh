#!/bin/sh
# STAND-IN for Rancher's system-agent-install.sh on lab nodes — not Rancher's installer. The real
# one (rancher/system-agent@v0.14.0:install.sh, the release rancher/rancher@v2.14.3 ships:
# package/Dockerfile CATTLE_SYSTEM_AGENT_VERSION) downloads rancher-system-agent from GitHub,
# which the lab cannot reach; this one fetches the agent stand-in from the Rancher stand-in and
# keeps, from that install.sh, what registration depends on:
#   - settings from the environment (CATTLE_SERVER, CATTLE_TOKEN, CATTLE_CA_CHECKSUM,
#     CATTLE_ROLE_ETCD / _CONTROLPLANE / _WORKER, CATTLE_ID, CATTLE_NODE_NAME, CATTLE_ADDRESS,
#     CATTLE_AGENT_STRICT_VERIFY, CATTLE_AGENT_CONFIG_DIR / _VAR_DIR / _BIN_PREFIX), overridden by
#     the arguments --server --token --ca-checksum --etcd --controlplane --worker --all-roles
#     --node-name --address --internal-address --label --taint (parse_args); unknown arguments
#     are fatal; root only; "$CATTLE_TOKEN was not set", "$CATTLE_SERVER was not set" and "You must
#     select at least one role." (setup_env);
#   - the CA: when Rancher's certificate verifies against the system store, the checksum is
#     dropped (validate_ca_required); otherwise /cacerts is downloaded without verification, must
#     be an x509 certificate, and its sha256sum must equal the checksum: "Configured cacerts
#     checksum (...) does not match given --ca-checksum (...)" (validate_ca_checksum); /healthz
#     must then answer with that CA (validate_rancher_connection);
#   - config.yaml and a persistent cattle-id (generate_config, generate_cattle_identifier);
#   - the connection info: GET <server>/v3/connect/agent with the token as Bearer and the
#     X-Cattle-* headers, saved with umask 0177 to ${CATTLE_AGENT_VAR_DIR}/rancher2_connection_info.json
#     (retrieve_connection_info). As upstream does, the token is in that curl's arguments
#     (`-H "Authorization: Bearer ${CATTLE_TOKEN}"`) for the duration of that one request;
#   - the unit enabled and restarted (here a unit of the lab's systemctl test double). It does
#     not wait for a plan: install.sh returns once the agent runs.
# Like the real install.sh it retries /cacerts, /healthz and /v3/connect/agent up to 4500 times,
# 5 s apart, printing its lines ("<code> received while ..."), and validates the connection info
# with `rancher-system-agent validate-connection` before keeping it.
set -eu

# The log prefixes of install.sh: `echo "[INFO] " "$@"` prints two spaces.
info() { echo "[INFO]  $*"; }
error() { echo "[ERROR]  $*" >&2; }
fatal() {
  echo "[FATAL]  $*" >&2
  exit 1
}
# install.sh's retry bound and pace: RETRYCOUNT=4500 loops of `sleep 5`.
RETRYCOUNT=4500

CATTLE_SERVER="${CATTLE_SERVER:-}"
CATTLE_TOKEN="${CATTLE_TOKEN:-}"
CATTLE_CA_CHECKSUM="${CATTLE_CA_CHECKSUM:-}"
CATTLE_ROLE_ETCD="${CATTLE_ROLE_ETCD:-false}"
CATTLE_ROLE_CONTROLPLANE="${CATTLE_ROLE_CONTROLPLANE:-false}"
CATTLE_ROLE_WORKER="${CATTLE_ROLE_WORKER:-false}"
CATTLE_ID="${CATTLE_ID:-}"
CATTLE_NODE_NAME="${CATTLE_NODE_NAME:-}"
CATTLE_ADDRESS="${CATTLE_ADDRESS:-}"
CATTLE_INTERNAL_ADDRESS="${CATTLE_INTERNAL_ADDRESS:-}"
CATTLE_LABELS="${CATTLE_LABELS:-}"
CATTLE_TAINTS="${CATTLE_TAINTS:-}"
CATTLE_AGENT_STRICT_VERIFY="${CATTLE_AGENT_STRICT_VERIFY:-${STRICT_VERIFY:-false}}"
CATTLE_AGENT_CONFIG_DIR="${CATTLE_AGENT_CONFIG_DIR:-/etc/rancher/agent}"
CATTLE_AGENT_VAR_DIR="${CATTLE_AGENT_VAR_DIR:-/var/lib/rancher/agent}"
CATTLE_AGENT_BIN_PREFIX="${CATTLE_AGENT_BIN_PREFIX:-/usr/local}"
CATTLE_AGENT_BINARY_BASE_URL="${CATTLE_AGENT_BINARY_BASE_URL:-}"

while [ $# -gt 0 ]; do
  case "$1" in
    -a | --all-roles) CATTLE_ROLE_ETCD=true; CATTLE_ROLE_CONTROLPLANE=true; CATTLE_ROLE_WORKER=true; shift ;;
    -p | --controlplane) CATTLE_ROLE_CONTROLPLANE=true; shift ;;
    -e | --etcd) CATTLE_ROLE_ETCD=true; shift ;;
    -w | --worker) CATTLE_ROLE_WORKER=true; shift ;;
    -n | --node-name) CATTLE_NODE_NAME="$2"; shift 2 ;;
    --address) CATTLE_ADDRESS="$2"; shift 2 ;;
    -i | --internal-address) CATTLE_INTERNAL_ADDRESS="$2"; shift 2 ;;
    -l | --label) CATTLE_LABELS="${CATTLE_LABELS:+$CATTLE_LABELS,}$2"; shift 2 ;;
    --taint | --taints) CATTLE_TAINTS="${CATTLE_TAINTS:+$CATTLE_TAINTS,}$2"; shift 2 ;;
    -s | --server) CATTLE_SERVER="$2"; shift 2 ;;
    -t | --token) CATTLE_TOKEN="$2"; shift 2 ;;
    -c | --ca-checksum) CATTLE_CA_CHECKSUM="$2"; shift 2 ;;
    *) fatal "Unknown argument passed in ($1)" ;;
  esac
done

[ "$(id -u)" = 0 ] || fatal "This script must be run as root."
[ -n "$CATTLE_TOKEN" ] || fatal "\$CATTLE_TOKEN was not set."
[ -n "$CATTLE_SERVER" ] || fatal "\$CATTLE_SERVER was not set"
if [ "$CATTLE_ROLE_CONTROLPLANE" = false ] && [ "$CATTLE_ROLE_ETCD" = false ] && [ "$CATTLE_ROLE_WORKER" = false ]; then
  fatal "You must select at least one role."
fi
mkdir -p "$CATTLE_AGENT_CONFIG_DIR" "$CATTLE_AGENT_VAR_DIR/interlock" "$CATTLE_AGENT_BIN_PREFIX/bin"
chmod 700 "$CATTLE_AGENT_CONFIG_DIR" "$CATTLE_AGENT_VAR_DIR"

if [ -z "$CATTLE_CA_CHECKSUM" ] && [ "$(echo "$CATTLE_AGENT_STRICT_VERIFY" | tr '[:upper:]' '[:lower:]')" = true ]; then
  fatal "Aborting system-agent installation due to requested strict CA verification with no CA checksum provided"
fi

# validate_ca_required: a certificate the system store verifies needs no CA checksum; curl's
# exit 60 (no verification) means the CA is needed; a connection error is retried without count.
if [ -n "$CATTLE_CA_CHECKSUM" ] && [ "$(echo "$CATTLE_AGENT_STRICT_VERIFY" | tr '[:upper:]' '[:lower:]')" != true ]; then
  while :; do
    rc=0
    curl -sS --connect-timeout 60 --max-time 60 -fL "$CATTLE_SERVER/healthz" -o /dev/null 2>/dev/null || rc=$?
    case "$rc" in
      0) info "Determined CA is not necessary to connect to Rancher"; CATTLE_CA_CHECKSUM=""; break ;;
      60) info "Determined CA is necessary to connect to Rancher"; break ;;
      *) error "Error while connecting to Rancher to verify CA necessity. Sleeping for 5 seconds and trying again."; sleep 5 ;;
    esac
  done
fi

# validate_ca_checksum
CURL_CAFLAG=""
if [ -n "$CATTLE_CA_CHECKSUM" ]; then
  CACERT="$(mktemp)"
  i=1
  while [ "$i" -ne "$RETRYCOUNT" ]; do
    # curl's own error line goes to the output, as upstream's does (no redirect there).
    code="$(curl -sS --connect-timeout 60 --max-time 60 --write-out "%{http_code}\n" --insecure -fL "$CATTLE_SERVER/cacerts" -o "$CACERT" || true)"
    [ "$code" = 200 ] && break
    i=$((i + 1))
    error "${code:-000} received while downloading the CA certificate. Sleeping for 5 seconds and trying again"
    sleep 5
  done
  info "Successfully downloaded CA certificate"
  [ -s "$CACERT" ] || fatal "The environment variable CATTLE_CA_CHECKSUM is set but there is no CA certificate configured at ${CATTLE_SERVER}/cacerts"
  if ! err="$(openssl x509 -in "$CACERT" -noout 2>&1)"; then
    fatal "Value from ${CATTLE_SERVER}/cacerts does not look like an x509 certificate (${err})"
  fi
  CATTLE_SERVER_CHECKSUM="$(sha256sum "$CACERT" | awk '{print $1}')"
  if [ "$CATTLE_SERVER_CHECKSUM" != "$CATTLE_CA_CHECKSUM" ]; then
    rm -f "$CACERT"
    error "Configured cacerts checksum ($CATTLE_SERVER_CHECKSUM) does not match given --ca-checksum ($CATTLE_CA_CHECKSUM)"
    error "Please check if the correct certificate is configured at${CATTLE_SERVER}/cacerts"
    exit 1
  fi
  CURL_CAFLAG="--cacert $CACERT"
fi

# validate_rancher_connection
i=1
while :; do
  # shellcheck disable=SC2086 # CURL_CAFLAG is empty or two words, as upstream passes it
  code="$(curl -sS --connect-timeout 60 --max-time 60 --write-out "%{http_code}\n" $CURL_CAFLAG -fL "$CATTLE_SERVER/healthz" -o /dev/null || true)"
  [ "$code" = 200 ] && break
  i=$((i + 1))
  [ "$i" -ne "$RETRYCOUNT" ] || fatal "Error connecting to Rancher. Perhaps --ca-checksum needs to be set?"
  error "${code:-000} received while testing Rancher connection. Sleeping for 5 seconds and trying again"
  sleep 5
done
info "Successfully tested Rancher connection"

if systemctl is-active --quiet rancher-system-agent.service; then
  systemctl stop rancher-system-agent
fi

# download_rancher_files: <CATTLE_AGENT_BINARY_BASE_URL>/rancher-system-agent-<arch> (Rancher's
# installer sets the base URL to <server>/assets); GitHub is not reachable from the lab.
# shellcheck disable=SC2086
curl -sS --connect-timeout 10 --max-time 30 $CURL_CAFLAG -fL "${CATTLE_AGENT_BINARY_BASE_URL:-$CATTLE_SERVER/assets}/rancher-system-agent-amd64" \
  -o "$CATTLE_AGENT_BIN_PREFIX/bin/rancher-system-agent" || fatal "could not download rancher-system-agent"
chmod 0755 "$CATTLE_AGENT_BIN_PREFIX/bin/rancher-system-agent"
if [ -n "$CURL_CAFLAG" ]; then
  # The agent stand-in verifies Rancher with the CA the connection info carries; keep it for
  # the agent's own download of the RKE2 installer too.
  cp "$CACERT" "$CATTLE_AGENT_VAR_DIR/rancher-ca.pem"
fi

# generate_config
UMASK="$(umask)"
umask 0177
cat >"$CATTLE_AGENT_CONFIG_DIR/config.yaml" <<EOF
workDirectory: $CATTLE_AGENT_VAR_DIR/work
appliedPlanDirectory: $CATTLE_AGENT_VAR_DIR/applied
remoteEnabled: true
localEnabled: false
localPlanDirectory: $CATTLE_AGENT_VAR_DIR/plans
interlockDirectory: $CATTLE_AGENT_VAR_DIR/interlock
preserveWorkDirectory: false
connectionInfoFile: $CATTLE_AGENT_VAR_DIR/rancher2_connection_info.json
EOF
umask "$UMASK"

# generate_cattle_identifier
if [ -z "$CATTLE_ID" ]; then
  if [ -f "$CATTLE_AGENT_CONFIG_DIR/cattle-id" ]; then
    CATTLE_ID="$(cat "$CATTLE_AGENT_CONFIG_DIR/cattle-id")"
    [ -n "$CATTLE_ID" ] || fatal "Cattle ID was empty, aborting installation"
  else
    CATTLE_ID="$(dd if=/dev/urandom count=1 bs=512 2>/dev/null | sha256sum | awk '{print $1}' | head -c 63)"
    (umask 0177 && echo "$CATTLE_ID" >"$CATTLE_AGENT_CONFIG_DIR/cattle-id")
  fi
fi

# retrieve_connection_info
TEMP_CONNECTION_INFO="$CATTLE_AGENT_VAR_DIR/rancher2_connection_info.json.tmp"
ok=false
i=1
while [ "$i" -ne "$RETRYCOUNT" ]; do
  # shellcheck disable=SC2086
  RESPONSE="$(
    umask 0177
    curl -sS --connect-timeout 10 --max-time 60 --write-out "%{http_code}\n" $CURL_CAFLAG \
      -H "Authorization: Bearer ${CATTLE_TOKEN}" -H "X-Cattle-Id: ${CATTLE_ID}" \
      -H "X-Cattle-Role-Etcd: ${CATTLE_ROLE_ETCD}" -H "X-Cattle-Role-Control-Plane: ${CATTLE_ROLE_CONTROLPLANE}" \
      -H "X-Cattle-Role-Worker: ${CATTLE_ROLE_WORKER}" -H "X-Cattle-Node-Name: ${CATTLE_NODE_NAME}" \
      -H "X-Cattle-Address: ${CATTLE_ADDRESS}" -H "X-Cattle-Internal-Address: ${CATTLE_INTERNAL_ADDRESS}" \
      -H "X-Cattle-Labels: ${CATTLE_LABELS}" -H "X-Cattle-Taints: ${CATTLE_TAINTS}" \
      "${CATTLE_SERVER}/v3/connect/agent" -o "$TEMP_CONNECTION_INFO"
  )" || true
  i=$((i + 1))
  if [ "$RESPONSE" = 200 ]; then
    if ! "$CATTLE_AGENT_BIN_PREFIX/bin/rancher-system-agent" validate-connection "$TEMP_CONNECTION_INFO" 2>&1; then
      error "Downloaded connection info failed validation. Sleeping for 5 seconds and trying again"
      rm -f "$TEMP_CONNECTION_INFO"
      sleep 5
      continue
    fi
    mv "$TEMP_CONNECTION_INFO" "$CATTLE_AGENT_VAR_DIR/rancher2_connection_info.json"
    info "Successfully downloaded and validated Rancher connection information"
    ok=true
    break
  fi
  rm -f "$TEMP_CONNECTION_INFO"
  error "${RESPONSE:-000} received while downloading Rancher connection information. Sleeping for 5 seconds and trying again"
  sleep 5
done
[ "$ok" = true ] || fatal "Aborting system-agent installation due to failure to retrieve Rancher connection information"

units="${SYSTEMCTL_DOUBLE_DIR:-/var/lib/systemctl-double}/units"
mkdir -p "$units/rancher-system-agent.service"
ln -sf "$CATTLE_AGENT_BIN_PREFIX/bin/rancher-system-agent" "$units/rancher-system-agent.service/exec"
info "Enabling rancher-system-agent.service"
systemctl enable rancher-system-agent
info "Starting/restarting rancher-system-agent.service"
systemctl restart rancher-system-agent
rm -f "$CATTLE_AGENT_VAR_DIR/interlock/restart-pending"
