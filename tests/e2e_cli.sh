#!/bin/bash
# The command line's messages, from the real binary: a bad flag is one
# line naming it; --report --export takes only the report's formats; the
# report's errors name the flags given; --check-config validates a file;
# the flag spellings take what the keys take; --verbose and log_level say
# more or less.
. "${top_srcdir:-.}/tests/e2e_lib.sh"

# refused 'EXPECTED LINE' ARGS...: exit 2, exactly that one line on stderr,
# nothing on stdout.
refused() {
	local want=$1
	shift
	"$XTCD" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc -eq 2 ] || fail "xtcd $*: exit $rc, not 2: $(cat "$T/err")"
	[ "$(wc -l <"$T/err")" -eq 1 ] || fail "xtcd $*: not one line: $(cat "$T/err")"
	[ "$(cat "$T/err")" = "$want" ] || fail "xtcd $*: '$(cat "$T/err")', not '$want'"
	[ -s "$T/out" ] && fail "xtcd $*: wrote to stdout: $(head -c 200 "$T/out")"
	return 0
}

# --- a bad flag: one line, naming the flag, pointing at --help
refused "xtcd: unknown option --bogus; see xtcd --help" --bogus
refused "xtcd: unknown option --bogus; see xtcd --help" --bogus=1
refused "xtcd: --max is short for more than one option (--max-bytes, --max-clients, --max-sessions-per-uid, --max-shm-per-uid); give it whole" --max 1G
refused "xtcd: unknown option --max_bytes; did you mean --max-bytes?" --max_bytes 1G
refused "xtcd: unknown option -x; see xtcd --help" -x
refused "xtcd: --dir needs a value; see xtcd --help" --dir
refused "xtcd: -d needs a value; see xtcd --help" -d
refused "xtcd: --status takes no value; see xtcd --help" --status=yes
refused "xtcd: --max-bytes 12Q: expected a size such as 512M or 4G; see xtcd --help" --max-bytes 12Q
refused "xtcd: --pwrite=maybe: expected yes or no; see xtcd --help" --pwrite=maybe
refused "xtcd: --verbose=loud: expected error, warning, info or debug; see xtcd --help" --verbose=loud
refused "xtcd: --allow-uid no-such-user-xtc: 'no-such-user-xtc' is neither a number nor a known user; expected user names or uids separated by commas, or any; see xtcd --help" \
	--allow-uid no-such-user-xtc
refused "xtcd: unexpected argument 'debug'; a value of --verbose goes after '=': --verbose=debug" \
	--status --verbose debug
echo "ok: a bad flag is one line naming it"
"$XTCD" --bogus 2>&1 | sed 's/^/  /'

# --- --report --export: the report's formats only, and errors name the flags
refused "xtcd: --report --export takes pprof or collapsed, not chrome; for a chrome export of the records: xtcd --export chrome DIR > FILE" \
	--report "$DIR" --export chrome
refused "xtcd: --report --export takes pprof or collapsed, not ctf; for a ctf export of the records: xtcd --export ctf DIR OUT" \
	--report "$DIR" --export ctf
refused "xtcd: --export collapsed needs the segment directory: xtcd --export collapsed DIR > FILE" \
	--export collapsed
refused "xtcd: --color does not apply to --export collapsed; see xtcd --help" \
	--export collapsed "$DIR" --color
refused "xtcd: --color does not apply to --report --export collapsed; see xtcd --help" \
	--report --export collapsed "$DIR" --color
refused "xtcd: $DIR holds no segments (xtc-NNNNNN.seg): point --export collapsed at the directory xtcd writes to" \
	--export collapsed "$DIR"
refused "xtcd: $DIR holds no segments (xtc-NNNNNN.seg): point --report at the directory xtcd writes to" \
	--report "$DIR"
echo "ok: --report --export chrome is refused, and the report's errors name the flags given"
"$XTCD" --report "$DIR" --export chrome 2>&1 | sed 's/^/  /'

# --- --ship: its flags are the table's rows, checked before any connection
refused "xtcd: --ship ftp://ch/: expected a ClickHouse HTTP URL such as http://clickhouse:8123/?database=xtc, or none; see xtcd --help" \
	--ship ftp://ch/ "$DIR"
