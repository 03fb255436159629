/*
 * xtcd/main.c - the daemon's command line, init chain and teardown.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "proto/xtc_attach.h"
#include "xtcd/conf.h"
#include "xtcd/report/report.h"
#include "xtcd/status.h"
#include "xtcd/read/view.h"
#include "xtcd/xtcd.h"

/* The settings in force: the command line's while it is parsed, then
 * conf_build()'s merge of the defaults, the file and those flags. */
struct config cfg;
static struct config cli;          /* the command line's, for reloads */
static const char *conf_path;      /* --config, or NULL: the default */

struct ev_loop *xtcd_loop;
static char settings[1024];

void session_init_clock(void);

void xlog(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	flockfile(stderr); /* one whole line, also from the sync thread */
	fputs("xtcd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

/* "64M" -> 67108864.  K, M, G, T suffixes are powers of 1024. */
int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *settings_text(void)
{
	return settings;
}

static void settings_build(void)
{
	snprintf(settings, sizeof settings,
	         "dir=%s\nsocket=%s\nmax_bytes=%llu\nsegment_bytes=%llu\nkeep_free=%llu\n"
	         "drain_ms=%u\nio=%s\nsync=%s\nversion=%s\n",
	         cfg.dir, cfg.socket, (unsigned long long)cfg.max_bytes,
	         (unsigned long long)cfg.segment_bytes, (unsigned long long)cfg.keep_free,
	         cfg.drain_ms, store_io_backend(),
	         cfg.sync == SYNC_NEVER ? "never" : cfg.sync == SYNC_ROTATE ? "rotate" : "periodic",
	         PACKAGE_VERSION);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xtcd --dir DIR [--socket PATH] [OPTION]...   run the daemon (foreground)\n"
"       xtcd --status [--socket PATH] [--json]        ask the running daemon\n"
"       xtcd --cat DIR [--json] [FILTER]...           print every record and exit\n"
"       xtcd --follow DIR [-n N|all] [--json] [FILTER]...   print records as written\n"
"       xtcd --export chrome|dial9|xtcl DIR [FILTER]... > FILE   for a trace viewer\n"
"       xtcd --export ctf DIR OUT [FILTER]...         CTF 1.8 for babeltrace2\n"
"       xtcd --stats DIR [--json] [FILTER]...         sessions and loops at a glance\n"
"       xtcd --report DIR [--json] [--svg FILE] [FILTER]...   verdicts: lost wakeups,\n"
"                                stalled loops, latency, off-CPU time\n"
"       xtcd --report DIR --export pprof|collapsed [FILTER]... > FILE   off-CPU profile\n"
"       xtcd --report --diff A B DIR [--json] [FILTER]...   what changed from A to B\n"
"       xtcd --ship [URL [DIR]] [--ship-create] [--ship-host NAME]   every record into\n"
"                                ClickHouse (URL, DIR default to ship and dir of the file)\n"
"\n"
"xtcd collects the events that applications record with libxtctail.  An\n"
"application attaches by running with XTC_TAIL_SHM=PATH (the socket below) in\n"
"its environment; xtcd maps its shared-memory rings, drains them, and writes\n"
"segments DIR/xtc-<seq>.seg within a byte budget.\n"
"\n"
"Daemon options (flags win over the configuration file):\n"
"      --config FILE        read settings from FILE (default %s;\n"
"                           a missing default file is fine); SIGHUP re-reads it\n"
"  -d, --dir DIR            segment directory (must exist and be writable)\n"
"  -s, --socket PATH        attach socket (default %s)\n"
"      --max-bytes N        all segments together at most N bytes (default 1G)\n"
"      --segment-bytes N    one segment at most N bytes (default 64M, min 64K)\n"
"      --keep-free N        also keep N bytes of the filesystem free (default 0)\n"
"      --drain-ms N         drain every N ms, and on producer nudges (default 20)\n"
"      --sync WHEN          fdatasync: never, rotate (default), or every N ms\n"
"      --pwrite             write with pwrite(2) instead of io_uring\n"
"      --allow-uid LIST     only these uids (comma-separated) may attach; root always may\n"
"      --allow-gid LIST     also these groups (the peer's primary gid) may attach\n"
"      --hello-timeout-ms N drop a client that sends no hello in N ms (default 5000)\n"
"      --max-clients N      at most N clients attached or connecting (default 4096)\n"
"      --metrics-file PATH  write Prometheus metrics there every 5 s, for node-exporter's\n"
"                           textfile collector (PATH ends in .prom)\n"
"Status:\n"
"      --status             ask the daemon at --socket (or the file's socket): per\n"
"                           session pid, uptime, ring fill per loop, events/s, drops,\n"
"                           bytes; segments, bytes used of the budget, io backend\n"
"Reading (these only read DIR; the daemon may be running or not):\n"
"      --cat DIR            print every record of the segments in DIR, in order\n"
"      --follow DIR         print the last records, then each new one as it is written\n"
"  -n, --lines N|all        with --follow: show the last N records first (default 10)\n"
"      --export FMT DIR     write the records to stdout as chrome (trace JSON for\n"
"                           ui.perfetto.dev: slices, instants, wakeup chains as\n"
"                           flow arrows), dial9, or xtcl (binary: redirect it)\n"
"      --export ctf DIR OUT write a CTF 1.8 trace (metadata and one stream per\n"
"                           loop) into the new or empty directory OUT, for\n"
"                           babeltrace2 and Trace Compass\n"
"      --stats DIR          per session and loop: events, drops, how it ended\n"
"      --report DIR         find wakeup chains that never completed (never submitted,\n"
"                           never reaped, not handed on, never run), failed submits,\n"
"                           dropped lifecycle notices and loops that went silent; says\n"
"                           \"cannot tell\" where dropped records could hide the answer;\n"
"                           then loops, wake-to-run latency and off-CPU time per proc\n"
"      --diff A B           with --report: rank what changed from window A to window B,\n"
"                           each FROM..TO such as -10m..-5m or @1764410400..@1764410700\n"
"      --svg FILE           with --report: also draw the loop timeline and the latency\n"
"                           histogram as a self-contained SVG\n"
"      --export pprof|collapsed  with --report: the off-CPU profile (gzipped pprof:\n"
"                           redirect it; or collapsed stacks for flame graphs)\n"
"      --stall D            with --report: how long a chain or loop must wait before it\n"
"                           counts as stuck (default 1s)\n"
"      --top N              with --report: rows of the per-proc tables (default 10)\n"
"      --json               with --cat, --follow, --stats or --report: JSON lines;\n"
"                           with --status: one JSON object\n"
"      --color[=WHEN]       colour drop and session lines: auto (default), always, never\n"
"Shipping (xtcd --ship; see SHIPPING in xtcd(8)):\n"
"      --ship-create        create the tables events, sessions and drops first\n"
"      --ship-host NAME     the host name shipped (default: the segments' own)\n"
"      --ship-cursor FILE   where the position acknowledged by ClickHouse is kept\n"
"                           (default DIR/.xtcd-ship.cursor)\n"
"      --ship-batch N       send when N rows wait (default 65536)\n"
"      --ship-batch-ms MS   ... or when the oldest has waited MS ms (default 1000)\n"
"      --ship-metrics FILE  the shipper's node-exporter textfile (default: xtcd-ship.prom\n"
"                           next to the file's metrics_file, if set)\n"
"Filters (with --cat, --follow, --export, --stats or --report; all must match):\n"
"      --session ID         one session (the ids --stats lists)\n"
"      --pid PID            the sessions of one OS process\n"
"      --loop N             the events and drops of loop N\n"
"      --kind K[,K...]      these event kinds (RUN, WAKE, ...); drops, session starts\n"
"                           and ends still show\n"
"      --since TIME         from TIME on: 'YYYY-MM-DD HH:MM:SS[.ffffff]' (local),\n"
"                           'YYYY-MM-DDTHH:MM:SS[Z]', @EPOCH, or ago: -30s -5m -2h -1d\n"
"      --until TIME         before TIME (the same forms)\n"
"  -h, --help               this help\n"
"  -V, --version            the version\n"
"\n"
"Sizes take K, M, G or T suffixes (powers of 1024).\n"
"\n"
"Examples:\n"
"  xtcd --dir /var/lib/xtcd --socket /run/xtcd/xtcd.sock --max-bytes 4G\n"
"  xtcd --status                 (systemctl reload xtcd re-reads the configuration)\n"
"  XTC_TAIL_SHM=/run/xtcd/xtcd.sock ./my-server\n"
"  xtcd --cat /var/lib/xtcd --json | jq 'select(.type==\"session_end\")'\n"
"  xtcd --stats /var/lib/xtcd\n"
"  xtcd --follow /var/lib/xtcd --session 3 --kind RUN,WAKE\n"
"  xtcd --cat /var/lib/xtcd --pid 4242 --since -5m --until -1m\n"
"  xtcd --export chrome /var/lib/xtcd --session 3 > trace.json   (open in ui.perfetto.dev)\n"
"  xtcd --export dial9 /var/lib/xtcd --session 3 > trace.bin\n"
"  xtcd --export ctf /var/lib/xtcd /tmp/ctf && babeltrace2 /tmp/ctf\n"
"  xtcd --report /var/lib/xtcd --pid 4242 --svg report.svg\n"
"  xtcd --report /var/lib/xtcd --export pprof > offcpu.pb.gz   (go tool pprof offcpu.pb.gz)\n"
"  xtcd --report --diff -10m..-5m -5m..now /var/lib/xtcd\n"
"  xtcd --ship --ship-create 'http://127.0.0.1:8123/?database=xtc' /var/lib/xtcd\n"
"\n"
"See xtcd(8), xtcd.conf(5), xtc_tail(3) and xtc-segment(5).\n", conf_default_path(),
	        XTC_DEFAULT_SOCKET);
}

/* One line naming the bad flag and what it takes, then exit 2. */
static void bad_value(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, "xtcd: %s %s: %s; see xtcd --help\n", flag, value, want);
	exit(2);
}

