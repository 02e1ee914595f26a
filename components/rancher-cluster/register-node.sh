#!/bin/bash
# Registers this node into a Rancher downstream custom cluster, once, then waits until
# rancher-system-agent runs here. It does not wait for a plan: Rancher plans no node until an
# etcd, a controlplane and a worker node are registered (rancher/rancher@v2.14.3
# pkg/capr/planner/planner.go, clusterIsSane); the cluster-wide waits come after. Safe to
# re-run: a registered node is not registered again (that would re-plan a running node).
#
# Parameters, set before this text by the caller (they arrive on stdin, never on a command line):
#   MODE                 apply | check
#   INSTALLER_URL        <rancher>/system-agent-install.sh, from Rancher's node command
#   CATTLE_SERVER        Rancher's URL
#   CATTLE_TOKEN         the registration token; a secret
#   CATTLE_CA_CHECKSUM   the CA checksum the installer verifies /cacerts against (may be empty)
#   INSECURE             true: fetch the installer with curl --insecure (the stack's opt-in)
#   ROLE_FLAGS           e.g. "--etcd --controlplane"
#   RANCHER_CA           Rancher's CA as the stack pins it (empty: none); it goes into the node's
#                        trust anchors, for the installer's own curl calls (with
#                        --ca-checksum it verifies /cacerts itself). rancher-system-agent does not
#                        read the system store under strict verification (agent-tls-mode
#                        strict, the default of a fresh Rancher v2.14, system-store kept on an
#                        upgrade: rancher/rancher@v2.14.3 pkg/settings/setting.go): it trusts only
#                        the CA in the kubeconfig of its connection info
#                        (rancher/system-agent@v0.14.0 pkg/k8splan/watcher.go, start)
#   RANCHER_HOST         Rancher's hostname, for the anchor's file name
#   TIMEOUT_SECONDS      bound of the wait; POLL_SECONDS its pace
# rancher/system-agent@v0.14.0:install.sh (the installer Rancher v2.14.3 ships) reads
# CATTLE_SERVER, CATTLE_TOKEN and CATTLE_CA_CHECKSUM from the environment as well as from
# --server/--token/--ca-checksum, so the token is exported here and never put in an argument.
# Reports on stderr: "ok: ..." for what was already right, "changed: ..." for what it did,
# "waiting: ..." while it waits, "error: ..." last when it fails. `check` prints on stdout one line:
#   registered=yes|no agent=<unit state> server=<url> namespace=<ns> secretName=<name>
# taken from the agent's connection info; its kubeconfig's credential never leaves the host.
set -euo pipefail

AGENT_CONFIG=/etc/rancher/agent/config.yaml

