/*
 * xtcd/metrics.c - xtcd's health for Prometheus: a node-exporter textfile
 * (metrics_file = PATH in xtcd.conf, --metrics-file), written whole by
 * rename every METRICS_WRITE_S seconds and once more at shutdown, so that
 * node-exporter's textfile collector (--collector.textfile.directory) never
 * reads half a file.  xtcd itself opens no port.
 *
 * Everything comes from the daemon's own counters (session_totals,
 * session_uid_totals, session_status, store_*), the same ones --status
 * answers with.  Counters (_total) count since xtcd started; Prometheus
 * takes a restart as a counter reset.  The ring fill high-water is the
 * fullest any ring was at a once-a-second sample.  The shipper (xtcd
 * --ship) writes its own file, xtcd-ship.prom (xtcd/read/ship.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/xtc_attach.h"
#include "xtcd/read/textfile.h"
#include "xtcd/xtcd.h"

#define METRICS_WRITE_S 5.0
#define MAX_UIDS        1024
#define MAX_SESSIONS    4096

static struct {
	ev_timer w;
	unsigned ticks;
	double   fill_hwm;     /* 0..1 */
	double   start_s;      /* wall-clock start, seconds */
	int      failed;       /* the last write failed (said once) */
	struct session_uid_totals uids[MAX_UIDS];
	struct xtc_msg_status_session sess[MAX_SESSIONS];
} m;

/* The fullest ring now, into the high-water mark. */
static void sample_fill(void)
{
	size_t n = session_status(0, m.sess, MAX_SESSIONS);

	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < m.sess[i].loops_listed; j++) {
			uint16_t f = m.sess[i].loops[j].fill;

			if (f != XTC_STATUS_FILL_CORRUPT && f / 10000.0 > m.fill_hwm)
				m.fill_hwm = f / 10000.0;
		}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	family(f, name, type, help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

/* The per-uid counters: one family each, a series per uid. */
static void per_uid(FILE *f, size_t n)
{
	static const struct { const char *name, *help; size_t off; const char *type; } fam[] = {
		{ "xtcd_uid_sessions_total", "Sessions attached, per uid.",
		  offsetof(struct session_uid_totals, sessions), "counter" },
		{ "xtcd_uid_events_produced_total", "Records the producers emitted, per uid.",
		  offsetof(struct session_uid_totals, produced), "counter" },
		{ "xtcd_uid_events_written_total", "Records written to segments, per uid.",
		  offsetof(struct session_uid_totals, written), "counter" },
		{ "xtcd_uid_events_dropped_total", "Records dropped (full rings, quota), per uid.",
		  offsetof(struct session_uid_totals, dropped), "counter" },
		{ "xtcd_uid_events_lost_total", "Records lost to failed writes, per uid.",
		  offsetof(struct session_uid_totals, lost), "counter" },
		{ "xtcd_uid_shm_mapped_bytes", "Bytes of client segments xtcd maps now, per uid.",
		  offsetof(struct session_uid_totals, shm_mapped), "gauge" },
		{ "xtcd_uid_shm_touched_bytes",
		  "Of them, bytes its drains and prefetches have reached (at most), per uid.",
		  offsetof(struct session_uid_totals, shm_touched), "gauge" },
	};

	for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s{uid=\"%u\"} %" PRIu64 "\n", fam[k].name, (unsigned)m.uids[i].uid,
			        *(const uint64_t *)(const void *)((const char *)&m.uids[i] + fam[k].off));
	}
}