refused "xtcd: --ship-batch 0: expected a whole number of rows from 1 to 1000000; see xtcd --help" \
	--ship http://127.0.0.1:9/ "$DIR" --ship-batch 0
refused "xtcd: --ship-metrics $T/ship.txt: expected a file name ending in .prom, or none; see xtcd --help" \
	--ship http://127.0.0.1:9/ "$DIR" --ship-metrics "$T/ship.txt"
refused "xtcd: --ship-host applies to --ship only; see xtcd --help" --dir "$DIR" --ship-host a
# --- the reading modes read no settings: a daemon flag with one is refused
refused "xtcd: --max-bytes is a setting of the daemon; it does not apply to --cat, which reads the directory given to it; see xtcd --help" \
	--cat "$DIR" --max-bytes 1G
refused "xtcd: --verbose is a setting of the daemon; it does not apply to --report, which reads the directory given to it; see xtcd --help" \
	--report "$DIR" -v
refused "xtcd: --socket is a setting of the daemon; it does not apply to --follow, which reads the directory given to it; see xtcd --help" \
	--follow "$DIR" --socket "$T/s"
refused "xtcd: --ship-host applies to --ship only; see xtcd --help" --stats "$DIR" --ship-host a
refused "xtcd: --max-bytes does not apply to --ship; see xtcd --help" \
	--ship http://127.0.0.1:9/ "$DIR" --max-bytes 1G
refused "xtcd: --json does not apply to --ship; see xtcd --help" --ship http://127.0.0.1:9/ "$DIR" --json
printf 'ship = gopher://ch/\n' >"$T/ship.conf"
refused "xtcd: $T/ship.conf:1: ship = gopher://ch/: expected a ClickHouse HTTP URL such as http://clickhouse:8123/?database=xtc, or none" \
	--ship --config "$T/ship.conf"
printf 'dir = %s\n' "$DIR" >"$T/ship.conf"
refused "xtcd: --ship needs a ClickHouse URL and the segment directory: xtcd --ship http://127.0.0.1:8123/?database=xtc /var/lib/xtcd, or ship = URL and dir = DIR in $T/ship.conf" \
	--ship --config "$T/ship.conf"
echo "ok: --ship's URL and --ship-* flags are checked as their keys are, and go with --ship only"

# --- --check-config
cat >"$T/good.conf" <<EOF
# a file to check
max_bytes = 4G
allow_uids = root, 0
log_level = debug
quota.root = 1G
EOF
out=$("$XTCD" --check-config "$T/good.conf" 2>"$T/err") || fail "--check-config of a good file: exit $?: $(cat "$T/err")"
[ "$out" = "$T/good.conf: OK" ] || fail "--check-config said '$out'"
[ -s "$T/err" ] && fail "--check-config of a good file wrote to stderr: $(cat "$T/err")"
printf 'max_bytes = 4G\n\nsync = sometimes\n' >"$T/bad.conf"
refused "xtcd: $T/bad.conf:3: sync = sometimes: expected never, rotate, or a period in milliseconds from 1 to 3600000" \
	--check-config "$T/bad.conf"
refused "xtcd: --check-config $T/no-such.conf: No such file or directory; give it an existing, readable file" \
	--check-config "$T/no-such.conf"
refused "xtcd: $T/no-such.conf: No such file or directory; give --config an existing file" \
	--config "$T/no-such.conf" --dir "$DIR"
# the flags given with it are checked with it, as the daemon would merge them
refused "xtcd: max_bytes = 4G ($T/good.conf:2) must be at least twice --segment-bytes 4G (one segment being written, one or more kept)" \
	--check-config "$T/good.conf" --segment-bytes 4G
