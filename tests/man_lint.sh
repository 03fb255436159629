#!/bin/bash
# Every man page is lint-clean: no warnings from groff -man -ww -z, no
# messages at all from mandoc -T lint (when they are installed).
set -u
: "${top_srcdir:=.}"
have=
command -v groff >/dev/null 2>&1 && have="$have groff"
command -v mandoc >/dev/null 2>&1 && have="$have mandoc"
[ -n "$have" ] || { echo "SKIP: neither groff nor mandoc is installed"; exit 77; }
rc=0
n=0
for page in "$top_srcdir"/man/*.[1-9]; do
	n=$((n + 1))
	if command -v groff >/dev/null 2>&1; then
		out=$(groff -man -ww -z "$page" 2>&1)
		[ -z "$out" ] || { echo "FAIL: groff -man -ww -z $page:"; echo "$out"; rc=1; }
	fi
	if command -v mandoc >/dev/null 2>&1; then
		out=$(mandoc -T lint "$page" 2>&1)
		[ -z "$out" ] || { echo "FAIL: mandoc -T lint $page:"; echo "$out"; rc=1; }
	fi
	# a request joined to the text before it is printed as text, and the
	# item it should start is lost into the one above (groff does not warn)
	out=$(grep -nE '[^[:space:]]\.(TP|TQ|PP|LP|IP|SH|SS|RS|RE|EX|EE)([[:space:]]|$)' "$page")
	[ -z "$out" ] || { echo "FAIL: $page: a request not at the start of a line:"; echo "$out"; rc=1; }
done
[ $n -ge 4 ] || { echo "FAIL: only $n man pages in $top_srcdir/man"; exit 1; }
[ $rc -eq 0 ] && echo "ok: $n man pages lint-clean with$have"
exit $rc