static unsigned parse_uint(const char *flag, const char *s, unsigned min, unsigned max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || *s == '\0' || *s == '-' || v < min || v > max) {
		char want[96];

		snprintf(want, sizeof want, "expected a whole number from %u to %u", min, max);
		bad_value(flag, s, want);
	}
	return (unsigned)v;
}

static void parse_uids(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		uid_t *p = realloc(cfg.allow_uids, (cfg.allow_uid_count + 1) * sizeof *p);

		if (p == NULL)
			exit(1);
		cfg.allow_uids = p;
		cfg.allow_uids[cfg.allow_uid_count++] = parse_uint("--allow-uid", tok, 0, UINT_MAX - 1);
	}
	free(copy);
}

enum { OPT_MAX_BYTES = 256, OPT_SEGMENT_BYTES, OPT_KEEP_FREE, OPT_DRAIN_MS, OPT_SYNC,
       OPT_PWRITE, OPT_ALLOW_UID, OPT_HELLO_TIMEOUT, OPT_MAX_CLIENTS, OPT_CAT, OPT_JSON,
       OPT_FOLLOW, OPT_EXPORT, OPT_STATS, OPT_COLOR, OPT_FILTER,
       OPT_CONFIG, OPT_STATUS, OPT_ALLOW_GID,
       OPT_REPORT, OPT_DIFF, OPT_SVG, OPT_STALL, OPT_TOP, OPT_METRICS_FILE };

