/*
 * xtcd/ship_opts.c - the command line of xtcd --ship (xtcd/read/ship.h):
 *
 *   xtcd --ship [URL [DIR]] [--ship-create] [--ship-host NAME]
 *        [--ship-cursor FILE] [--ship-batch N] [--ship-batch-ms MS]
 *        [--ship-metrics FILE] [--config FILE]
 *
 * URL and DIR default to xtcd.conf's ship and dir, so that
 * xtcd-ship.service runs the shipper of the same configuration as
 * xtcd.service.  With metrics_file set there, the shipper writes its own
 * textfile, xtcd-ship.prom, next to xtcd's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/conf.h"
#include "xtcd/xtcd.h"
#include "xtcd/read/ship.h"

enum { O_SHIP = 1000, O_CREATE, O_HOST, O_CURSOR, O_BATCH, O_BATCH_MS, O_METRICS, O_CONFIG };

static const struct option ship_options[] = {
	{ "ship", no_argument, NULL, O_SHIP },
	{ "ship-create", no_argument, NULL, O_CREATE },
	{ "ship-host", required_argument, NULL, O_HOST },
	{ "ship-cursor", required_argument, NULL, O_CURSOR },
	{ "ship-batch", required_argument, NULL, O_BATCH },
	{ "ship-batch-ms", required_argument, NULL, O_BATCH_MS },
	{ "ship-metrics", required_argument, NULL, O_METRICS },
	{ "config", required_argument, NULL, O_CONFIG },
	{ NULL, 0, NULL, 0 },
};

int ship_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--ship") == 0 || strncmp(argv[i], "--ship-", 7) == 0)
			return 1;
	return 0;
}

static unsigned long ship_number(const char *flag, const char *v, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || end == v || n < lo || n > hi || *v == '-') {
		fprintf(stderr, "xtcd: %s '%s': expected a whole number from %lu to %lu\n", flag, v, lo, hi);
		exit(2);
	}
	return n;
}

/* xtcd-ship.prom next to xtcd.conf's metrics_file. */
static const char *derived_metrics(const char *metrics_file)
{
	static char path[PATH_MAX];
	const char *slash = strrchr(metrics_file, '/');

	snprintf(path, sizeof(path), "%.*s/xtcd-ship.prom", (int)(slash - metrics_file), metrics_file);
	return path;
}

/* Take URL and DIR from xtcd.conf where the command line left them out. */
static void ship_config(struct ship_opts *o, const char *conf_path, int need)
{
	struct config cli, built;
	char err[1024];

	conf_unset(&cli);
	if (conf_build(&built, conf_path, &cli, 0, err, sizeof(err)) < 0) {
		fprintf(stderr, "xtcd: %s\n", err);
		exit(2);
	}
	if (!o->url && built.ship)
		o->url = strdup(built.ship);
	if (!o->dir && built.dir)
		o->dir = strdup(built.dir);
	if (!o->metrics_file && built.metrics_file)
		o->metrics_file = strdup(derived_metrics(built.metrics_file));
	conf_free(&built);
	if (need && (!o->url || !o->dir)) {
		fprintf(stderr, "xtcd: --ship needs a ClickHouse URL and the segment directory: xtcd "
		        "--ship http://127.0.0.1:8123/?database=xtc /var/lib/xtcd, or ship = URL and "
		        "dir = DIR in %s\n", conf_path ? conf_path : conf_default_path());
		exit(2);
	}
}

int ship_main(int argc, char **argv)
{
	struct ship_opts o = { .batch_records = 65536, .batch_ms = 1000 };
	const char *conf_path = NULL;
	int c, ship = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", ship_options, NULL)) != -1) {
		switch (c) {
		case O_SHIP: ship = 1; break;
		case O_CREATE: o.create = 1; break;
		case O_HOST:
			if (!*optarg || strlen(optarg) > 63) {
				fprintf(stderr, "xtcd: --ship-host '%s': expected a host name of 1 to 63 "
				        "bytes\n", optarg);
				return 2;
			}
			o.host = optarg;
			break;
		case O_CURSOR: o.cursor = optarg; break;
		case O_BATCH: o.batch_records = (uint32_t)ship_number("--ship-batch", optarg, 1, 1000000); break;
		case O_BATCH_MS: o.batch_ms = (unsigned)ship_number("--ship-batch-ms", optarg, 1, 600000); break;
		case O_METRICS: o.metrics_file = optarg; break;
		case O_CONFIG: conf_path = optarg; break;
		default:
			fprintf(stderr, "xtcd: with --ship, only the --ship-* options and --config apply; "
			        "see xtcd --help\n");
			return 2;
		}
	}
	if (!ship) {
		fprintf(stderr, "xtcd: the --ship-* options apply to --ship only; see xtcd --help\n");
		return 2;
	}
	if (optind < argc)
		o.url = argv[optind++];
	if (optind < argc)
		o.dir = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "xtcd: unexpected argument '%s' after --ship URL DIR\n", argv[optind]);
		return 2;
	}
	if (o.url && strncmp(o.url, "http://", 7) != 0 && strncmp(o.url, "https://", 8) != 0) {
		fprintf(stderr, "xtcd: --ship '%s': expected ClickHouse's HTTP URL, such as "
		        "http://127.0.0.1:8123/?database=xtc\n", o.url);
		return 2;
	}
	ship_config(&o, conf_path, 1);
	return xtcd_ship(&o);
}
