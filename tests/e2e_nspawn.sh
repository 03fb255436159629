#!/bin/bash
# tests/e2e_nspawn.sh [BUILD_DIR] - xtcd under a real systemd: a minimal
# Debian 12 booted with systemd-nspawn, xtc-tail installed into it with
# `make install DESTDIR=`, and the installed units driven with systemctl.
#
#   root and uid 1000 attach through /run/xtcd/xtcd.sock and their sessions
#   are complete; uid 1001, not in allow_uids after `systemctl reload`, is
#   refused and its app says so in one line; `systemctl status` shows the
#   STATUS line; --status, --follow, --cat as root (and --status as uid
#   1000); socket activation; the watchdog (SIGSTOP: systemd restarts
#   xtcd, the app attaches again, the killed daemon's session is closed
#   daemon_crashed); `systemctl stop` ends sessions daemon_shutdown; a
#   leftover /run/xtcd symlink into /run/private is replaced; after a
#   poweroff and a new boot all of it still works.  Every session in the
#   segment directory reconciles (produced = written + dropped + lost).
#
# BUILD_DIR (default build-nspawn/ of the source tree) gets its own build,
# configured --prefix=/usr --sysconfdir=/etc --localstatedir=/var, and
# the debootstrapped tree (debian12.base/, made once and reused; each run
# boots a fresh copy, root/).  Run by .ci/run as its own stage: slow (a
# boot, a 30 s watchdog, a reboot), root only.  Exits 77, saying why, where
# systemd-nspawn cannot run.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-nspawn}
mkdir -p "$build"
build=$(cd "$build" && pwd)
base=$build/debian12.base
root=$build/root
L=$build/nspawn-logs
NSPAWN_PID=
CPID=

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	if [ -n "$CPID" ] && kill -0 "$CPID" 2>/dev/null; then
		echo "--- journal of xtcd.service and xtcd.socket"
		cin journalctl --no-pager -n 60 -u xtcd.service -u xtcd.socket 2>&1
	fi
	exit 1
}
say() { echo "ok: $*"; }

[ "$(id -u)" -eq 0 ] || skip "booting a container with systemd-nspawn needs root"
for t in systemd-nspawn debootstrap nsenter setpriv; do
	command -v "$t" >/dev/null 2>&1 ||
		skip "$t is missing (.ci/run installs systemd-container and debootstrap for this stage)"
done
[ -d /sys/fs/cgroup ] && [ -n "$(ls /sys/fs/cgroup 2>/dev/null)" ] ||
	skip "no cgroup file system at /sys/fs/cgroup: systemd cannot run in a container"

# ---- the tree: debootstrap once, from this machine's own apt sources
mirror() {
	local f u
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		u=$(sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
		           -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\).*/\2/p' "$f" |
		    grep -v -e security -e '^cdrom:' | head -n 1)
		[ -n "$u" ] && { echo "$u"; return 0; }
	done
	echo http://deb.debian.org/debian
}
# What the installed xtcd and its apps need at run time (libcurl4 for
# --ship), beside systemd; a tree cached with another list is made anew.
pkgs=systemd,systemd-sysv,dbus,libev4,liburing2,zlib1g,libprotobuf-c1,libcurl4,procps
if [ ! -x "$base/lib/systemd/systemd" ] || [ "$(cat "$base/.xtc-packages" 2>/dev/null)" != "$pkgs" ]; then
	m=$(mirror)
	echo "debootstrap bookworm from $m into $base (once; reused by later runs)"
	rm -rf "$base.new"
	timeout 1200 debootstrap --variant=minbase --include="$pkgs" \
		bookworm "$base.new" "$m" >"$build/debootstrap.log" 2>&1 ||
		fail "debootstrap failed (log: $build/debootstrap.log): $(tail -n 3 "$build/debootstrap.log")"
	echo "$pkgs" >"$base.new/.xtc-packages"
	rm -rf "$base"
	mv "$base.new" "$base"
fi

# ---- the build, installed like a distribution package would be
. "$top/scripts/deps.sh"
xtc_build "$build" --prefix=/usr --sysconfdir=/etc --localstatedir=/var >/dev/null ||
	fail "building in $build failed"
rm -rf "$root" "$L"
mkdir -p "$L"
cp -a "$base" "$root" || fail "copying the tree failed"
make -C "$build" -s install DESTDIR="$root" >"$L/install.log" 2>&1 ||
	fail "make install DESTDIR=$root failed: $(tail -n 5 "$L/install.log")"