refused "xtcd: --json does not apply to --check-config; see xtcd --help" --check-config "$T/good.conf" --json
# every key of the shipped example, uncommented, is good (alice and xtc:
# a user and a group this machine has)
sed -e 's/^#\([a-z]\)/\1/' -e 's/alice/root/g' -e 's/= xtc$/= root/' "$top_srcdir/contrib/xtcd.conf.example" >"$T/example.conf"
[ "$(grep -c '^[a-z]' "$T/example.conf")" -ge 17 ] || fail "the example lacks keys: $(grep '^[a-z]' "$T/example.conf")"
"$XTCD" --check-config "$T/example.conf" >/dev/null || fail "the shipped example, uncommented, is refused"
echo "ok: --check-config says OK (exit 0) or FILE:LINE (exit 2); the example's every key is good"
"$XTCD" --check-config "$T/good.conf" | sed 's/^/  /'
"$XTCD" --check-config "$T/bad.conf" 2>&1 | sed 's/^/  /'

# --- the two spellings take the same values: names for --allow-uid,
# numbers for --allow-gid, a relative --dir
"$XTCD" --check-config "$T/good.conf" --allow-uid root --allow-gid 0,root >/dev/null ||
	fail "--allow-uid root / --allow-gid 0,root refused"
printf 'dir = segments\n' >"$T/rel.conf"
xtcd_abs=$(cd "$(dirname "$XTCD")" && pwd)/$(basename "$XTCD")
(cd "$T" && "$xtcd_abs" --check-config rel.conf >/dev/null) || fail "a relative dir was refused"
echo "ok: --allow-uid takes names, --allow-gid numbers, like the keys"

# --- --verbose says more; log_level = error says less
start_xtcd -v
grep -q "^xtcd: debug: settings in force: dir=$DIR socket=$SOCK max_bytes=1G " "$T/xtcd.log" ||
	fail "-v: no debug line with the settings in force"
stop_xtcd
: >"$T/xtcd.log"
start_xtcd
grep -q "debug:" "$T/xtcd.log" && fail "a debug line at the default level"
stop_xtcd
printf 'log_level = error\n' >"$T/quiet.conf"
"$XTCD" --dir "$DIR" --socket "$SOCK" --config "$T/quiet.conf" >"$T/quiet.log" 2>&1 &
XTCD_PID=$!
for _ in $(seq 1 500); do [ -S "$SOCK" ] && break; sleep 0.02; done
[ -S "$SOCK" ] || fail "xtcd with log_level = error did not start"
"$LOADGEN" 1 100 0 >/dev/null || fail "an app could not attach"
stop_xtcd
[ -s "$T/quiet.log" ] && fail "log_level = error printed info lines: $(head -n 3 "$T/quiet.log")"
echo "ok: -v adds debug lines, the default has none, log_level = error prints no info line"

# --- log_level = error still says what failed: a directory xtcd cannot use
: >"$T/notadir"
if "$XTCD" --dir "$T/notadir" --socket "$T/other.sock" --config "$T/quiet.conf" >"$T/err.log" 2>&1; then
	fail "xtcd started with a regular file as --dir"
fi
grep -q "^xtcd: --dir $T/notadir: " "$T/err.log" ||
	fail "log_level = error hid the error that stopped xtcd: $(cat "$T/err.log")"
echo "ok: log_level = error keeps the line that says why xtcd could not start"

# --- a --socket that names a file or a directory: refused, and left alone
echo "recorded" >"$T/notasock"
if timeout 10 "$XTCD" --dir "$DIR" --socket "$T/notasock" >"$T/err.log" 2>&1; then
	fail "xtcd started with a regular file as --socket"
fi
[ "$(cat "$T/notasock" 2>/dev/null)" = recorded ] || fail "xtcd deleted the file at --socket"
grep -q "^xtcd: --socket $T/notasock: a file is there, not a socket; .*choose another path" "$T/err.log" ||
	fail "no line saying --socket names a file: $(cat "$T/err.log")"
[ "$(wc -l <"$T/err.log")" -eq 1 ] || fail "more than one line for a file at --socket: $(cat "$T/err.log")"
if timeout 10 "$XTCD" --dir "$DIR" --socket "$DIR" >"$T/err.log" 2>&1; then
	fail "xtcd started with a directory as --socket"
fi
grep -q "^xtcd: --socket $DIR: a directory is there, not a socket" "$T/err.log" ||
	fail "no line saying --socket names a directory: $(cat "$T/err.log")"
echo "ok: a file or directory at --socket is refused in one line and left as it is"