# rancher/system-agent@v0.14.0:install.sh writes the connection info to
# ${CATTLE_AGENT_VAR_DIR}/rancher2_connection_info.json: /var/lib/rancher/agent, or
# /etc/rancher/agent/var on transactional-update hosts.
connection_info() {
  local f
  for f in /var/lib/rancher/agent/rancher2_connection_info.json /etc/rancher/agent/var/rancher2_connection_info.json; do
    [ -s "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

registered() {
  [ -s "$AGENT_CONFIG" ] && systemctl is-enabled --quiet rancher-system-agent.service && connection_info >/dev/null
}

unit_state() {
  systemctl is-active "$1" 2>/dev/null || true
}

# A JSON string field of the connection info ({kubeConfig, namespace, secretName}: rancher/
# system-agent@v0.14.0 pkg/config/config.go ConnectionInfo). Rancher writes it in
# rancher/rancher@v2.14.3 pkg/capr/configserver/server.go (connectAgent): the kubeconfig's server
# is the server-url setting, secretName the machine's plan secret in `namespace`.
json_field() {
  { grep -o "\"$1\" *: *\"[^\"]*\"" "$2" || true; } | head -n 1 | sed 's/^[^:]*: *"//; s/"$//'
}

# The server of the kubeconfig inside the connection info: a JSON string holding YAML (with \n
# escapes) or JSON (with \" escapes).
kubeconfig_server() {
  {
    grep -o 'server: *[^ ,}]*' "$1" | sed 's/^server: *//; s/\\n.*//; s/\\"//g; s/"//g'
    grep -o '\\"server\\": *\\"[^\\]*' "$1" | sed 's/.*\\"//'
  } | grep -m 1 . || true
}

print_registration() {
  local info server namespace secret
  if ! registered; then
    echo "registered=no agent=$(unit_state rancher-system-agent.service)"
    return 0
  fi
  info="$(connection_info)"
  server="$(kubeconfig_server "$info")"
  namespace="$(json_field namespace "$info")"
  secret="$(json_field secretName "$info")"
  if [ -z "$server" ] || [ -z "$namespace" ] || [ -z "$secret" ]; then
    echo "error: $(hostname): cannot read server, namespace and secretName from $info; look at the file (it holds a credential: do not paste it anywhere)" >&2
    exit 1
  fi
  echo "registered=yes agent=$(unit_state rancher-system-agent.service) server=$server namespace=$namespace secretName=$secret"
}

# The anchor directory and refresh command of the node's trust store (RHEL family first).
trust_store() {
  if command -v update-ca-trust >/dev/null; then
    echo "/etc/pki/ca-trust/source/anchors update-ca-trust extract"
  elif command -v update-ca-certificates >/dev/null; then
    echo "/usr/local/share/ca-certificates update-ca-certificates"
  else
    echo "error: neither update-ca-trust nor update-ca-certificates is installed; install ca-certificates" >&2
    exit 1
  fi
}

trust_rancher_ca() {
  [ -n "$RANCHER_CA" ] || return 0
  local store anchors refresh anchor
  store="$(trust_store)"
  anchors="${store%% *}"
  refresh="${store#* }"
  anchor="$anchors/rancher-${RANCHER_HOST}.crt"
  if [ -f "$anchor" ] && [ "$(cat "$anchor")" = "$(printf '%s' "$RANCHER_CA")" ]; then
    echo "ok: Rancher's CA is in the trust store ($anchor)" >&2
    return 0
  fi
  mkdir -p "$anchors"
  printf '%s\n' "$RANCHER_CA" >"$anchor.tmp"
  mv "$anchor.tmp" "$anchor"
  $refresh >/dev/null 2>&1 || {
    echo "error: $refresh failed after adding $anchor" >&2
    exit 1
  }
  echo "changed: added Rancher's CA to the trust store ($anchor)" >&2
}

if [ "$MODE" = check ]; then
  print_registration
  exit 0
fi

# The installer's lines as they come, the token replaced by bash itself (it never reaches another
# process's command line, readable by every local user). install.sh retries for hours, 5 s apart
# (rancher/system-agent@v0.14.0 install.sh: RETRYCOUNT=4500), every curl with --connect-timeout 60
# --max-time 60 and `-sS`, so curl's own error line ("curl: (N) ...") comes before each
# "<code> received while <what>" line, where <code> is the HTTP status, or 000 when no answer came
# (validate_ca_checksum downloads /cacerts with --insecure; validate_rancher_connection gets
# /healthz trusting the pinned CA; retrieve_connection_info gets /v3/connect/agent;
# validate_ca_required prints "Error while connecting to Rancher to verify CA necessity" with
# curl's line sent to /dev/null; "Downloaded connection info failed validation" when
# rancher-system-agent validate-connection refuses what Rancher sent).
# Each failed try is classified (failure_kind); after a run of tries of one kind the installer
# is stopped and the step fails with that kind's reason, well before its timeout:
#   - HOPELESS_TRIES (3) where another try cannot help: the name does not resolve (curl 6), the
#     connection is refused (7) or its packets dropped (28 "Connection timed out"), TLS fails
#     (35, 51, 58, 60, 77, 83, 90, 91: the certificate is not the pinned CA's or names another
#     host), 404 (the URL leads elsewhere), 403, any other status, a failed validation, and 500
#     for the connection information: Rancher answers a registration token it does not know
#     with 500, "machine not found by request" (rancher/rancher@v2.14.3
#     pkg/capr/configserver/server.go findSA, custom.go findMachineByClusterToken);
#   - TRANSIENT_TRIES (24, about two minutes: install.sh sleeps 5 s after each) where Rancher answers that it is not ready yet:
#     401 for the connection information, which the config server sends while its secret and
#     token informers have not synced (ServeHTTP's HasSynced check) and while the machine is not
#     in its cache, and 502, 503 and 504 from Rancher or the proxy before it;
#   - SLOW_TRIES (5, about five minutes) when Rancher accepts the connection but sends nothing
#     within install.sh's 60 s (curl 28 "Operation timed out").
# A checksum mismatch ends install.sh itself; its line is named.
HOPELESS_TRIES="${HOPELESS_TRIES:-3}"
TRANSIENT_TRIES="${TRANSIENT_TRIES:-24}"
SLOW_TRIES="${SLOW_TRIES:-5}"

# The kind of one failed try: its install.sh line and the curl error line before it (may be empty).
failure_kind() {
  local line="$1" curl_line="$2" code=""
  [[ "$line" =~ ([0-9]{3})\ received\ while ]] && code="${BASH_REMATCH[1]}"
  if [[ "$line" == *"failed validation"* ]]; then
    echo invalid
  elif [ -z "$code" ] || [ "$code" = 000 ]; then
    case "$curl_line" in
      "curl: (6)"*) echo dns ;;
      "curl: (7)"*) echo refused ;;
      "curl: (28)"*"Operation timed out"*) echo slow ;;
      "curl: (28)"*) echo dropped ;;
      "curl: (35)"* | "curl: (51)"* | "curl: (58)"* | "curl: (60)"* | "curl: (77)"* | "curl: (83)"* | "curl: (90)"* | "curl: (91)"*) echo tls ;;
      *) echo unreachable ;;
    esac
  else
    case "$code" in
      401) echo unsynced ;;
      403) echo forbidden ;;
      404) echo notfound ;;
      500) [[ "$line" == *"connection information"* ]] && echo token || echo "status $code" ;;
      502 | 503 | 504) echo unavailable ;;
      *) echo "status $code" ;;
    esac
  fi
}

