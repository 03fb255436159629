#!/bin/bash
# Every long option xtcd --help lists is an item of xtcd(8)'s OPTIONS (a
# line after .TP or .TQ naming it), and every key the settings table has is an
# item of xtcd.conf(5): a flag that exists is documented where a reader
# looks for it.
set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed"; exit 77; }
"$top_builddir/xtcd/xtcd" --help >"${TMPDIR:-/tmp}/xtcd-help.$$" 2>&1 || { echo "FAIL: xtcd --help exited $?"; exit 1; }
trap 'rm -f "${TMPDIR:-/tmp}/xtcd-help.$$"' EXIT
printf 'no_such_key = 1\n' >"${TMPDIR:-/tmp}/xtcd-keys.$$.conf"
keys=$("$top_builddir/xtcd/xtcd" --check-config "${TMPDIR:-/tmp}/xtcd-keys.$$.conf" 2>&1 |
       sed -n 's/.*expected one of //p')
rm -f "${TMPDIR:-/tmp}/xtcd-keys.$$.conf"
[ -n "$keys" ] || { echo "FAIL: xtcd --check-config did not list the keys for an unknown one"; exit 1; }
python3 - "${TMPDIR:-/tmp}/xtcd-help.$$" "$top_srcdir/man/xtcd.8" "$top_srcdir/man/xtcd.conf.5" "$keys" <<'PY'
import re, sys
help_text = open(sys.argv[1]).read()
flags = sorted(set(re.findall(r'(?<![\w-])--([a-z][a-z0-9-]+)', help_text)))

def items(path):
    lines = open(path).read().split('\n')
    return [lines[i + 1].replace('\\-', '-') for i, l in enumerate(lines[:-1])
            if l.startswith('.TP') or l.startswith('.TQ')]

bad = 0
page8 = items(sys.argv[2])
for f in flags:
    if not any(re.search(r'--' + re.escape(f) + r'(?![a-z0-9-])', l) for l in page8):
        print(f"FAIL: --{f} is in xtcd --help but no item of xtcd(8) names it")
        bad = 1
page5 = items(sys.argv[3])
keys = [k.strip().replace('.UID', '.') for k in sys.argv[4].split(',')]
for k in keys:
    if not any(re.match(r'\.BI? "?' + re.escape(k) + r'(?![a-z_])', l) for l in page5):
        print(f"FAIL: key {k} of the settings table is not an item of xtcd.conf(5)")
        bad = 1
if not bad:
    print(f"ok: {len(flags)} flags of --help in xtcd(8), {len(keys)} keys in xtcd.conf(5)")
sys.exit(bad)
PY