[ -f "$root/lib/systemd/system/xtcd.socket" ] || [ -f "$root/usr/lib/systemd/system/xtcd.socket" ] ||
	fail "make install did not put the units where systemd looks"
# An app built the way a user of the package builds one: against the
# installed header and library, no rpath, no LD_LIBRARY_PATH inside.
cc -std=gnu11 -O2 -pthread -I"$root/usr/include" -o "$root/usr/local/bin/xtc-loadgen" \
	"$top/tests/loadgen.c" -L"$root/usr/lib" -lxtctail || fail "building the app against the installed library failed"
cp "$root/etc/xtcd.conf.example" "$root/etc/xtcd.conf"
chroot "$root" useradd -u 1000 -m alice && chroot "$root" useradd -u 1001 -m bob ||
	fail "useradd in the tree failed"

# ---- booting, entering, stopping
cin() { nsenter -t "$CPID" -a env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
as_user() { local u=$1; shift; cin setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }

boot() {
	local state
	systemd-nspawn --boot --register=no --keep-unit --console=read-only -M xtc-e2e -D "$root" \
		</dev/null >>"$L/boot.log" 2>&1 &
	NSPAWN_PID=$!
	CPID=
	for _ in $(seq 1 300); do
		CPID=$(ps -o pid= --ppid "$NSPAWN_PID" 2>/dev/null | tr -d ' ' | head -n 1)
		[ -n "$CPID" ] && [ "$(cat "/proc/$CPID/comm" 2>/dev/null)" = systemd ] && break
		CPID=
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$CPID" ]; then
		wait "$NSPAWN_PID"
		NSPAWN_PID=
		if [ "${1:-}" = first ]; then
			skip "systemd-nspawn cannot boot a container here: $(grep -v '^$' "$L/boot.log" | tail -n 3 | tr '\n' ' ')"
		fi
		fail "the container did not boot again: $(tail -n 5 "$L/boot.log")"
	fi
	# systemctl cannot connect until PID 1 has made its private socket.
	for _ in $(seq 1 600); do
		state=$(timeout 120 nsenter -t "$CPID" -a systemctl is-system-running --wait 2>&1)
		case $state in *"Failed to connect to bus"*) sleep 0.2 ;; *) break ;; esac
	done
	case $state in
	running) ;;
	degraded) echo "note: the container is degraded: $(cin systemctl --failed --no-legend --plain | tr '\n' ';')" ;;
	*) fail "the container did not finish booting in 120 s: $state" ;;
	esac
}

poweroff() {
	cin systemctl poweroff >/dev/null 2>&1
	for _ in $(seq 1 600); do
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$NSPAWN_PID" 2>/dev/null && fail "the container did not power off in 60 s"
	wait "$NSPAWN_PID" || fail "systemd-nspawn exited $? at poweroff"
	NSPAWN_PID= CPID=
}

cleanup() {
	[ -n "$NSPAWN_PID" ] || return
	kill -TERM "$NSPAWN_PID" 2>/dev/null # nspawn asks the container's init to shut down
	for _ in $(seq 1 150); do kill -0 "$NSPAWN_PID" 2>/dev/null || return; sleep 0.1; done
	kill -KILL "$NSPAWN_PID" 2>/dev/null
}
trap cleanup EXIT

# wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds.
wait_for() {
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	fail "$what (waited $secs s)"
}

# ---- sessions, as xtcd --stats --json and --cat --json inside report them
seg=/var/lib/xtcd
# sessions_table: one line per session: id uid pid reason complete
# produced written dropped lost (from both JSON outputs).
sessions_table() {
	cin xtcd --stats "$seg" --json >"$L/stats.json" 2>"$L/stats.err" || fail "xtcd --stats --json failed: $(cat "$L/stats.err")"
	cin xtcd --stats "$seg" >"$L/stats.txt" 2>"$L/stats.err" || fail "xtcd --stats failed: $(cat "$L/stats.err")"
	python3 - "$L/stats.json" "$L/stats.txt" <<'EOF'
import json, re, sys
uid = {}
for line in open(sys.argv[2]):
    m = re.match(r"session (\d+): .*, uid (\d+),", line)
    if m:
        uid[int(m.group(1))] = int(m.group(2))
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "session":
        continue
    e = r.get("end") or {}
    print(r["session"], uid.get(r["session"], "?"), r["pid"], e.get("reason", "open"),
          str(e.get("complete", False)).lower(), e.get("produced", -1), e.get("written", -1),
          e.get("dropped", -1), e.get("lost", -1))
EOF
}
LAST=0
# new_sessions [COUNT]: wait (up to 20 s) until COUNT (default 1) sessions
# after $LAST are on disk, all ended; their lines go to $L/new and $LAST
# moves on.  The callers check what they hold.
new_sessions() {
	local want=${1:-1}
	for _ in $(seq 1 40); do
		sessions_table >"$L/table" || fail "reading the sessions failed"
		awk -v last="$LAST" '$1 > last' "$L/table" >"$L/new"
		[ "$(grep -c . "$L/new")" -ge "$want" ] && ! grep -q ' open ' "$L/new" && break
		sleep 0.5
	done
	LAST=$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m }' "$L/table")
}
# reconciles: every session so far has produced = written + dropped + lost.
reconciles() {
	sessions_table >"$L/table"
	awk '$4 != "open" && $6 != $7 + $8 + $9 { print "session " $1 " does not reconcile: " $0; bad = 1 } END { exit bad }' "$L/table" ||
		fail "counts do not reconcile"
}

