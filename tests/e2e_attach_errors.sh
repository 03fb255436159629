#!/bin/bash
# A failed attach is never silent, and an absent daemon is no news: an app
# whose XTC_TAIL_SHM names something it can never attach to (a regular
# file, a socket it may not reach, an xtcd that refuses its uid) says so
# in exactly one line on stderr while it keeps retrying and recording;
# nothing is said for a missing socket or one nobody listens on, nor
# under XTC_TAIL_QUIET=1; an app that was refused attaches once the
# operator fixed the cause.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

tail_line() { echo "xtc_tail: cannot attach to $1: $2; recording in-process only, retrying"; }

# app ERRFILE HOLD_MS [RUNNER...]: run one app recording for HOLD_MS
# against $XTC_TAIL_SHM (long enough for several retries), its stderr in
# ERRFILE; fails unless it recorded.
app() {
	local err=$1 hold=$2
	shift 2
	"$@" env XTC_TAIL_SHM="$XTC_TAIL_SHM" "$LOADGEN" 1 100 0 "$hold" >"$T/app.out" 2>"$err" ||
		fail "the app exited $?: $(cat "$err")"
	grep -q '^emitted 100$' "$T/app.out" || fail "the app did not record: $(cat "$T/app.out")"
}

# one_line ERRFILE EXPECTED: ERRFILE holds exactly the line EXPECTED.
one_line() {
	[ "$(wc -l <"$1")" -eq 1 ] && [ "$(cat "$1")" = "$2" ] ||
		fail "expected exactly the line '$2', the app wrote: $(cat "$1")"
	echo "ok: $2"
}

# --- a 20-byte regular file where the socket should be
export XTC_TAIL_SHM=$T/file.sock
printf 'not a socket at all\n' >"$XTC_TAIL_SHM"
app "$T/file.err" 2500
one_line "$T/file.err" "$(tail_line "$XTC_TAIL_SHM" "not a socket")"
XTC_TAIL_QUIET=1 app "$T/quiet.err" 300
[ -s "$T/quiet.err" ] && fail "XTC_TAIL_QUIET=1 still printed: $(cat "$T/quiet.err")"
echo "ok: XTC_TAIL_QUIET=1 silences it"
mkdir "$T/dir.sock"
XTC_TAIL_SHM=$T/dir.sock app "$T/dir.err" 300
one_line "$T/dir.err" "$(tail_line "$T/dir.sock" "not a socket")"

# --- no daemon yet: no socket, or a socket nobody listens on
XTC_TAIL_SHM=$T/absent.sock app "$T/absent.err" 1500
[ -s "$T/absent.err" ] && fail "an absent socket is reported: $(cat "$T/absent.err")"
python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])' "$T/stale.sock"
[ -S "$T/stale.sock" ] || fail "could not make a socket nobody listens on"
XTC_TAIL_SHM=$T/stale.sock app "$T/stale.err" 1500
[ -s "$T/stale.err" ] && fail "a socket nobody listens on is reported: $(cat "$T/stale.err")"
echo "ok: an absent daemon (no socket, or one nobody listens on) is not reported"

if [ "$(id -u)" -ne 0 ] || ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	echo "SKIP: the permission and refusal checks need root and setpriv to run an app as uid 65534"
	exit 77
fi
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 711 "$T"

# --- a socket in a directory uid 65534 may not enter; the operator fixes
# the mode while the app retries, and it attaches.
mkdir -m 0700 "$T/priv"
SOCK=$T/priv/xtcd.sock
start_xtcd
export XTC_TAIL_SHM=$SOCK
"${nobody[@]}" env XTC_TAIL_SHM="$SOCK" "$LOADGEN" 1 100 0 6000 >"$T/app.out" 2>"$T/perm.err" &
lg=$!
for _ in $(seq 1 500); do [ -s "$T/perm.err" ] && break; sleep 0.02; done
chmod 755 "$T/priv"
wait_log "uid 65534 attached" 20
wait $lg || fail "the app exited $?"
one_line "$T/perm.err" "$(tail_line "$SOCK" "Permission denied")"
wait_log "ended: detached"
echo "ok: after chmod the retrying app attached and detached cleanly"
stop_xtcd

# --- an xtcd that refuses the uid
start_xtcd --allow-uid 4242
app "$T/refused.err" 2500 "${nobody[@]}"
wait_log "refused pid [0-9]* uid 65534: this uid is not allowed to attach"
one_line "$T/refused.err" "$(tail_line "$SOCK" "xtcd refused: this uid is not allowed to attach (see allow_uids and allow_gids in xtcd.conf, or --allow-uid)")"
kill -0 "$XTCD_PID" || fail "xtcd died"
stop_xtcd
