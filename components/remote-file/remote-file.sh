#!/bin/bash
# Writes or reads one file on a host, over SSH. Parameters arrive as shell assignments first:
#   ACTION   "read", "write" or "delete"
#   FILE     absolute path
#   CONTENT  base64 of the desired content (write)
#   MODE     octal mode, e.g. 0600 (write)
#   RKE2_FACTS_SCRIPT  optional: the rke2-facts.sh text. FILE is then under RKE2's default
#            data-dir (/var/lib/rancher/rke2) and goes under the data-dir RKE2 reads on the host.
# write is atomic (temp file in the same directory, then rename) and touches nothing when the
# file already has the content and mode. Prints "present <mode> <base64>" or "absent".
set -euo pipefail

if [ -n "${RKE2_FACTS_SCRIPT:-}" ]; then
  data_dir="$(ROLE=server MEMBERS_SCRIPT="exit 1" bash -c "$RKE2_FACTS_SCRIPT" 2>/dev/null | sed -n 's/^data_dir=//p')"
  [ -n "$data_dir" ] || { echo "error: cannot read RKE2's data-dir on this host; nothing was written" >&2; exit 3; }
  FILE="$data_dir/${FILE#/var/lib/rancher/rke2/}"
fi

report() {
  if [ -f "$FILE" ]; then
    echo "present $(stat -c '%04a' "$FILE") $(base64 -w0 <"$FILE")"
  else
    echo "absent"
  fi
}

case "$ACTION" in
  read) ;;
  write)
    desired="$(mktemp)"
    trap 'rm -f "$desired"' EXIT
    base64 -d <<<"$CONTENT" >"$desired"
    if [ -f "$FILE" ] && cmp -s "$desired" "$FILE" && [ "$(stat -c '%04a' "$FILE")" = "$MODE" ]; then
      echo "ok: $FILE is as desired" >&2
    else
      mkdir -p "$(dirname "$FILE")"
      tmp="$(mktemp "$FILE.XXXXXX")"
      # Never leave a copy of the content (an RKE2 token, say) beside the file.
      trap 'rm -f "$desired" "$tmp"' EXIT
      cat "$desired" >"$tmp"
      chmod "$MODE" "$tmp"
      mv -f "$tmp" "$FILE"
      echo "changed: wrote $FILE" >&2
    fi
    ;;
  delete)
    if [ -f "$FILE" ]; then rm -f "$FILE" && echo "changed: removed $FILE" >&2; fi
    ;;
  *)
    echo "error: unknown ACTION $ACTION" >&2
    exit 2
    ;;
esac
report
