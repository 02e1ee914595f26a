#!/bin/bash
# Runs one step's script, read from stdin, under a per-resource lock and a host-side time bound.
# This text is the SSH command itself (bash -c); the script and its parameters arrive on stdin,
# so none of them shows in the host's process list. Arguments:
#   $1  lock directory (created 0700 when missing; a non-root user without access to it gets
#       one under XDG_RUNTIME_DIR or ~/.cache instead)
#   $2  lock file name
#   $3  seconds to wait for the lock while another run holds it
#   $4  seconds the script may run; then timeout sends SIGTERM to its whole process group
#   $5  seconds after SIGTERM before SIGKILL
# A step that holds the lock is never overlapped by a second run, and a step that overruns is
# stopped here, on the host, not merely abandoned by the client (without a pty, closing the SSH
# session leaves the host's shell running). flock and timeout come with util-linux and coreutils,
# both part of every Rocky 9 install.
# Markers for the client, on stderr: "rke2-remediation-step: lock busy ..." (exit 75) and
# "rke2-remediation-step: timed out ..." (exit 124, or 137 when SIGKILL was needed).
set -u

lock_dir="$1" lock_name="$2" lock_wait="$3" script_seconds="$4" kill_after="$5"

command -v flock >/dev/null || {
  echo "error: flock is not installed on this host; install util-linux." >&2
  exit 127
}
command -v timeout >/dev/null || {
  echo "error: timeout is not installed on this host; install coreutils." >&2
  exit 127
}

# The lock directory must be this user's own: in a world-writable parent, a directory someone
# else made could hold a symlink in place of a lock file. (Parents such as /run/lock keep their
# usual mode; a concurrent run may create the directory first.)
private_dir() {
  mkdir -p "${1%/*}" 2>/dev/null && { mkdir -m 0700 "$1" 2>/dev/null || [ -d "$1" ]; } &&
    [ -O "$1" ] && [ -w "$1" ]
}

if ! private_dir "$lock_dir"; then
  lock_dir="${XDG_RUNTIME_DIR:-$HOME/.cache}/rke2-remediation"
  private_dir "$lock_dir" || {
    echo "error: cannot create the lock directory $lock_dir on this host." >&2
    exit 1
  }
fi
lock_file="$lock_dir/$lock_name"

# (Opened for append: nothing is ever written to it, and nothing is truncated.)
exec 9>>"$lock_file" || {
  echo "error: cannot open the lock file $lock_file on this host." >&2
  exit 1
}
if ! flock -w "$lock_wait" 9; then
  echo "rke2-remediation-step: lock busy $lock_file" >&2
  exit 75
fi

# The script does not inherit the lock: a daemon it starts must not hold it after the step ends.
started=$SECONDS
timeout -k "$kill_after" "$script_seconds" bash -s 9>&-
rc=$?
# (124 and 137 are also ordinary exit codes; the elapsed time tells that timeout acted.)
if { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ $((SECONDS - started)) -ge "$script_seconds" ]; then
  echo "rke2-remediation-step: timed out after $script_seconds s" >&2
fi
exit "$rc"
