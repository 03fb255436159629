# tests/viewers/npm.sh - viewers_npm PKG@VERSION...: install npm packages
# (real viewers' own code) once into a cache under the build tree,
# $top_builddir/tests/viewers/npm, and set NODE_MODULES to its
# node_modules.  Exits 77 (skip) when node or npm is missing or npm cannot
# install them (no registry), saying why.  Source it after e2e_lib.sh.
viewers_npm() {
	local dir p missing=
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
		{ echo "SKIP: node and npm are needed to run the viewers' code (Debian: nodejs, npm)"; exit 77; }
	mkdir -p "$top_builddir/tests/viewers/npm" || fail "cannot make $top_builddir/tests/viewers/npm"
	dir=$(cd "$top_builddir/tests/viewers/npm" && pwd)
	for p in "$@"; do
		[ -f "$dir/node_modules/${p%@*}/package.json" ] || missing=1
	done
	if [ -n "$missing" ]; then
		# one install at a time: tests run in parallel under make -j
		( flock 9
		  npm install --no-audit --no-fund --prefix "$dir" --cache "$dir/.cache" "$@" \
		      >"$dir/install.log" 2>&1 ) 9>"$dir/.lock" ||
			{ echo "SKIP: npm install $* failed: $(tail -n 3 "$dir/install.log")"; exit 77; }
	fi
	NODE_MODULES=$dir/node_modules
}
