/*
 * xtcd/ship_opts.c - xtcd --ship: from the settings to the shipper's
 * options (xtcd/read/ship.h).
 *
 *   xtcd --ship [URL [DIR]] [--ship-create] [--ship-host NAME]
 *        [--ship-cursor FILE] [--ship-batch N] [--ship-batch-ms MS]
 *        [--ship-metrics FILE] [--config FILE]
 *
 * Every --ship-* flag is a row of the settings table (ship_create, ...),
 * so xtcd.conf may hold them too; URL and DIR are the ship and dir rows.
 * Their defaults come from xtcd.conf so that xtcd-ship.service runs the
 * shipper of the same configuration as xtcd.service.  With metrics_file
 * set there, the shipper writes its own textfile, xtcd-ship.prom, next to
 * xtcd's.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "xtcd/conf.h"
#include "xtcd/read/ship.h"
#include "xtcd/xtcd.h"

/* xtcd-ship.prom next to xtcd.conf's metrics_file (an absolute path: the
 * settings table made it one). */
static const char *derived_metrics(const char *metrics_file, char *buf, size_t len)
{
	const char *slash = strrchr(metrics_file, '/');

	snprintf(buf, len, "%.*s/xtcd-ship.prom", (int)(slash - metrics_file), metrics_file);
	return buf;
}

int ship_run(const struct config *c, const char *conf_path)
{
	char prom[PATH_MAX];
	struct ship_opts o = {
		.url = c->ship_url,
		.dir = c->dir,
		.host = c->ship_host,
		.cursor = c->ship_cursor,
		.metrics_file = c->ship_metrics,
		.create = c->ship_create,
		.batch_records = c->ship_batch,
		.batch_ms = c->ship_batch_ms,
	};

	if (o.url == NULL || o.dir == NULL) {
		fprintf(stderr, "xtcd: --ship needs a ClickHouse URL and the segment directory: xtcd "
		        "--ship http://127.0.0.1:8123/?database=xtc /var/lib/xtcd, or ship = URL and "
		        "dir = DIR in %s\n", conf_path ? conf_path : conf_default_path());
		return 2;
	}
	if (o.metrics_file == NULL && c->metrics_file != NULL)
		o.metrics_file = derived_metrics(c->metrics_file, prom, sizeof prom);
	return xtcd_ship(&o);
}
