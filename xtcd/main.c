/*
 * xtcd/main.c - the daemon's command line, init chain and teardown.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/common/clock.h"
#include "xtcd/conf.h"
#include "xtcd/report/report.h"
#include "xtcd/settings.h"
#include "xtcd/status.h"
#include "xtcd/read/view.h"
#include "xtcd/xtcd.h"

/* The settings in force: conf_build()'s merge of the defaults, the file
 * and the flags. */
struct config cfg;
static struct settings_cli cli;    /* the flags as given, for reloads */
static const char *conf_path;      /* --config, or NULL: the default */

struct ev_loop *xtcd_loop;
static char settings[1024];

void session_init_clock(void);

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
"       xtcd --check-config FILE [OPTION]...          check a configuration file\n"
"       xtcd --cat DIR [--json] [FILTER]...           print every record and exit\n"
"       xtcd --follow DIR [-n N|all] [--json] [FILTER]...   print records as written\n"
"       xtcd --export chrome|dial9|xtcl DIR [FILTER]... > FILE   for a trace viewer\n"
"       xtcd --export ctf DIR OUT [FILTER]...         CTF 1.8 for babeltrace2\n"
"       xtcd --stats DIR [--json] [FILTER]...         sessions and loops at a glance\n"
"       xtcd --report DIR [--json] [--svg FILE] [FILTER]...   verdicts: lost wakeups,\n"
"                                stalled loops, latency, off-CPU time\n"
"       xtcd --report DIR --export pprof|collapsed [FILTER]... > FILE   off-CPU profile\n"
"       xtcd --report --diff A B DIR [--json] [FILTER]...   what changed from A to B\n"
"       xtcd --ship [URL [DIR]] [--ship-create] [--ship-host NAME]...   every\n"
"                                record into ClickHouse (default: ship, dir of the file)\n"
"\n"
"xtcd collects the events that applications record with libxtctail.  An\n"
"application attaches by running with XTC_TAIL_SHM=PATH (the socket below) in\n"
"its environment; xtcd maps its shared-memory rings, drains them, and writes\n"
"segments DIR/xtc-<seq>.seg within a byte budget.\n"
"\n"
"Daemon options (flags win over the configuration file):\n"
"      --config FILE        read settings from FILE (default %s;\n"
"                           a missing default file is fine); SIGHUP re-reads it\n"
"      --check-config FILE  check FILE (and the flags given with it) and exit:\n"
"                           0 and one line when it is good, 2 and FILE:LINE if not\n",
	        conf_default_path());
	settings_help(f, 0);
	fprintf(f,
"Shipping (xtcd --ship; each is a key of xtcd.conf too: ship_create...):\n");
	settings_help(f, 1);
	fprintf(f,
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
"Sizes take K, M, G or T suffixes (powers of 1024).  Every daemon option is also\n"
"a key of xtcd.conf(5), with the same values: --max-bytes is max_bytes,\n"
"--allow-uid allow_uids, --verbose log_level.\n"
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
"See xtcd(8), xtcd.conf(5), xtc_tail(3) and xtc-segment(5).\n");
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

/* The options of the modes; the settings' come from the table, with
 * values from OPT_SETTING on. */
enum { OPT_CAT = 256, OPT_JSON, OPT_FOLLOW, OPT_EXPORT, OPT_STATS, OPT_COLOR, OPT_FILTER,
       OPT_CONFIG, OPT_CHECK_CONFIG, OPT_STATUS, OPT_REPORT, OPT_DIFF, OPT_SVG, OPT_STALL, OPT_TOP,
       OPT_SHIP, OPT_SETTING = 512 };