# How many tries in a row of a kind end the wait.
tries_for() {
  case "$1" in
    unsynced | unavailable) echo "$TRANSIENT_TRIES" ;;
    slow) echo "$SLOW_TRIES" ;;
    *) echo "$HOPELESS_TRIES" ;;
  esac
}

# Why the installer was stopped: KIND, how often it was seen ("3 tries in a row"), what it was
# doing, the code and curl's line.
failure_reason() {
  local kind="$1" tries="$2" what="$3" code="$4" curl_line="$5" at="Rancher at $CATTLE_SERVER"
  local again="then run pulumi up again"
  local seen="${curl_line:+ ($curl_line)}"
  case "$kind" in
    dns) echo "this node cannot resolve the name in $CATTLE_SERVER${seen}, $tries; check the node's resolver and the libvirt DNS records of that name (libvirt.dnsRecords), $again" ;;
    refused) echo "$at refuses connections from this node${seen}, $tries: nothing listens there, or a firewall rejects them; check rancher.url's address and port and the firewall between them, $again" ;;
    dropped) echo "connections from this node to $at time out${seen}, $tries (60 s each): something on the way drops them; check the route and the firewalls between them, $again" ;;
    slow) echo "$at accepts connections but sent no answer within 60 s${seen}, $tries: it is overloaded or stuck; look at Rancher's pods and logs, $again" ;;
    tls) echo "TLS with $at fails${seen}, $tries: its certificate is not signed by the CA the node trusts (rancher.caCertificate, pinned by --ca-checksum) or does not name that host; set rancher.caCertificate to the CA that signed it, or rancher.url to a name the certificate carries, $again" ;;
    unreachable) echo "$at does not answer from this node (no connection, $tries); check its address, DNS and the firewall between them, $again" ;;
    token) echo "$at refuses the registration token ($tries; Rancher answers 500 to a token it does not know); the cluster's registration token may have been rotated or the cluster removed: run pulumi up again to fetch the current command" ;;
    unsynced) echo "$at answered 401 while $what, $tries: Rancher answers so while its caches sync after a start and before the machine is known; if Rancher has been up for minutes, the registration token may be stale: run pulumi up again to fetch the current command" ;;
    unavailable) echo "$at answered $code while $what, $tries: Rancher, or the proxy in front of it, is up but not ready; wait until Rancher answers, $again" ;;
    notfound) echo "$at answered 404 while $what, $tries: the URL does not lead to Rancher (another service or a proxy path at that address); check rancher.url, $again" ;;
    forbidden) echo "$at answered 403 while $what, $tries: something in front of Rancher forbids the request from this node; check the proxy or firewall rules, $again" ;;
    invalid) echo "the connection information $at sent failed rancher-system-agent's validation, $tries; look at Rancher's logs, $again" ;;
    *) echo "$at answered $code while $what, $tries; $again" ;;
  esac
}

