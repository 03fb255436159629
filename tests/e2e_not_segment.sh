#!/bin/bash
# A file named like a segment that is not one (a 20-byte text file named
# xtc-000001.seg) is reported by --cat, --stats, --report and --follow as
# "not an xtc segment", once, with exit 1 where the mode exits: not as a
# torn tail with exit 0.  A real segment cut inside its header (xtcd
# creating it) is still a torn tail.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

printf 'hello, not a segment' >"$DIR/xtc-000001.seg"
[ "$(wc -c <"$DIR/xtc-000001.seg")" -eq 20 ] || fail "the file is not 20 bytes"
want="xtcd: $DIR/xtc-000001.seg: not an xtc segment (no segment magic at its start: move it out of the directory); segment skipped"

# mode NAME ARGS...: exit 1 and exactly the one line on stderr.
mode() {
	local name=$1 rc
	shift
	"$XTCD" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$(cat "$T/err")" = "$want" ] || fail "$name did not say exactly '$want': $(cat "$T/err")"
	[ $rc -eq 1 ] || fail "$name exited $rc, not 1 (damaged data)"
	echo "ok: $name exits 1: $(cat "$T/err")"
}
mode "--cat" --cat "$DIR"
[ -s "$T/out" ] && fail "--cat printed records from a file that is not a segment: $(head -n 3 "$T/out")"
mode "--cat --json" --cat "$DIR" --json
mode "--stats" --stats "$DIR"
mode "--stats --json" --stats "$DIR" --json
mode "--report" --report "$DIR"
grep -q 'torn' "$T/out" && fail "--report calls it torn: $(grep torn "$T/out")"
grep -q 'damaged data in segment 000001: records of any session may be missing from the start to the end' "$T/out" ||
	fail "--report's RECORD section does not name the damage: $(grep -A3 '^RECORD' "$T/out")"

"$XTCD" --follow "$DIR" >"$T/out" 2>"$T/err" &
f=$!
sleep 1.5
kill -INT $f
wait $f || fail "--follow exited $? on SIGINT"
[ "$(cat "$T/err")" = "$want" ] || fail "--follow did not say exactly '$want' once: $(cat "$T/err")"
echo "ok: --follow says it once: $(cat "$T/err")"

# --- a segment cut inside its header is xtcd creating it: a torn tail
rm -f "$DIR"/*
start_xtcd
"$LOADGEN" 1 100 >/dev/null || fail "loadgen failed"
wait_log "ended: detached"
stop_xtcd
last=$(ls "$DIR"/xtc-*.seg | tail -n 1)
next=$DIR/$(printf 'xtc-%06d.seg' $(( 10#$(basename "$last" .seg | sed 's/^xtc-//') + 1 )))
head -c 10 "$last" >"$next"
"$XTCD" --cat "$DIR" >/dev/null 2>"$T/err" || fail "--cat exited $? on a segment cut inside its header: $(cat "$T/err")"
grep -q "^xtcd: $next: torn tail at byte 0 (10 bytes ignored)" "$T/err" ||
	fail "a segment cut inside its header is not a torn tail: $(cat "$T/err")"
grep -q 'not an xtc segment' "$T/err" && fail "a real segment's first 10 bytes were called not a segment"
echo "ok: a segment cut inside its header is still a torn tail (exit 0)"

# --- a directory the reader may not open: say whose segments they are
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	chmod 700 "$DIR"
	chmod 711 "$T"
	# a copy nobody can run wherever the build tree is
	cp "$XTCD" "$T/xtcd-copy" && chmod 755 "$T/xtcd-copy"
	if su nobody -s /bin/sh -c "\"$T/xtcd-copy\" --cat \"$DIR\"" >/dev/null 2>"$T/err"; then
		fail "--cat as nobody read a 0700 directory"
	fi
	grep -q "^xtcd: cannot read $DIR: Permission denied: the segments are xtcd's own (mode 0600); run xtcd --cat as root" "$T/err" ||
		fail "--cat without permission does not say whose segments they are: $(cat "$T/err")"
	echo "ok: --cat without permission says to run it as root or as xtcd's user"
	# a directory it may list, segments it may not open: one line that says
	# what to do and one that counts the others, not one line a segment
	mkdir -p "$T/closed" && chmod 755 "$T/closed"
	for s in 1 2 3 4; do : >"$T/closed/xtc-00000$s.seg"; done
	chmod 600 "$T/closed"/*.seg
	first="xtcd: $T/closed/xtc-000001.seg: cannot open: Permission denied: the segments are xtcd's own; run this as root or as the user xtcd runs as"
	for m in --cat --stats --report; do
		su nobody -s /bin/sh -c "\"$T/xtcd-copy\" $m \"$T/closed\"" >/dev/null 2>"$T/err"
		[ "$(cat "$T/err")" = "$first
xtcd: 3 more segments of $T/closed could not be opened either (Permission denied)" ] ||
			fail "$m as nobody on segments it may not open did not say it in two lines: $(cat "$T/err")"
	done
	su nobody -s /bin/sh -c "exec timeout -s INT 1.5 \"$T/xtcd-copy\" --follow \"$T/closed\"" >/dev/null 2>"$T/err"
	[ "$(cat "$T/err")" = "$first" ] ||
		fail "--follow as nobody on segments it may not open did not say it once: $(cat "$T/err")"
	echo "ok: segments the reader may not open: the first named with what to do, the others counted"
else
	echo "(not root: the permission message is not checked)"
fi
