#!/bin/bash
# The configuration file (xtcd.conf(5)): every key accepted and in force;
# each kind of bad line refused with FILE:LINE and the accepted form, exit
# 2; a missing --config file is an error; flags win over the file, also
# after a reload; SIGHUP with a good file applies it (and refuses to move
# dir), SIGHUP with a bad file keeps the settings running.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

CONF=$T/xtcd.conf

# ask: xtcd --status --json into $T/status.json; field KEY: one field of it.
ask() {
	"$XTCD" --status --socket "$SOCK" --json >"$T/status.json" || fail "--status failed"
}
# hup: SIGHUP, and wait until xtcd has re-read the file (or refused it).
hup() {
	local n
	n=$(grep -c 'SIGHUP: ' "$T/xtcd.log")
	kill -HUP $XTCD_PID
	for _ in $(seq 1 500); do
		[ "$(grep -c 'SIGHUP: ' "$T/xtcd.log")" -gt "$n" ] && return 0
		sleep 0.02
	done
	fail "xtcd did not log the reload"
}
field() { # a number or a string without quotes in it (python is slow to start)
	grep -o "\"$1\":\(\"[^\"]*\"\|[0-9a-z]*\)" "$T/status.json" | head -n 1 | sed 's/^[^:]*://; s/"//g'
}

# --- every key, in force
cat >"$CONF" <<EOF
# every key xtcd.conf(5) lists
dir = $DIR
socket = $SOCK            # a comment after a value
max_bytes = 512M
segment_bytes = 1M
keep_free = 0
drain_ms = 15
sync = 250
pwrite = yes
hello_timeout_ms = 3000
max_clients = 100
allow_uids = 0, root, 65534
allow_gids = 0
quota = none
quota.65534 = 64M
quota.root = 1G
EOF
"$XTCD" --config "$CONF" >>"$T/xtcd.log" 2>&1 &
XTCD_PID=$!
for _ in $(seq 1 200); do [ -S "$SOCK" ] && break; sleep 0.02; done
wait_log listening
ask
[ "$(field max_bytes)" = 536870912 ] || fail "max_bytes from the file is not in force"
[ "$(field segment_bytes)" = 1048576 ] || fail "segment_bytes from the file is not in force"
[ "$(field drain_ms)" = 15 ] || fail "drain_ms from the file is not in force"
[ "$(field io)" = pwrite ] || fail "pwrite = yes is not in force: $(field io)"
[ "$(field uid_quota)" = 1073741824 ] || fail "quota.root is not root's quota"
[ "$(field dir)" = "$DIR" ] || fail "dir from the file is not in force"
"$LOADGEN" 1 1000 0 >/dev/null || fail "an app could not attach with the file's settings"
wait_log "ended: detached"
stop_xtcd
echo "ok: every key accepted and in force"

# --- bad lines: FILE:LINE, what is wrong, the accepted form; exit 2
bad() { # bad 'LINE' 'EXPECTED MESSAGE PART'
	printf '# line 1 is a comment\ndrain_ms = 20\n%s\n' "$1" >"$T/bad.conf"
	"$XTCD" --config "$T/bad.conf" --dir "$DIR" --socket "$SOCK" >"$T/bad.out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "'$1': exit $rc, not 2"
	[ "$(wc -l <"$T/bad.out")" -eq 1 ] || fail "'$1': not one line: $(cat "$T/bad.out")"
	grep -qF "$T/bad.conf:3: " "$T/bad.out" || fail "'$1': the message does not name FILE:3: $(cat "$T/bad.out")"
	grep -qF -- "$2" "$T/bad.out" || fail "'$1': expected '$2' in: $(cat "$T/bad.out")"
}
bad 'colour = red' "unknown key 'colour'; expected one of dir, socket"
bad 'max-bytes = 1G' "did you mean max_bytes?"
bad 'just words' "expected key = value"
bad 'drain_ms = 30' "drain_ms is set twice (first on line 2)"
bad 'keep_free =' "keep_free has no value; expected keep_free = a size"
bad 'max_bytes = 12Q' "max_bytes = 12Q: expected a size such as 512M or 4G"
bad 'max_bytes = -1G' "expected a size such as 512M or 4G"
bad 'segment_bytes = 4K' "expected a size of at least 64K"
bad 'keep_free = lots' "keep_free = lots: expected a size"
bad 'hello_timeout_ms = 0' "expected a whole number of milliseconds from 1 to 600000"
bad 'max_clients = 2000000' "expected a whole number from 1 to 1000000"
bad 'max_clients = 12abc' "expected a whole number from 1 to 1000000"
bad 'sync = often' "expected never, rotate, or a period in milliseconds"
bad 'pwrite = maybe' "pwrite = maybe: expected yes or no"
bad "socket = /$(printf 'x%.0s' $(seq 1 120))" "expected a path of at most 107 bytes"
bad 'allow_uids = 1000,,1001' "expected user names or uids separated by commas"
bad 'allow_uids = no-such-user-xtc' "'no-such-user-xtc' is neither a number nor a known user"
bad 'allow_gids = no-such-group-xtc' "'no-such-group-xtc' is neither a number nor a known group"
bad 'quota = big' "expected a size such as 256M, or none"
bad 'quota.no-such-user-xtc = 1G' "expected quota.UID = SIZE"
bad 'quota.1000 = 1Z' "quota.1000 = 1Z: expected quota.UID = SIZE"
printf 'quota.7 = 1G\nquota.7 = 2G\n' >"$T/dup.conf"
"$XTCD" --config "$T/dup.conf" --dir "$DIR" --socket "$SOCK" 2>"$T/bad.out" && fail "a uid with two quotas was accepted"
grep -q 'dup.conf:2: quota.7 names uid 7, which an earlier quota line names too' "$T/bad.out" || fail "$(cat "$T/bad.out")"
printf 'max_bytes = 1M\n' >"$T/small.conf"
"$XTCD" --config "$T/small.conf" --dir "$DIR" --socket "$SOCK" 2>"$T/bad.out" && fail "max_bytes below twice segment_bytes accepted"
grep -q "max_bytes = 1M ($T/small.conf:1) must be at least twice segment_bytes = 64M (the default)" "$T/bad.out" ||
	fail "the budget check does not say where the values came from: $(cat "$T/bad.out")"