static const struct option mode_options[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", required_argument, NULL, OPT_CHECK_CONFIG },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "ship", no_argument, NULL, OPT_SHIP },
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
};
#define NMODE_OPTIONS (sizeof mode_options / sizeof mode_options[0])

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
	int ship;                    /* --ship [URL [DIR]]: into ClickHouse */
	const char *check_config;    /* --check-config FILE */
	int report;                  /* --report, or --export pprof|collapsed */
	int report_given;            /* --report itself */
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
	static char flags[64];

	/* messages name the flags given: --report, --export pprof, or both */
	snprintf(flags, sizeof flags, "%s%s%s%s", m->report_given ? "--report" : "",
	         m->report_given && m->rep.export_format ? " " : "",
	         m->rep.export_format ? "--export " : "",
	         m->rep.export_format ? m->rep.export_format : "");
	m->rep.flags = flags;
	if (optind >= argc) {
		fprintf(stderr, "xtcd: %s needs the segment directory: xtcd %s DIR%s\n", flags, flags,
		        m->rep.export_format ? " > FILE" : "");
		exit(2);
	}
	m->report_dir = argv[optind++];
	if (m->rep.export_format && (m->ro.json || m->rep.diff)) {
		fprintf(stderr, "xtcd: --export %s writes a profile: it does not go with --%s\n",
		        m->rep.export_format, m->ro.json ? "json" : "diff");
		exit(2);
	}
	if (m->ro.color || m->lines_given) {
		fprintf(stderr, "xtcd: --%s does not apply to %s; see xtcd --help\n",
		        m->ro.color ? "color" : "lines", flags);
		exit(2);
	}
}

/* The --ship-* flags go with --ship only; with it, of the daemon's flags
 * only --dir (DIR) and --metrics-file (whose directory gets the
 * shipper's textfile) mean something. */
static void check_ship_flags(int ship)
{
	for (size_t i = 0; i < settings_count; i++) {
		const struct setting *s = &settings_table[i];
		int ok = ship ? (s->flags & SETTING_SHIP) || strcmp(s->key, "dir") == 0 ||
		                strcmp(s->key, "metrics_file") == 0
		              : !(s->flags & SETTING_SHIP);

		if (cli.value[i] == NULL || ok)
			continue;
		if (ship)
			fprintf(stderr, "xtcd: --%s does not apply to --ship; see xtcd --help\n", s->flag);
		else
			fprintf(stderr, "xtcd: --%s applies to --ship only; see xtcd --help\n", s->flag);
		exit(2);
	}
}

/* The reading modes take their directory as an argument and read no
 * settings (no configuration file either): a daemon flag given with one
 * would do nothing, so it is refused rather than ignored. */
static void check_no_settings(const char *mode)
{
	for (size_t i = 0; i < settings_count; i++) {
		if (cli.value[i] == NULL)
			continue;
		fprintf(stderr, "xtcd: --%s is a setting of the daemon; it does not apply to %s, "
		        "which reads the directory given to it; see xtcd --help\n",
		        settings_table[i].flag, mode);
		exit(2);
	}
}

/* One argument of --ship into the row of key, checked as its flag is. */
static void take_ship_arg(const char *key, const char *value, const char *said)
{
	const struct setting *s = settings_find_key(key);
	size_t row = (size_t)(s - settings_table);
	struct config scratch = { 0 };
	char err[1024];
	int r;

	if (cli.value[row] != NULL) {
		fprintf(stderr, "xtcd: %s: the directory is given twice, also as --%s; give it once\n",
		        said, s->flag);
		exit(2);
	}
	r = settings_apply(s, s->key, value, said, &scratch, err, sizeof err);
	settings_free(&scratch);
	if (r < 0) {
		fprintf(stderr, "xtcd: %s; see xtcd --help\n", err);
		exit(2);
	}
	cli.value[row] = strdup(value);
}

/* --ship [URL [DIR]]: the arguments after the options. */
static void take_ship_args(int argc, char **argv)
{
	char said[PATH_MAX + 64];

	if (optind < argc) {
		snprintf(said, sizeof said, "--ship %s", argv[optind]);
		take_ship_arg("ship", argv[optind++], said);
	}
	if (optind < argc) {
		snprintf(said, sizeof said, "--ship URL %s", argv[optind]);
		take_ship_arg("dir", argv[optind++], said);
	}
}

