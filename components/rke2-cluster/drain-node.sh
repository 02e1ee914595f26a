#!/bin/bash
# Cordons and drains a node before RKE2 restarts on it, or makes it schedulable again once it is
# back; run on a server of the cluster, with the admin kubeconfig RKE2 writes there and the
# kubectl it unpacks under its data-dir (as join-gate.sh does). Parameters:
#   ACTION            drain | uncordon | release (a node that did not restart: uncordon it only
#                     when a run before cordoned it for a restart and could not make it
#                     schedulable again; an API that does not answer is no error there)
#   NODE_NAME         the Node's name in the cluster (the name RKE2 registered it under)
#   TIMEOUT_SECONDS   drain: how long the evictions may take (rke2.drain.timeoutSeconds);
#                     uncordon, release: how long to wait for the API and for Ready
#   POD_SELECTOR      drain: the pods to evict (kubectl drain --pod-selector); empty: all
#   DATA_DIR          RKE2's data-dir on this server
# kubectl drain (k8s.io/kubectl@v0.35.4 pkg/drain/drain.go) cordons first, evicts through the
# Eviction API (a PodDisruptionBudget that would be violated refuses it; kubectl retries every
# 5 s until --timeout and then names each pod left: `error when evicting pods/"<name>" -n
# "<namespace>": global timeout reached`), skips DaemonSet pods with --ignore-daemonsets, and
# refuses Pods that declare no controller (filters.go unmanagedFatal): they would be gone for
# good, so they are never forced here. A drain that does not finish leaves the node cordoned.
# A node this script cordons carries the annotation $MARK until uncordon makes it schedulable
# again; a node someone else cordoned is drained but left cordoned.
# Prints "changed: ..." and "ok: ..." on stderr; fails with "error: ..." naming the pods.
set -uo pipefail

export KUBECONFIG="${KUBECONFIG:-/etc/rancher/rke2/rke2.yaml}"
kubectl="${DATA_DIR:-/var/lib/rancher/rke2}/bin/kubectl"
command -v "$kubectl" >/dev/null || kubectl="$(command -v kubectl || echo kubectl)"
kube() { "$kubectl" --request-timeout=10s "$@"; }
MARK=rke2-remediation/cordoned-for-restart

changed() { echo "changed: $*" >&2; }
ok() { echo "ok: $*" >&2; }
fail() {
  echo "error: $*" >&2
  exit 1
}

# Right after a restart the API may not answer yet (the first server drains itself through its
# own apiserver): uncordon waits for it as it waits for Ready.
deadline=$((SECONDS + TIMEOUT_SECONDS))
until found="$(kube get node "$NODE_NAME" -o name 2>&1)"; do
  if [[ "$found" == *NotFound* ]]; then
    ok "the cluster has no Node $NODE_NAME; nothing to drain or uncordon"
    exit 0
  fi
  if [ "$ACTION" = release ]; then
    ok "cannot reach the Kubernetes API from $(uname -n) to check whether $NODE_NAME is still cordoned for a restart; the next run checks again"
    exit 0
  fi
  if [ "$ACTION" != uncordon ]; then
    fail "cannot reach the Kubernetes API from $(uname -n) to drain $NODE_NAME: ${found##*$'\n'}. Nothing was changed; re-run once it answers, or set rke2.drain.enabled to false to restart without draining."
  fi
  [ "$SECONDS" -lt "$deadline" ] ||
    fail "cannot reach the Kubernetes API from $(uname -n) within ${TIMEOUT_SECONDS} s to uncordon $NODE_NAME: ${found##*$'\n'}. It stays cordoned; the next pulumi up uncordons it once the API answers (or run kubectl uncordon $NODE_NAME)."
  sleep 2
done

case "$ACTION" in
  drain)
    if [ "$(kube get node "$NODE_NAME" -o jsonpath='{.spec.unschedulable}')" != true ]; then
      kube annotate --overwrite node "$NODE_NAME" "$MARK=true" >/dev/null ||
        fail "cannot annotate Node $NODE_NAME before draining it; nothing was changed."
    fi
    selector=()
    [ -z "${POD_SELECTOR:-}" ] || selector=(--pod-selector="$POD_SELECTOR")
    if out="$(kube drain "$NODE_NAME" --ignore-daemonsets --delete-emptydir-data \
      --timeout="${TIMEOUT_SECONDS}s" "${selector[@]}" 2>&1)"; then
      changed "drained $NODE_NAME (cordoned, its pods evicted)"
      exit 0
    fi
    pods="$(grep -oE 'pods/"[^"]+" -n "[^"]+"' <<<"$out" | sed -E 's#pods/"([^"]+)" -n "([^"]+)"#\2/\1#' | sort -u | paste -sd, | sed 's/,/, /g')"
    unmanaged="$(sed -n 's/.*declare no controller (use --force to override): //p' <<<"$out" | head -n1)"
    if [ -n "$pods" ]; then
      why="these pods were not evicted within ${TIMEOUT_SECONDS} s: $pods (a PodDisruptionBudget refuses, or they did not end)"
    elif [ -n "$unmanaged" ]; then
      why="these pods declare no controller, so an eviction would lose them: $unmanaged"
    else
      why="kubectl drain failed: $(grep -E '^error' <<<"$out" | tail -n1)"
    fi
    fail "draining $NODE_NAME did not finish: $why. $NODE_NAME stays cordoned and RKE2 was not restarted there; let them move (or exclude them with rke2.drain.podSelector) and re-run."
    ;;
  uncordon | release)
    if ! kube get node "$NODE_NAME" -o jsonpath='{.metadata.annotations}' | grep -qF "\"$MARK\":\"true\""; then
      [ "$ACTION" = release ] && exit 0
      if [ "$(kube get node "$NODE_NAME" -o jsonpath='{.spec.unschedulable}')" = true ]; then
        ok "$NODE_NAME was cordoned before it was drained here; it stays cordoned"
      else
        ok "$NODE_NAME is schedulable"
      fi
      exit 0
    fi
    until [ "$(kube get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; do
      [ "$SECONDS" -lt "$deadline" ] ||
        fail "$NODE_NAME is not Ready ${TIMEOUT_SECONDS} s after RKE2 restarted there; it stays cordoned. The next pulumi up uncordons it once it is Ready (or run kubectl uncordon $NODE_NAME)."
      sleep 2
    done
    kube uncordon "$NODE_NAME" >/dev/null || fail "kubectl uncordon $NODE_NAME failed; run it by hand."
    kube annotate node "$NODE_NAME" "$MARK-" >/dev/null || true
    changed "uncordoned $NODE_NAME"
    ;;
  *) fail "unknown ACTION '$ACTION'" ;;
esac