"$XTCD" --config "$T/no-such.conf" --dir "$DIR" --socket "$SOCK" 2>"$T/bad.out"
[ $? -eq 2 ] || fail "a missing --config file did not exit 2"
grep -q "no-such.conf: No such file or directory; give --config an existing file" "$T/bad.out" || fail "$(cat "$T/bad.out")"
printf 'socket = %s\n' "$SOCK" >"$T/nodir.conf"
"$XTCD" --config "$T/nodir.conf" 2>"$T/bad.out"
[ $? -eq 2 ] && grep -q -- "--dir is required to run the daemon: give --dir DIR or set dir in $T/nodir.conf" "$T/bad.out" ||
	fail "no directory anywhere: $(cat "$T/bad.out")"
echo "ok: every kind of bad line refused with FILE:LINE and the accepted form"
tail -n 1 "$T/bad.out"

# --- flags win over the file, also after SIGHUP; SIGHUP applies a good file
cat >"$CONF" <<EOF
dir = $DIR
socket = $SOCK
max_bytes = 512M
drain_ms = 50
EOF
: >"$T/xtcd.log"
"$XTCD" --config "$CONF" --drain-ms 30 >>"$T/xtcd.log" 2>&1 &
XTCD_PID=$!
for _ in $(seq 1 200); do [ -S "$SOCK" ] && break; sleep 0.02; done
wait_log listening
ask
[ "$(field drain_ms)" = 30 ] || fail "--drain-ms does not win over the file"
[ "$(field max_bytes)" = 536870912 ] || fail "max_bytes from the file is not in force"
cat >"$CONF" <<EOF
dir = $T/elsewhere
socket = $SOCK
max_bytes = 256M
drain_ms = 70
quota = 128M
EOF
hup
ask
[ "$(field max_bytes)" = 268435456 ] || fail "SIGHUP did not apply max_bytes = 256M"
[ "$(field uid_quota)" = 134217728 ] || fail "SIGHUP did not apply quota = 128M"
[ "$(field drain_ms)" = 30 ] || fail "after SIGHUP the file's drain_ms beat --drain-ms"
[ "$(field dir)" = "$DIR" ] || fail "SIGHUP moved the directory"
grep -q "SIGHUP: dir changed to $T/elsewhere: a restart is needed to apply it; still using $DIR" "$T/xtcd.log" ||
	fail "no log line saying dir needs a restart"
echo "ok: SIGHUP applied max_bytes and quota, kept --drain-ms, refused to move dir"
grep 'SIGHUP: re-read' "$T/xtcd.log"

# --- the access rule, changed by SIGHUP: a group match lets nobody in
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$T"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env XTC_TAIL_SHM="$SOCK" "$LOADGEN" 1 100 0 300 >/dev/null; }
	printf 'dir = %s\nmax_bytes = 256M\nallow_uids = 1000\nallow_gids = 4242\n' "$DIR" >"$CONF"
	hup
	nobody || fail "nobody's app failed"
	wait_log "refused pid [0-9]* uid 65534: this uid is not allowed to attach"
	printf 'dir = %s\nmax_bytes = 256M\nallow_uids = 1000\nallow_gids = 4242, %s\n' "$DIR" "$(id -gn 65534)" >"$CONF"
	hup
	nobody || fail "nobody's app failed"
	wait_log "uid 65534 attached"
	echo "ok: SIGHUP applied the access rule: uid 65534 refused, then let in by its group"
else
	echo "note: not root: the group rule was not checked"
fi

# --- SIGHUP with a bad file: logged, the settings stay, still serving
printf 'dir = %s\nmax_bytes = 64M\nsync = sometimes\n' "$DIR" >"$CONF"
hup
grep -q "SIGHUP: $CONF:3: sync = sometimes: expected never, rotate, or a period in milliseconds from 1 to 3600000; keeping the settings in force" "$T/xtcd.log" ||
	fail "the bad reload is not logged with FILE:LINE"
kill -0 $XTCD_PID || fail "xtcd died of a bad file on SIGHUP"
ask
[ "$(field max_bytes)" = 268435456 ] || fail "a bad file on SIGHUP changed max_bytes"
"$LOADGEN" 1 1000 0 >/dev/null || fail "no attach after a bad reload"
wait_log "ended: detached"
stop_xtcd
echo "ok: a bad file on SIGHUP is logged and changes nothing"