run_installer() {
  local fifo installer line why="" last="" mismatch="" download="" curl_line=""
  local kind="" streak="" tries=0 since=0 code what times
  fifo="$(mktemp -u)"
  mkfifo -m 0600 "$fifo"
  # Its own session, so the whole pipeline can be stopped; the script text names no values.
  # The installer Rancher serves assigns CATTLE_SERVER and CATTLE_CA_CHECKSUM itself, from its
  # own settings, before install.sh (rancher/rancher@v2.14.3 pkg/capr/installer/installer.go
  # LinuxInstallScript); install.sh's arguments come last and win, so the server and the checksum
  # the stack pins go there (neither is a secret). The token stays in the environment. The label
  # is the one Rancher's node command carries (rancher/rancher@v2.14.3
  # pkg/controllers/dashboard/clusterregistrationtoken/status.go, provisioningV2NodeCommandFormat:
  # --label 'cattle.io/os=linux'); install.sh sends it to Rancher as X-Cattle-Labels.
  # shellcheck disable=SC2016 # expanded by the inner bash, from the environment
  INSTALLER_URL="$INSTALLER_URL" ROLE_FLAGS="$ROLE_FLAGS" setsid bash -c \
    'set -o pipefail; curl "$@" "$INSTALLER_URL" | sh -s - $ROLE_FLAGS --server "$CATTLE_SERVER" --label "cattle.io/os=linux" ${CATTLE_CA_CHECKSUM:+--ca-checksum "$CATTLE_CA_CHECKSUM"}' \
    installer "$@" >"$fifo" 2>&1 &
  installer=$!
  while IFS= read -r line; do
    [ -n "$CATTLE_TOKEN" ] && line="${line//"$CATTLE_TOKEN"/<registration token>}"
    echo "installer: $line" >&2
    [ -n "${line//[[:space:]]/}" ] && last="$line"
    case "$line" in
      *"curl: ("*)
        curl_line="curl: (${line#*curl: (}"
        download="$curl_line"
        ;;
      *"does not match given --ca-checksum"*)
        mismatch="${line#\[ERROR\]}"
        mismatch="${mismatch#"${mismatch%%[![:space:]]*}"}"
        ;;
      *"received while"* | *"Error while connecting to Rancher"* | *"failed validation"*)
        kind="$(failure_kind "$line" "$curl_line")"
        if [ "$kind" = "$streak" ]; then tries=$((tries + 1)); else streak="$kind" tries=1 since=$SECONDS; fi
        if [ "$tries" -ge "$(tries_for "$kind")" ]; then
          times="$tries tries in a row"
          case "$kind" in unsynced | unavailable | slow) times+=" over $((SECONDS - since)) s" ;; esac
          code=""
          [[ "$line" =~ ([0-9]{3})\ received\ while ]] && code="${BASH_REMATCH[1]}"
          what="${line#*received while }"
          what="${what%%. Sleeping*}"
          why="$(failure_reason "$kind" "$times" "$what" "$code" "$curl_line")"
          break
        fi
        curl_line=""
        ;;
      # A step install.sh got through ends the run of failed tries. Other lines change nothing:
      # curl's advice after a TLS failure ("More details here: ...") comes between its error
      # line and install.sh's, on every try.
      "[INFO]"*) streak="" tries=0 curl_line="" ;;
    esac
  done <"$fifo"
  if [ -n "$why" ]; then
    # The whole session goes (curl, sh and what they started), KILL for what outlives TERM.
    kill -TERM -- "-$installer" 2>/dev/null || true
    wait "$installer" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 -- "-$installer" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$installer" 2>/dev/null || true
    rm -f "$fifo"
    echo "error: the agent installer was stopped: $why" >&2
    exit 1
  fi
  if ! wait "$installer"; then
    rm -f "$fifo"
    if [ -n "$download" ]; then
      # The installer comes from Rancher too: its download fails first, for the same causes.
      code=""
      [[ "$download" =~ returned\ error:\ ([0-9]{3}) ]] && code="${BASH_REMATCH[1]}"
      kind="$(failure_kind "${code:+$code received while downloading the agent installer}" "$download")"
      echo "error: the agent installer could not be downloaded from $INSTALLER_URL: $(failure_reason "$kind" "at its download" "downloading the agent installer" "$code" "$download")" >&2
    elif [ -n "$mismatch" ]; then
      echo "error: the agent installer stopped: the CA Rancher serves at $CATTLE_SERVER/cacerts is not the one rancher.caCertificate pins ($mismatch); set rancher.caCertificate to the CA exactly as Rancher serves it, or Rancher's cacerts setting to the CA that signed its certificate" >&2
    else
      echo "error: the agent installer failed: ${last:-no output}" >&2
    fi
    exit 1
  fi
  rm -f "$fifo"
}