static void latency(FILE *f)
{
	struct store_lat l;
	uint64_t cum = 0;

	store_write_latency(&l);
	family(f, "xtcd_write_latency_seconds", "histogram",
	       "How long each buffer write to a segment took.");
	for (size_t i = 0; i < STORE_LAT_BUCKETS; i++) {
		cum += l.count[i];
		if (i + 1 < STORE_LAT_BUCKETS)
			fprintf(f, "xtcd_write_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			        store_lat_bounds[i], cum);
		else
			fprintf(f, "xtcd_write_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
	}
	fprintf(f, "xtcd_write_latency_seconds_sum %.9f\nxtcd_write_latency_seconds_count %" PRIu64
	        "\n", l.sum_s, l.n);
}

static void writes(FILE *f)
{
	struct store_write_counts w;

	store_write_counts(&w);
	family(f, "xtcd_writes_total", "counter",
	       "Buffer writes to segments, by how: io_uring; inline (pwrite on the event loop, "
	       "a small write with nothing in flight); pwrite (--pwrite, or no io_uring).");
	fprintf(f, "xtcd_writes_total{path=\"io_uring\"} %" PRIu64 "\n"
	        "xtcd_writes_total{path=\"inline\"} %" PRIu64 "\n"
	        "xtcd_writes_total{path=\"pwrite\"} %" PRIu64 "\n",
	        w.uring_writes, w.inline_writes, w.pwrite_writes);
	one(f, "xtcd_inline_writes_slow_total", "counter",
	    "Inline writes that held the event loop over 1 ms (each sends small writes back to "
	    "io_uring for a while).", w.inline_slow);
	one(f, "xtcd_drain_starved_total", "counter",
	    "Drains that stopped because every write buffer was full or waiting for the disk; "
	    "each went on when a write completed. Rising: the disk, not the drain, is the limit.",
	    w.starved);
}

static void body(FILE *f)
{
	struct session_totals t;
	struct store_evictions ev;
	size_t nu = session_uid_totals(m.uids, MAX_UIDS);
	uint64_t sessions = 0;

	session_totals(&t);
	store_evictions(&ev);
	for (size_t i = 0; i < nu; i++)
		sessions += m.uids[i].sessions;
	one(f, "xtcd_sessions", "gauge", "Sessions attached now.", session_count());
	one(f, "xtcd_sessions_total", "counter", "Sessions attached since xtcd started.", sessions);
	one(f, "xtcd_events_produced_total", "counter", "Records the producers emitted.", t.produced);
	one(f, "xtcd_events_written_total", "counter", "Records written to segments.", t.written);
	one(f, "xtcd_events_dropped_total", "counter", "Records dropped (full rings, quota).",
	    t.dropped);
	one(f, "xtcd_events_lost_total", "counter", "Records lost to failed writes.", t.lost);
	per_uid(f, nu);
	one(f, "xtcd_evicted_segments_total", "counter",
	    "Segments deleted under the byte budget.", ev.segments);
	one(f, "xtcd_evicted_bytes_total", "counter", "Bytes of the segments deleted.", ev.bytes);
	one(f, "xtcd_evicted_events_total", "counter", "Event records the deleted segments held.",
	    ev.records);
	family(f, "xtcd_ring_fill_high_water_ratio", "gauge",
	       "The fullest any ring was at a once-a-second sample since start (0 to 1).");
	fprintf(f, "xtcd_ring_fill_high_water_ratio %.4f\n", m.fill_hwm);
	one(f, "xtcd_disk_bytes", "gauge", "Bytes of the segments in the directory.",
	    store_disk_bytes());
	one(f, "xtcd_disk_budget_bytes", "gauge", "The byte budget (max_bytes).", cfg.max_bytes);
	one(f, "xtcd_segments", "gauge", "Segment files in the directory.", store_segments());
	latency(f);
	writes(f);
	family(f, "xtcd_start_time_seconds", "gauge", "When xtcd started (Unix time).");
	fprintf(f, "xtcd_start_time_seconds %.3f\n", m.start_s);
}

static void metrics_write(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret = -ENOMEM;

	if (f) {
		body(f);
		ret = fclose(f) == 0 ? textfile_replace(cfg.metrics_file, buf, len, 0) : -ENOMEM;
	}
	free(buf);
	if (ret < 0 && !m.failed)
		xlog_error("cannot write the metrics file %s: %s (said once until it works again)",
		     cfg.metrics_file, strerror(-ret));
	m.failed = ret < 0;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
	sample_fill();
	if (++m.ticks % (unsigned)METRICS_WRITE_S == 0)
		metrics_write();
}

void metrics_start(struct ev_loop *loop)
{
	struct timespec ts;

	if (!cfg.metrics_file)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	m.start_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	metrics_write();
	ev_timer_init(&m.w, tick_cb, 1.0, 1.0);
	ev_timer_start(loop, &m.w);
}

void metrics_stop(void)
{
	if (!cfg.metrics_file)
		return;
	ev_timer_stop(xtcd_loop, &m.w);
	metrics_write();
}