static const struct option options[] = {
	{ "dir", required_argument, NULL, 'd' },
	{ "socket", required_argument, NULL, 's' },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "segment-bytes", required_argument, NULL, OPT_SEGMENT_BYTES },
	{ "keep-free", required_argument, NULL, OPT_KEEP_FREE },
	{ "drain-ms", required_argument, NULL, OPT_DRAIN_MS },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "pwrite", no_argument, NULL, OPT_PWRITE },
	{ "allow-uid", required_argument, NULL, OPT_ALLOW_UID },
	{ "hello-timeout-ms", required_argument, NULL, OPT_HELLO_TIMEOUT },
	{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
	{ "allow-gid", required_argument, NULL, OPT_ALLOW_GID },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "metrics-file", required_argument, NULL, OPT_METRICS_FILE },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "cat", required_argument, NULL, OPT_CAT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "follow", required_argument, NULL, OPT_FOLLOW },
	{ "lines", required_argument, NULL, 'n' },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "color", optional_argument, NULL, OPT_COLOR },
	{ "session", required_argument, NULL, OPT_FILTER },
	{ "pid", required_argument, NULL, OPT_FILTER },
	{ "loop", required_argument, NULL, OPT_FILTER },
	{ "kind", required_argument, NULL, OPT_FILTER },
	{ "since", required_argument, NULL, OPT_FILTER },
	{ "until", required_argument, NULL, OPT_FILTER },
	{ "report", no_argument, NULL, OPT_REPORT },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "stall", required_argument, NULL, OPT_STALL },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The reading modes and their options; none set: run the daemon. */