trust_rancher_ca
if registered; then
  echo "ok: rancher-system-agent is registered already; not registering again" >&2
else
  echo "changed: registering with roles ${ROLE_FLAGS}" >&2
  export CATTLE_SERVER CATTLE_TOKEN CATTLE_CA_CHECKSUM
  curl_flags=(-fL)
  [ "$INSECURE" = true ] && curl_flags=(--insecure -fL)
  run_installer "${curl_flags[@]}"
  registered || {
    echo "error: the agent installer finished but rancher-system-agent is not registered ($AGENT_CONFIG, the enabled unit or rancher2_connection_info.json missing)" >&2
    exit 1
  }
fi

started=$SECONDS
last_report=$SECONDS
until [ "$(unit_state rancher-system-agent.service)" = active ]; do
  elapsed=$((SECONDS - started))
  if [ "$elapsed" -ge "$TIMEOUT_SECONDS" ]; then
    echo "error: rancher-system-agent is not active ${TIMEOUT_SECONDS} s after registration; look at 'journalctl -u rancher-system-agent', then run pulumi up again: the node stays registered and the wait resumes" >&2
    exit 1
  fi
  if [ $((SECONDS - last_report)) -ge 10 ] || [ "$elapsed" -eq 0 ]; then
    echo "waiting: rancher-system-agent not active yet (${elapsed} s of ${TIMEOUT_SECONDS} s)" >&2
    last_report=$SECONDS
  fi
  sleep "$POLL_SECONDS"
done
echo "ok: rancher-system-agent is active" >&2