/* The reading mode's flag, or NULL for the daemon, --status, --ship and
 * --check-config. */
static const char *reading_mode(const struct mode *m)
{
	return m->cat_dir != NULL ? "--cat" : m->follow_dir != NULL ? "--follow" :
	       m->stats_dir != NULL ? "--stats" : m->report ? "--report" :
	       m->export_format != NULL ? "--export" : NULL;
}

/* Check that the options make one reading mode (or none) and fit it. */
static void check_reading_mode(int argc, char **argv, struct mode *m)
{
	int modes;

	m->report_given = m->report;
	if (m->export_format != NULL && report_export_format_valid(m->export_format)) {
		m->report = 1;               /* --export pprof|collapsed comes from --report */
		m->rep.export_format = m->export_format;
	} else if (m->export_format != NULL && m->report) {
		fprintf(stderr, "xtcd: --report --export takes pprof or collapsed, not %s; for a %s "
		        "export of the records: xtcd --export %s DIR %s\n", m->export_format,
		        m->export_format, m->export_format,
		        export_format_is_dir(m->export_format) ? "OUT" : "> FILE");
		exit(2);
	}
	modes = (m->cat_dir != NULL) + (m->follow_dir != NULL) + (m->stats_dir != NULL) +
	        (m->export_format != NULL && !m->report) + m->status + m->report +
	        (m->check_config != NULL) + m->ship;
	if (modes > 1) {
		fprintf(stderr, "xtcd: give one of --cat, --follow, --export, --stats, --report, "
		        "--status, --ship and --check-config\n");
		exit(2);
	}
	if (m->ship && m->reading_opt != NULL) {
		fprintf(stderr, "xtcd: --%s does not apply to --ship; see xtcd --help\n", m->reading_opt);
		exit(2);
	}
	check_ship_flags(m->ship);
	if (m->ship)
		take_ship_args(argc, argv);
	if (reading_mode(m) != NULL)
		check_no_settings(reading_mode(m));
	if (m->check_config != NULL && m->reading_opt != NULL) {
		fprintf(stderr, "xtcd: --%s does not apply to --check-config; see xtcd --help\n",
		        m->reading_opt);
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

/* "--max-bytes, --max-clients": the options name (n bytes) abbreviates;
 * returns how many. */
static int abbreviates(const struct option *opts, const char *name, size_t n, char *buf,
                       size_t len)
{
	int count = 0;

	buf[0] = '\0';
	for (; opts->name != NULL; opts++)
		if (strncmp(opts->name, name, n) == 0 && strlen(opts->name) > n && count++ < 4)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s--%s", count > 1 ? ", " : "",
			         opts->name);
	return count;
}

/* One line for an option getopt refused (opterr is 0: getopt says
 * nothing), then exit 2. */
static void bad_option(int c, int argc, char **argv, const struct option *opts)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	const char *like;
	size_t n = strcspn(arg, "=");
	char which[256];

	if (strncmp(arg, "--", 2) != 0) {
		/* a short option: optopt is it (arg may hold several, -vx) */
		if (c == ':')
			fprintf(stderr, "xtcd: -%c needs a value; see xtcd --help\n", optopt);
		else
			fprintf(stderr, "xtcd: unknown option -%c; see xtcd --help\n", optopt);
	} else if (c == ':') {
		fprintf(stderr, "xtcd: %s needs a value; see xtcd --help\n", arg);
	} else if (optopt != 0 && arg[n] == '=') {
		fprintf(stderr, "xtcd: %.*s takes no value; see xtcd --help\n", (int)n, arg);
	} else if (abbreviates(opts, arg + 2, n - 2, which, sizeof which) > 1) {
		fprintf(stderr, "xtcd: %.*s is short for more than one option (%s); give it whole\n",
		        (int)n, arg, which);
	} else if ((like = settings_suggest_flag(arg + 2)) != NULL) {
		fprintf(stderr, "xtcd: unknown option %.*s; did you mean --%s?\n", (int)n, arg, like);
	} else {
		fprintf(stderr, "xtcd: unknown option %.*s; see xtcd --help\n", (int)n, arg);
	}
	exit(2);
}