struct mode {
	const char *cat_dir;
	const char *follow_dir;
	const char *stats_dir;
	const char *export_format;
	const char *export_dir;      /* the argument after --export FORMAT */
	const char *export_out;      /* ctf: the directory after it */
	struct read_opts ro;
	const char *reading_opt;     /* a reading-only option given, for errors */
	int lines_given;
	int status;                  /* --status: ask the running daemon */
	int report;                  /* --report, or --export pprof|collapsed */
	const char *report_dir;
	const char *report_opt;      /* a report-only option given, for errors */
	struct report_opts rep;
};

/* -n N|all */
static void parse_lines(const char *s, struct mode *m)
{
	unsigned long long v;
	char *end;

	m->lines_given = 1;
	if (strcmp(s, "all") == 0) {
		m->ro.lines = -1;
		return;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || *s < '0' || *s > '9' || v > 1000000000000ULL)
		bad_value("-n", s, "expected a number of records, such as 50, or all");
	m->ro.lines = (long long)v;
}

/* --session, --pid, --loop, --kind, --since, --until */
static void parse_filter(const char *name, const char *value, struct mode *m)
{
	char why[512], flag[32];

	snprintf(flag, sizeof flag, "--%s", name);
	if (filter_parse(&m->ro.filter, name, value, real_ns(), why, sizeof why) < 0)
		bad_value(flag, value, why);
	if (m->reading_opt == NULL)
		m->reading_opt = name;
}

/* --diff A B, --svg FILE, --stall D, --top N (the report's own options).
 * --diff takes two values: B is the next argument, taken here before
 * getopt can read a relative window such as -5m..now as options. */
static void parse_report_opt(int c, const char *value, int argc, char **argv, struct mode *m)
{
	char why[512];

	switch (c) {
	case OPT_DIFF:
		m->report_opt = "diff";
		if (optind >= argc)
			bad_value("--diff", value, "expected two windows: --diff A B, such as "
			          "--diff -10m..-5m -5m..now");
		for (int w = 0; w < 2; w++) {
			const char *v = w ? argv[optind++] : value;

			if (report_parse_window(v, real_ns(), &m->rep.diff_win[w], why, sizeof why) < 0)
				bad_value("--diff", v, why);
			m->rep.diff_text[w] = v;
		}
		m->rep.diff = 1;
		break;
	case OPT_SVG:
		m->report_opt = "svg";
		m->rep.svg_path = value;
		break;
	case OPT_STALL:
		m->report_opt = "stall";
		if (report_parse_duration(value, &m->rep.stall_ns) < 0 || m->rep.stall_ns == 0)
			bad_value("--stall", value, "expected a duration such as 500ms, 2s or 1m");
		break;
	case OPT_TOP:
		m->report_opt = "top";
		m->rep.top = parse_uint("--top", value, 1, 1000000000);
		break;
	}
}

/* --report: its directory and what may go with it. */
static void check_report(int argc, char **argv, struct mode *m)
{
	if (optind >= argc) {
		fprintf(stderr, "xtcd: --report needs the segment directory: xtcd --report DIR\n");
		exit(2);
	}
	m->report_dir = argv[optind++];
	if (m->rep.export_format && (m->ro.json || m->rep.diff)) {
		fprintf(stderr, "xtcd: --export %s writes a profile: it does not go with --%s\n",
		        m->rep.export_format, m->ro.json ? "json" : "diff");
		exit(2);
	}
	if (m->ro.color || m->lines_given) {
		fprintf(stderr, "xtcd: --%s does not apply to --report; see xtcd --help\n",
		        m->ro.color ? "color" : "lines");
		exit(2);
	}
}