# app UID EVENTS HOLD_MS: a two-loop app as UID, in the foreground; its
# stderr must stay empty (attached without a word).
app() {
	local u=$1 n=$2 hold=$3 err
	if [ "$u" = 0 ]; then
		err=$(cin env XTC_TAIL_SHM=1 timeout 120 xtc-loadgen 2 "$n" 0 "$hold" 2>&1 >/dev/null)
	else
		err=$(as_user "$u" env XTC_TAIL_SHM=1 timeout 120 xtc-loadgen 2 "$n" 0 "$hold" 2>&1 >/dev/null)
	fi
	[ $? -eq 0 ] || fail "the app as uid $u failed: $err"
	[ -z "$err" ] || fail "the app as uid $u wrote to stderr: $err"
}
# one_complete UID EVENTS: exactly one new session, of UID, detached and
# complete with 2 x EVENTS written.
one_complete() {
	local s
	new_sessions
	s=$(cat "$L/new")
	[ "$(echo "$s" | grep -c .)" -eq 1 ] || fail "expected one new session, found: $s"
	echo "$s" | awk -v u="$1" -v n=$((2 * $2)) '$2 == u && $4 == "detached" && $5 == "true" && $6 == n && $7 == n { ok = 1 } END { exit !ok }' ||
		fail "the session of uid $1 is not complete with $((2 * $2)) events: $s"
}

# units_ok: the socket and its directory as every user needs them
units_ok() {
	local d s
	d=$(cin stat -c '%F %a %U' /run/xtcd)
	s=$(cin stat -c '%F %a %U' /run/xtcd/xtcd.sock)
	[ "$d" = "directory 755 root" ] || fail "/run/xtcd is '$d', not 'directory 755 root'"
	[ "$s" = "socket 666 root" ] || fail "/run/xtcd/xtcd.sock is '$s', not 'socket 666 root'"
}