/* A setting's flag: into cli, checked now. */
static void take_setting(int row, const char *value)
{
	char err[1024];

	if (settings_flag(&cli, (size_t)row, value, err, sizeof err) < 0) {
		fprintf(stderr, "xtcd: %s\n", err);
		exit(2);
	}
}

/* A mode's own option. */
static void take_mode_option(int c, const char *name, int argc, char **argv,
                             const struct option *opts, struct mode *m)
{
	enum view_color color;

	switch (c) {
	case OPT_CONFIG: conf_path = optarg; break;
	case OPT_CHECK_CONFIG: m->check_config = optarg; break;
	case OPT_STATUS: m->status = 1; break;
	case OPT_SHIP: m->ship = 1; break;
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
	case OPT_FILTER: parse_filter(name, optarg, m); break;
	case 'h': usage(stdout); exit(0);
	case 'V': printf("xtcd %s\n", PACKAGE_VERSION); exit(0);
	default: bad_option(c, argc, argv, opts);
	}
}

static void parse_args(int argc, char **argv, struct mode *m)
{
	struct option options[NMODE_OPTIONS + SETTINGS_MAX + 1] = { 0 };
	char shortopts[2 * SETTINGS_MAX + 16];
	int c, idx;

	memcpy(options, mode_options, sizeof mode_options);
	settings_long_options(options + NMODE_OPTIONS, OPT_SETTING);
	/* ':' first: a missing value is ':', told apart from an unknown '?' */
	snprintf(shortopts, sizeof shortopts, ":%sn:hV", settings_short_options());
	opterr = 0;
	m->ro.lines = 10;
	report_opts_init(&m->rep);
	while (idx = -1, (c = getopt_long(argc, argv, shortopts, options, &idx)) != -1) {
		if (c >= OPT_SETTING)
			take_setting(c - OPT_SETTING, optarg);
		else if (settings_by_short(c) >= 0)
			take_setting(settings_by_short(c), optarg);
		else
			take_mode_option(c, idx >= 0 ? options[idx].name : NULL, argc, argv, options, m);
	}
	check_reading_mode(argc, argv, m);
	if (optind < argc) {
		const char *bare = settings_bare_flag(argv[optind - 1]);

		if (bare != NULL)   /* "--verbose debug": an optional value needs its '=' */
			fprintf(stderr, "xtcd: unexpected argument '%s'; a value of --%s goes after "
			        "'=': --%s=%s\n", argv[optind], bare, bare, argv[optind]);
		else
			fprintf(stderr, "xtcd: unexpected argument '%s'; see xtcd --help\n", argv[optind]);
		exit(2);
	}
}

/* Merge the defaults, the configuration file and the command line into
 * cfg (for the daemon, or --status: its socket); exit 2 on a bad file. */
static void load_config(int daemon)
{
	char err[1024];

	if (conf_build(&cfg, conf_path, &cli, daemon, err, sizeof err) < 0) {
		fprintf(stderr, "xtcd: %s\n", err);
		exit(2);
	}
	xlog_set_level(cfg.log_level);
	xlog_limit_set(cfg.log_rate_burst, cfg.log_rate_interval_ms);
}

/* --check-config FILE: build the settings as the daemon would (FILE, then
 * the flags given with it), say so in one line, and exit. */
static int check_config(const char *path)
{
	char err[1024];
	struct config c;

	if (access(path, R_OK) < 0) { /* named by --check-config, not --config */
		fprintf(stderr, "xtcd: --check-config %s: %s; give it an existing, readable file\n", path,
		        strerror(errno));
		return 2;
	}
	if (conf_build(&c, path, &cli, 0, err, sizeof err) < 0) {
		fprintf(stderr, "xtcd: %s\n", err);
		return 2;
	}
	conf_free(&c);
	printf("%s: OK\n", path);
	return 0;
}

/* ---------------------------------------------------------------------
 * The loop
 */