/* Check that the options make one reading mode (or none) and fit it. */
static void check_reading_mode(int argc, char **argv, struct mode *m)
{
	int modes;

	if (m->export_format != NULL && report_export_format_valid(m->export_format)) {
		m->report = 1;               /* --export pprof|collapsed comes from --report */
		m->rep.export_format = m->export_format;
	}
	modes = (m->cat_dir != NULL) + (m->follow_dir != NULL) + (m->stats_dir != NULL) +
	        (m->export_format != NULL && !m->report) + m->status + m->report;
	if (modes > 1) {
		fprintf(stderr, "xtcd: give one of --cat, --follow, --export, --stats, --report and "
		        "--status\n");
		exit(2);
	}
	if (m->status && m->reading_opt != NULL && strcmp(m->reading_opt, "json") != 0) {
		fprintf(stderr, "xtcd: --%s does not apply to --status; see xtcd --help\n", m->reading_opt);
		exit(2);
	}
	if (m->report_opt != NULL && !m->report) {
		fprintf(stderr, "xtcd: --%s applies to --report only; see xtcd --help\n", m->report_opt);
		exit(2);
	}
	if (m->report)
		check_report(argc, argv, m);
	if (m->export_format != NULL && !m->report) {
		if (!export_format_valid(m->export_format))
			bad_value("--export", m->export_format,
			          "expected chrome, ctf, dial9 or xtcl (or, with --report, pprof or "
			          "collapsed)");
		if (optind >= argc) {
			fprintf(stderr, "xtcd: --export %s needs the segment directory: xtcd --export %s "
			        "DIR > FILE\n", m->export_format, m->export_format);
			exit(2);
		}
		m->export_dir = argv[optind++];
		if (export_format_is_dir(m->export_format)) {
			if (optind >= argc) {
				fprintf(stderr, "xtcd: --export %s needs the directory to write to: xtcd "
				        "--export %s DIR OUT/\n", m->export_format, m->export_format);
				exit(2);
			}
			m->export_out = argv[optind++];
		}
		if (m->ro.json) {
			fprintf(stderr, "xtcd: --json does not apply to --export; see xtcd --help\n");
			exit(2);
		}
	}
	if (modes == 0 && m->reading_opt != NULL) {
		fprintf(stderr, "xtcd: --%s applies to --cat, --follow, --export, --stats or --report; "
		        "see xtcd --help\n", m->reading_opt);
		exit(2);
	}
	if (m->lines_given && m->follow_dir == NULL) {
		fprintf(stderr, "xtcd: -n applies to --follow only; see xtcd --help\n");
		exit(2);
	}
}

