#!/bin/sh
# bench/setup-lttng.sh - install what `make bench` needs for the LTTng column
# and the latency plot (Debian 12).  Run as root, once per machine.
# Without it `make bench` still runs and prints the xtc-tail column alone.
set -eu
if [ "$(id -u)" != 0 ]; then
	echo "setup-lttng.sh: run as root (apt-get and lttng-sessiond need it)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends \
	lttng-tools liblttng-ust-dev babeltrace2 gnuplot-nox pkg-config
# lttng-sessiond wants the tracing group to exist for its socket; root
# sessions work without the kernel modules (user space tracing only).
getent group tracing >/dev/null || groupadd -r tracing
echo "setup-lttng.sh: lttng-ust $(pkg-config --modversion lttng-ust), $(lttng --version | head -1)"