static ev_timer drain_w;
static ev_timer log_limit_w;
static ev_signal sig_w[3];

static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	session_drain_all();
}

/* Say what the log's rate limit suppressed, once each interval is over,
 * even when that uid logs nothing more. */
static void log_limit_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop; (void)w; (void)revents;
	xlog_limit_tick(0);
}

/* Keep the setting in force when the new file changes one that needs a
 * restart (the directory, the socket, the I/O backend). */
static void keep_for_restart(const struct setting *s, struct config *next)
{
	char now[256], then[256];

	settings_format(s, &cfg, now, sizeof now);
	settings_format(s, next, then, sizeof then);
	if (strcmp(now, then) == 0)
		return;
	xlog_warn("SIGHUP: %s changed to %s: a restart is needed to apply it; still using %s", s->key,
	          then, now);
	settings_keep(s, &cfg, next);
}

/* SIGHUP: read the file again and apply what can change while running
 * (every setting but the SETTING_RESTART ones).  A bad file changes
 * nothing.  Flags still win. */
static void reload_config(void)
{
	struct config next, old;
	char err[1024], applied[2048];

	if (conf_build(&next, conf_path, &cli, 1, err, sizeof err) < 0) {
		xlog_error("SIGHUP: %s; keeping the settings in force", err);
		return;
	}
	for (size_t i = 0; i < settings_count; i++)
		if (settings_table[i].flags & SETTING_RESTART)
			keep_for_restart(&settings_table[i], &next);
	old = cfg;
	cfg = next;
	if (cfg.drain_ms != old.drain_ms) {
		ev_timer_set(&drain_w, cfg.drain_ms / 1000.0, cfg.drain_ms / 1000.0);
		ev_timer_again(xtcd_loop, &drain_w);
	}
	conf_free(&old);
	xlog_set_level(cfg.log_level);
	xlog_limit_set(cfg.log_rate_burst, cfg.log_rate_interval_ms);
	store_reconfigure();
	settings_build();
	xlog("SIGHUP: re-read %s: %s", conf_path ? conf_path : conf_default_path(),
	     settings_describe_all(&cfg, SETTING_RESTART | SETTING_SHIP, applied, sizeof applied));
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

/* Allow as many descriptors as the hard limit: each client holds three
 * (its connection, its nudge eventfd and its memfd). */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			xlog_debug("descriptor limit raised to %llu", (unsigned long long)rl.rlim_cur);
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
		xlog_error("cannot start the event loop");
		return 1;
	}
	session_init_clock();
	/* Before any thread starts: the worker's and the kernel's io_uring
	 * workers take their nice from this thread when they are created. */
	prio_boost(cfg.priority_boost);
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
	ev_timer_init(&log_limit_w, log_limit_cb, 1.0, 1.0);
	ev_timer_start(xtcd_loop, &log_limit_w);
	if (xlog_enabled(XLOG_DEBUG)) {
		char all[2048];

		xlog_debug("settings in force: %s", settings_describe_all(&cfg, SETTING_SHIP, all, sizeof all));
	}
	xlog("listening on %s, writing %s (budget %llu bytes, segments of %llu, %s)", server_path(),
	     cfg.dir, (unsigned long long)cfg.max_bytes, (unsigned long long)cfg.segment_bytes,
	     store_io_backend());
	status_notify("READY=1\nSTATUS=listening");
	ev_run(xtcd_loop, 0);
	status_notify("STOPPING=1\nSTATUS=draining every ring and closing every session");
	ev_timer_stop(xtcd_loop, &drain_w);
	server_stop_accepting();
	session_shutdown_all();
	xlog_limit_tick(1);
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

	parse_args(argc, argv, &m);
	if (m.check_config != NULL)
		return check_config(m.check_config);
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
	load_config(!m.status && !m.ship);
	if (m.ship)
		return ship_run(&cfg, conf_path);
	if (m.status)
		return status_client(cfg.socket, m.ro.json, stdout);
	return run_daemon();
}