static void parse_args(int argc, char **argv, struct mode *m)
{
	enum view_color color;
	int c, idx = -1;

	m->ro.lines = 10;
	report_opts_init(&m->rep);
	while ((c = getopt_long(argc, argv, "d:s:n:hV", options, &idx)) != -1) {
		switch (c) {
		case 'd': cfg.dir = optarg; break;
		case 's': cfg.socket = optarg; break;
		case OPT_MAX_BYTES:
			if (parse_size(optarg, &cfg.max_bytes) < 0)
				bad_value("--max-bytes", optarg, "expected a size such as 512M or 4G");
			break;
		case OPT_SEGMENT_BYTES:
			if (parse_size(optarg, &cfg.segment_bytes) < 0 || cfg.segment_bytes < (64u << 10))
				bad_value("--segment-bytes", optarg, "expected a size of at least 64K, such as 64M");
			break;
		case OPT_KEEP_FREE:
			if (parse_size(optarg, &cfg.keep_free) < 0)
				bad_value("--keep-free", optarg, "expected a size such as 1G");
			break;
		case OPT_DRAIN_MS: cfg.drain_ms = parse_uint("--drain-ms", optarg, 1, 60000); break;
		case OPT_SYNC:
			if (strcmp(optarg, "never") == 0)
				cfg.sync = SYNC_NEVER;
			else if (strcmp(optarg, "rotate") == 0)
				cfg.sync = SYNC_ROTATE;
			else if (*optarg >= '0' && *optarg <= '9') {
				cfg.sync = SYNC_PERIOD;
				cfg.sync_ms = parse_uint("--sync", optarg, 1, 3600000);
			} else
				bad_value("--sync", optarg, "expected never, rotate, or a period in ms");
			break;
		case OPT_PWRITE: cfg.force_pwrite = 1; break;
		case OPT_ALLOW_UID: parse_uids(optarg); break;
		case OPT_HELLO_TIMEOUT:
			cfg.hello_timeout_ms = parse_uint("--hello-timeout-ms", optarg, 1, 600000);
			break;
		case OPT_MAX_CLIENTS: cfg.max_clients = parse_uint("--max-clients", optarg, 1, 1000000); break;
		case OPT_ALLOW_GID: {
			char why[256];

			if (conf_parse_ids(optarg, 1, &cfg.allow_gids, &cfg.allow_gid_count, why, sizeof why) < 0)
				bad_value("--allow-gid", optarg, why);
			break;
		}
		case OPT_CONFIG: conf_path = optarg; break;
		case OPT_METRICS_FILE:
			if (optarg[0] != '/' || strlen(optarg) < 6 ||
			    strcmp(optarg + strlen(optarg) - 5, ".prom") != 0)
				bad_value("--metrics-file", optarg, "expected an absolute path ending in "
				          ".prom, in node-exporter's textfile directory");
			cfg.metrics_file = optarg;
			break;
		case OPT_STATUS: m->status = 1; break;
		case OPT_REPORT: m->report = 1; break;
		case OPT_DIFF: case OPT_SVG: case OPT_STALL: case OPT_TOP:
			parse_report_opt(c, optarg, argc, argv, m);
			break;
		case OPT_CAT: m->cat_dir = optarg; break;
		case OPT_JSON: m->ro.json = 1; m->reading_opt = "json"; break;
		case OPT_FOLLOW: m->follow_dir = optarg; break;
		case OPT_EXPORT: m->export_format = optarg; break;
		case OPT_STATS: m->stats_dir = optarg; break;
		case 'n': parse_lines(optarg, m); break;
		case OPT_COLOR:
			if (view_parse_color(optarg ? optarg : "always", &color) < 0)
				bad_value("--color", optarg, "expected auto, always or never");
			m->ro.color = (int)color;
			m->reading_opt = "color";
			break;
		case OPT_FILTER: parse_filter(options[idx].name, optarg, m); break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("xtcd %s\n", PACKAGE_VERSION); exit(0);
		default:
			fprintf(stderr, "xtcd: unknown or incomplete option; see xtcd --help\n");
			exit(2);
		}
	}
	check_reading_mode(argc, argv, m);
	if (optind < argc) {
		fprintf(stderr, "xtcd: unexpected argument '%s'; see xtcd --help\n", argv[optind]);
		exit(2);
	}
}

/* Merge the defaults, the configuration file and the command line into
 * cfg (for the daemon, or --status: its socket); exit 2 on a bad file. */
static void load_config(int daemon)
{
	char err[1024];

	cli = cfg;
	if (conf_build(&cfg, conf_path, &cli, daemon, err, sizeof err) < 0) {
		fprintf(stderr, "xtcd: %s\n", err);
		exit(2);
	}
}

/* ---------------------------------------------------------------------
 * The loop
 */

static ev_timer drain_w;
static ev_signal sig_w[3];

static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	session_drain_all();
}

/* Keep the setting in force when the new file changes one that needs a
 * restart (the directory, the socket, the I/O backend). */
static void keep_for_restart(const char *key, const char **now, const char **next)
{
	const char *t;

	if (strcmp(*now, *next) == 0)
		return;
	xlog("SIGHUP: %s changed to %s: a restart is needed to apply it; still using %s", key, *next,
	     *now);
	t = *now; /* swap: the struct freed below takes the new string */
	*now = *next;
	*next = t;
}

/* SIGHUP: read the file again and apply what can change while running: the
 * budget, drain_ms, sync, the access rule, the quotas, the hello timeout
 * and max_clients.  A bad file changes nothing.  Flags still win. */
