#!/bin/bash
# tests/e2e_hostile_dir.sh - entries planted in the segment directory: a
# file named with the largest segment number (which would make the numbers
# wrap onto the oldest segments), a symlink under the name of the next
# segment, a FIFO under the one after.  xtcd must never write through or
# over any of them (nor over its own older segments), say once what it
# skipped, and record a well-behaved app completely; --follow must not
# call the FIFO a deleted segment.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

for prog in "$XTCD" "$LOADGEN"; do
	[ -x "$prog" ] || { echo "SKIP: $prog is not built"; exit 77; }
done
command -v mkfifo >/dev/null || { echo "SKIP: mkfifo is needed"; exit 77; }

# A first recording: the older segments that must stay as they are.
start_xtcd --segment-bytes 64K
"$LOADGEN" 1 20000 0 0 >"$T/lg0.out" 2>&1 || fail "xtc-loadgen exited $?"
stop_xtcd
newest=$(ls "$DIR" | sed -n 's/^xtc-0*\([0-9][0-9]*\)\.seg$/\1/p' | sort -n | tail -n 1)
[ -n "$newest" ] || fail "the first run left no segment"
(cd "$DIR" && md5sum xtc-*.seg) >"$T/old.md5"
echo "  first run: $(wc -l <"$T/old.md5") segments, the newest $newest"

printf 'precious\n' >"$T/target"
: >"$DIR/xtc-18446744073709551615.seg"
ln -s "$T/target" "$DIR/$(printf 'xtc-%06d.seg' $((newest + 1)))"
mkfifo "$DIR/$(printf 'xtc-%06d.seg' $((newest + 2)))"

# The second recording rotates many times past the planted names.
start_xtcd --segment-bytes 64K
"$LOADGEN" 1 200000 100000 0 >"$T/lg1.out" 2>&1 || fail "xtc-loadgen exited $?"
wait_log "xtc-loadgen) ended" 10
stop_xtcd

[ "$(cat "$T/target")" = precious ] || fail "the symlink's target was written: $(head -c 100 "$T/target" | od -c | head -2)"
[ -L "$DIR/$(printf 'xtc-%06d.seg' $((newest + 1)))" ] || fail "the planted symlink was replaced"
[ -p "$DIR/$(printf 'xtc-%06d.seg' $((newest + 2)))" ] || fail "the planted FIFO was replaced"
[ -f "$DIR/xtc-18446744073709551615.seg" ] && [ ! -s "$DIR/xtc-18446744073709551615.seg" ] ||
	fail "the planted xtc-18446744073709551615.seg was changed or deleted"
(cd "$DIR" && md5sum -c --quiet "$T/old.md5") >"$T/md5.out" 2>&1 ||
	fail "older segments were rewritten: $(cat "$T/md5.out")"
for what in "xtc-18446744073709551615.seg: a segment number too large" \
            "$(printf 'xtc-%06d.seg' $((newest + 1))) exists but was not created by this xtcd" \
            "$(printf 'xtc-%06d.seg' $((newest + 2))) exists but was not created by this xtcd"; do
	n=$(grep -c -- "$what" "$T/xtcd.log")
	[ "$n" -eq 1 ] || fail "expected one log line '$what', found $n"
done
segs=$(ls "$DIR" | grep -c '^xtc-[0-9]*\.seg$')
echo "  second run: $segs names like segments; the planted ones untouched, said once each"

# A reader follows links (one may point it at links to segments): the
# planted link to a file that is no segment gets its one line, no more.
"$XTCD" --cat "$DIR" --json >"$T/all.json" 2>"$T/cat.err"
[ "$(grep -c . "$T/cat.err")" -le 1 ] && ! grep -v "$(printf 'xtc-%06d.seg' $((newest + 1))): " "$T/cat.err" | grep -q . ||
	fail "--cat said more than a line about the planted link: $(cat "$T/cat.err")"
python3 "$top_srcdir/tests/e2e_check.py" "$T/all.json" victim 1 200000 1 || fail "the recorded app"

# --follow from the oldest: through the skipped names, no deletion claimed.
timeout 5 "$XTCD" --follow "$DIR" -n all >"$T/follow.out" 2>"$T/follow.err"
grep -q 'deleted under the byte budget' "$T/follow.err" &&
	fail "--follow calls planted names deleted segments: $(cat "$T/follow.err")"
[ "$(grep -c . "$T/follow.out")" -gt 200000 ] || fail "--follow printed $(grep -c . "$T/follow.out") lines: $(cat "$T/follow.err")"
echo "  --follow: $(grep -c . "$T/follow.out") lines; said: $(cat "$T/follow.err")"
echo "PASS"