# ---- first boot
t0=$SECONDS
boot first
sdver=$(cin systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
say "booted systemd $sdver in the container in $((SECONDS - t0)) s"
cin systemctl enable --now xtcd.socket xtcd.service >"$L/enable.log" 2>&1 ||
	fail "systemctl enable --now failed: $(cat "$L/enable.log")"
wait_for 30 "xtcd.service did not become active" cin systemctl is-active --quiet xtcd.service
units_ok
cin journalctl --no-pager -u xtcd.service | grep -q 'migrating to /run/private' &&
	fail "systemd moved the runtime directory into /run/private"
cin test -e /run/private/xtcd && fail "/run/private/xtcd exists"
say "xtcd.socket and xtcd.service active; /run/xtcd 0755 and the socket 0666, both root's; no /run/private"
cin systemd-analyze security xtcd.service 2>&1 | grep 'Overall exposure' | sed 's/^/    /'

app 0 20000 100
one_complete 0 20000
say "an app as root attached through the installed units; its session is complete"
app 1000 20000 100
one_complete 1000 20000
say "an app as uid 1000 attached; its session is complete"

# --- the STATUS line, --status (root and uid 1000), --follow, --cat
as_user 1000 env XTC_TAIL_SHM=1 timeout 120 xtc-loadgen 1 200000 20000 3000 >/dev/null 2>&1 &
bg=$!
wait_for 20 "systemctl status never showed '1 session'" \
	sh -c "nsenter -t $CPID -a systemctl status xtcd.service | grep -q 'Status: \"1 session, '"
echo "    $(cin systemctl status xtcd.service | grep 'Status:' | sed 's/^ *//')"
st=$(cin xtcd --status 2>&1) || fail "xtcd --status as root failed: $st"
echo "$st" | grep -q xtc-loadgen || fail "xtcd --status does not list the app: $st"
st=$(as_user 1000 xtcd --status 2>&1) || fail "xtcd --status as uid 1000 failed: $st"
echo "$st" | grep -q xtc-loadgen || fail "xtcd --status as uid 1000 does not list the app: $st"
cin timeout 2 xtcd --follow "$seg" >"$L/follow.out" 2>&1
grep -q 'RUN' "$L/follow.out" || fail "xtcd --follow as root showed no events: $(head -n 5 "$L/follow.out")"
cin xtcd --cat "$seg" >"$L/cat.out" 2>&1 || fail "xtcd --cat as root failed: $(tail -n 3 "$L/cat.out")"
out=$(as_user 1000 xtcd --cat "$seg" 2>&1) && fail "uid 1000 could read the private segment directory"
m=$(cin stat -c '%a %U' /var/lib/private)
[ "$m" = "700 root" ] || fail "/var/lib/private is '$m', not '700 root'"
m=$(cin sh -c 'stat -c %a /var/lib/private/xtcd/xtc-*.seg | sort -u | tr "\n" " "')
[ "$m" = "600 " ] || fail "segments are mode $m, not 600"
echo "    uid 1000, --cat: $out"
wait $bg || fail "the app under --status and --follow failed"
new_sessions
s=$(cat "$L/new")
echo "$s" | awk '$2 == 1000 && $4 == "detached" && $5 == "true"' | grep -q . || fail "the followed session is not complete: $s"
say "STATUS line; --status as root and as uid 1000; --follow and --cat as root; the segments private"

# --- systemctl reload: allow_uids = 1000 admits alice, refuses bob
printf 'allow_uids = 1000\n' >>"$root/etc/xtcd.conf"
pid=$(cin systemctl show -P MainPID xtcd.service)
cin systemctl reload xtcd.service || fail "systemctl reload failed"
wait_for 10 "xtcd never logged the reload" sh -c "nsenter -t $CPID -a journalctl --no-pager -u xtcd.service | grep -q 'SIGHUP: re-read'"
[ "$(cin systemctl show -P MainPID xtcd.service)" = "$pid" ] || fail "reload restarted xtcd"
err=$(as_user 1001 env XTC_TAIL_SHM=1 xtc-loadgen 1 1000 0 500 2>&1 >/dev/null) || fail "bob's app failed: $err"
want="xtc_tail: cannot attach to /run/xtcd/xtcd.sock: xtcd refused: this uid is not allowed to attach (see allow_uids and allow_gids in xtcd.conf, or --allow-uid); recording in-process only, retrying"
[ "$err" = "$want" ] || fail "uid 1001's app did not say it was refused in one line: $err"
echo "    uid 1001: $err"
new_sessions 0
app 1000 10000 100
one_complete 1000 10000
units_ok
say "systemctl reload applied allow_uids (same pid $pid): uid 1000 attaches, uid 1001 is refused and told so"

# --- systemctl restart: a new xtcd on the same socket, same modes
pid=$(cin systemctl show -P MainPID xtcd.service)
cin systemctl restart xtcd.service || fail "systemctl restart failed"
[ "$(cin systemctl show -P MainPID xtcd.service)" != "$pid" ] || fail "restart kept the same xtcd"
units_ok
app 1000 10000 100
one_complete 1000 10000
say "systemctl restart: the socket and its directory unchanged, uid 1000 attaches"

# --- socket activation
cin systemctl stop xtcd.service 2>/dev/null
cin systemctl is-active --quiet xtcd.service && fail "xtcd.service still active after stop"
cin systemctl is-active --quiet xtcd.socket || fail "xtcd.socket stopped with the service"
app 1000 10000 100
cin systemctl is-active --quiet xtcd.service || fail "the app's connect did not start xtcd.service"
new_sessions
s=$(cat "$L/new")
echo "$s" | awk '$4 == "daemon_shutdown"' | grep -q . && fail "the stop of an idle xtcd ended a session: $s"
echo "$s" | awk '$2 == 1000 && $4 == "detached" && $5 == "true" && $7 == 20000' | grep -q . ||
	fail "the socket-activated session is not complete: $s"
say "socket activation: service stopped, socket listening, an app as uid 1000 started it and is complete"

# --- the watchdog: a hung xtcd is killed and restarted, the app attaches
# again.  The app emits for 50 s, outliving WatchdogSec=30s and the kill.
as_user 1000 env XTC_TAIL_SHM=1 timeout 200 xtc-loadgen 1 50000 1000 500 >"$L/wd.out" 2>"$L/wd.err" &
bg=$!
wait_for 20 "the watchdog app never attached" \
	sh -c "nsenter -t $CPID -a systemctl status xtcd.service | grep -q 'Status: \"1 session, '"
pid=$(cin systemctl show -P MainPID xtcd.service)
t=$SECONDS
cin kill -STOP "$pid" || fail "SIGSTOP to xtcd (pid $pid in the container) failed"
wait_for 120 "systemd did not restart the stopped xtcd" \
	sh -c "p=\$(nsenter -t $CPID -a systemctl show -P MainPID xtcd.service); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid ] && nsenter -t $CPID -a systemctl is-active --quiet xtcd.service"
echo "    xtcd (pid $pid) stopped; systemd restarted it after $((SECONDS - t)) s"
cin journalctl --no-pager -u xtcd.service | grep -m 1 'Watchdog timeout' | sed 's/^/    /'
wait_for 30 "the app did not attach to the restarted xtcd" \
	sh -c "nsenter -t $CPID -a systemctl status xtcd.service | grep -q 'Status: \"1 session, '"
wait $bg || fail "the watchdog app failed: $(cat "$L/wd.err")"
[ -s "$L/wd.err" ] && fail "the watchdog app wrote to stderr: $(cat "$L/wd.err")"
new_sessions 2
s=$(cat "$L/new")
echo "$s" | sed 's/^/    session /'
echo "$s" | awk '$4 == "daemon_crashed"' | grep -q . || fail "the killed xtcd's session was not closed daemon_crashed: $s"
echo "$s" | awk '$4 == "detached" && $2 == 1000' | grep -q . || fail "no session of the re-attached app ended detached: $s"
reconciles
say "watchdog: SIGSTOP, restarted, the app attached again; daemon_crashed then detached, counts reconcile"

# --- systemctl stop with apps attached: daemon_shutdown, counts reconcile
for u in 0 1000; do
	if [ "$u" = 0 ]; then cin env XTC_TAIL_SHM=1 timeout 100 xtc-loadgen 1 200000 20000 1000 >/dev/null 2>&1 &
	else as_user 1000 env XTC_TAIL_SHM=1 timeout 100 xtc-loadgen 1 200000 20000 1000 >/dev/null 2>&1 & fi
	eval "stop_app_$u=\$!"
done
wait_for 20 "the two apps never attached" \
	sh -c "nsenter -t $CPID -a systemctl status xtcd.service | grep -q 'Status: \"2 sessions, '"
cin systemctl stop xtcd.socket xtcd.service || fail "systemctl stop failed"
cin systemctl is-active --quiet xtcd.service && fail "xtcd.service still active"
new_sessions 2
s=$(cat "$L/new")
echo "$s" | sed 's/^/    session /'
[ "$(echo "$s" | awk '$4 == "daemon_shutdown"' | grep -c .)" -eq 2 ] ||
	fail "systemctl stop did not end both sessions daemon_shutdown: $s"
reconciles
wait "$stop_app_0" "$stop_app_1000" # the apps, with no daemon, go on quietly
say "systemctl stop: both sessions ended daemon_shutdown, every session reconciles"

# --- a /run/xtcd left a symlink into /run/private by an older unit
cin sh -c 'mkdir -p /run/private/xtcd && chmod 700 /run/private && ln -s private/xtcd /run/xtcd' ||
	fail "could not make the old layout"
cin systemctl start xtcd.socket || fail "xtcd.socket did not start over the old layout"
units_ok
app 1000 10000 100
one_complete 1000 10000
say "a leftover /run/xtcd -> /run/private/xtcd symlink is replaced; uid 1000 attaches"

# ---- poweroff, boot again: the enabled units come back as they were
t=$SECONDS
poweroff
boot
say "powered off and booted again in $((SECONDS - t)) s"
wait_for 30 "xtcd.socket not listening after the reboot" cin systemctl is-active --quiet xtcd.socket
units_ok
cin test -e /run/private/xtcd && fail "/run/private/xtcd exists after the reboot"
app 1000 10000 100
one_complete 1000 10000
app 0 10000 100
one_complete 0 10000
err=$(as_user 1001 env XTC_TAIL_SHM=1 xtc-loadgen 1 1000 0 300 2>&1 >/dev/null)
[ "$err" = "$want" ] || fail "after the reboot uid 1001 was not refused with one line: $err"
reconciles
say "after the reboot: socket and directory as before; root and uid 1000 attach complete; uid 1001 refused"
echo "    $(grep -c . "$L/table") sessions in $seg, every one reconciles"
poweroff
say "xtcd under systemd $sdver: every check passed in $((SECONDS - t0)) s"