static void reload_config(void)
{
	struct config next, old;
	char err[1024], q[32], b[32];

	if (conf_build(&next, conf_path, &cli, 1, err, sizeof err) < 0) {
		xlog("SIGHUP: %s; keeping the settings in force", err);
		return;
	}
	keep_for_restart("dir", &cfg.dir, &next.dir);
	keep_for_restart("socket", &cfg.socket, &next.socket);
	if (next.force_pwrite != cfg.force_pwrite) {
		xlog("SIGHUP: pwrite changed: a restart is needed to apply it; still writing with %s",
		     store_io_backend());
		next.force_pwrite = cfg.force_pwrite;
	}
	old = cfg;
	cfg = next;
	if (cfg.drain_ms != old.drain_ms) {
		ev_timer_set(&drain_w, cfg.drain_ms / 1000.0, cfg.drain_ms / 1000.0);
		ev_timer_again(xtcd_loop, &drain_w);
	}
	conf_free(&old);
	store_reconfigure();
	settings_build();
	xlog("SIGHUP: re-read %s: max_bytes=%llu segment_bytes=%llu keep_free=%llu drain_ms=%u "
	     "sync=%s hello_timeout_ms=%u max_clients=%u allowed=%s quota=%s (%zu per-uid)",
	     conf_path ? conf_path : conf_default_path(), (unsigned long long)cfg.max_bytes,
	     (unsigned long long)cfg.segment_bytes, (unsigned long long)cfg.keep_free, cfg.drain_ms,
	     cfg.sync == SYNC_NEVER ? "never" : cfg.sync == SYNC_ROTATE ? "rotate"
	                                     : (snprintf(b, sizeof b, "%u", cfg.sync_ms), b),
	     cfg.hello_timeout_ms, cfg.max_clients,
	     cfg.allow_uids == NULL && cfg.allow_gids == NULL ? "any" : "listed",
	     conf_size_text(cfg.quota, q, sizeof q), cfg.quota_count);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	switch (w->signum) {
	case SIGTERM:
	case SIGINT:
		xlog("%s: draining every ring and closing every session", strsignal(w->signum));
		ev_break(loop, EVBREAK_ALL);
		break;
	case SIGHUP:
		reload_config();
		break;
	}
}

/* Allow as many descriptors as the hard limit: each client holds two. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int run_daemon(void)
{
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	int rc = 1;

	sigaction(SIGPIPE, &ign, NULL);
	raise_fd_limit();
	xtcd_loop = ev_default_loop(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
	if (xtcd_loop == NULL) {
		xlog("cannot start the event loop");
		return 1;
	}
	session_init_clock();
	/* The socket first: a second xtcd pointed at a directory in use must
	 * fail before it touches a segment. */
	if (server_init(xtcd_loop) < 0)
		goto out;
	if (store_init(xtcd_loop) < 0)
		goto out_server;
	settings_build();
	status_init(xtcd_loop);
	metrics_start(xtcd_loop);
	for (int i = 0; i < 3; i++) {
		ev_signal_init(&sig_w[i], signal_cb, sigs[i]);
		ev_signal_start(xtcd_loop, &sig_w[i]);
	}
	ev_timer_init(&drain_w, drain_cb, cfg.drain_ms / 1000.0, cfg.drain_ms / 1000.0);
	ev_timer_start(xtcd_loop, &drain_w);
	xlog("listening on %s, writing %s (budget %llu bytes, segments of %llu, %s)", server_path(),
	     cfg.dir, (unsigned long long)cfg.max_bytes, (unsigned long long)cfg.segment_bytes,
	     store_io_backend());
	status_notify("READY=1\nSTATUS=listening");
	ev_run(xtcd_loop, 0);
	status_notify("STOPPING=1\nSTATUS=draining every ring and closing every session");
	ev_timer_stop(xtcd_loop, &drain_w);
	server_stop_accepting();
	session_shutdown_all();
	rc = 0;
	metrics_stop();
	status_fini();
	store_fini(1);
out_server:
	server_fini();
out:
	return rc;
}

int main(int argc, char **argv)
{
	struct mode m = { 0 };

	if (ship_wanted(argc, argv))
		return ship_main(argc, argv);
	conf_unset(&cfg);
	parse_args(argc, argv, &m);
	if (m.cat_dir != NULL)
		return xtcd_cat(m.cat_dir, &m.ro, stdout);
	if (m.follow_dir != NULL)
		return xtcd_follow(m.follow_dir, &m.ro, stdout);
	if (m.report)
		return xtcd_report(m.report_dir, &m.ro, &m.rep, stdout);
	if (m.export_format != NULL)
		return xtcd_export(m.export_format, m.export_dir, m.export_out, &m.ro,
		                   report_export_chains, stdout);
	if (m.stats_dir != NULL)
		return xtcd_stats(m.stats_dir, &m.ro, stdout);
	load_config(!m.status);
	if (m.status)
		return status_client(cfg.socket, m.ro.json, stdout);
	return run_daemon();
}
