# tests/ch_lib.sh - a real ClickHouse server (Debian's clickhouse-server)
# for the shipping tests, started by the test itself on loopback, in its
# own directory, as its own process.  Source it after e2e_lib.sh.
#
#   ch_start       start it (or restart it on the same data); 1 if it
#                  cannot start (the reason is printed)
#   ch_kill        kill -9 it and wait
#   ch_q SQL       run SQL over HTTP, print the answer; fails the test
#                  on an error
CH_SERVER=${CH_SERVER:-/usr/sbin/clickhouse-server}
CH_DIR=$T/clickhouse
CH_PID=
CH_HTTP=

# Two free loopback ports for HTTP and the native protocol.
ch_ports() {
	local p
	for _ in $(seq 1 50); do
		p=$(( 20000 + RANDOM % 30000 ))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null &&
		   ! (exec 3<>/dev/tcp/127.0.0.1/$((p + 1))) 2>/dev/null; then
			CH_HTTP=$p
			return 0
		fi
	done
	return 1
}

ch_config() {
	mkdir -p "$CH_DIR/data" "$CH_DIR/tmp" "$CH_DIR/log"
	cat >"$CH_DIR/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$CH_DIR/log/server.log</log>
    <errorlog>$CH_DIR/log/err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>$CH_HTTP</http_port>
  <tcp_port>$((CH_HTTP + 1))</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$CH_DIR/data/</path>
  <tmp_path>$CH_DIR/tmp/</tmp_path>
  <user_files_path>$CH_DIR/user_files/</user_files_path>
  <format_schema_path>$CH_DIR/format_schemas/</format_schema_path>
  <users_config>$CH_DIR/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <mlock_executable>false</mlock_executable>
</yandex>
XML
	cat >"$CH_DIR/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
}

ch_start() {
	[ -x "$CH_SERVER" ] || { echo "clickhouse-server is not installed ($CH_SERVER)"; return 1; }
	if [ -z "$CH_HTTP" ]; then
		ch_ports || { echo "no free loopback port for ClickHouse"; return 1; }
		ch_config
	fi
	"$CH_SERVER" --config-file="$CH_DIR/config.xml" >>"$CH_DIR/stdout" 2>&1 &
	CH_PID=$!
	for _ in $(seq 1 600); do
		curl -sf "http://127.0.0.1:$CH_HTTP/ping" >/dev/null 2>&1 && return 0
		kill -0 "$CH_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "clickhouse-server did not answer on 127.0.0.1:$CH_HTTP within 60 s:"
	tail -n 5 "$CH_DIR/stdout" "$CH_DIR/log/err.log" 2>/dev/null
	kill -9 "$CH_PID" 2>/dev/null
	CH_PID=
	return 1
}

ch_kill() {
	[ -n "$CH_PID" ] || return 0
	kill -9 "$CH_PID" 2>/dev/null
	wait "$CH_PID" 2>/dev/null
	CH_PID=
}

ch_q() {
	local out
	out=$(curl -sS "http://127.0.0.1:$CH_HTTP/" --data-binary "$1" 2>&1) ||
		fail "ClickHouse query failed: $1: $out"
	case $out in Code:*) fail "ClickHouse refused: $1: $out" ;; esac
	printf '%s\n' "$out"
}
