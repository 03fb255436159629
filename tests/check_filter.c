/*
 * tests/check_filter.c - the reading modes' filters (xtcd/read/filter.c)
 * and --report's windows and durations, without a daemon or a segment:
 * parsing with its messages, wall times in every form, and which item
 * each filter lets through (the table in filter.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xtcd/read/filter.h"
#include "xtcd/report/report.h"

#define S(n) ((uint64_t)(n) * 1000000000ull)
#define NOW S(1764410400)   /* 2025-11-29 10:00:00 UTC */

static const char *const time_form =
	"expected 'YYYY-MM-DD HH:MM:SS[.ffffff]' (local time), 'YYYY-MM-DDTHH:MM:SS[Z]', "
	"'@EPOCH_SECONDS' or a time ago such as -30s, -5m, -2h, -1d";

/* Parse one filter; its return code, with why. */
static int parse(struct filter *f, const char *opt, const char *value, char *why, size_t len)
{
	why[0] = '\0';
	return filter_parse(f, opt, value, NOW, why, len);
}

/* ---- parsing ---- */

START_TEST(test_numbers)
{
	struct filter f = { 0 };
	char why[512];

	ck_assert(!filter_active(&f));
	ck_assert_int_eq(parse(&f, "session", "3", why, sizeof why), 0);
	ck_assert(f.has_session && f.session == 3);
	ck_assert(filter_active(&f));
	ck_assert_int_eq(parse(&f, "pid", "4242", why, sizeof why), 0);
	ck_assert(f.has_pid && f.pid == 4242);
	ck_assert_int_eq(parse(&f, "loop", "0", why, sizeof why), 0);
	ck_assert(f.has_loop && f.loop == 0);

	ck_assert_int_eq(parse(&f, "session", "0", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "expected a session id (see xtcd --stats), a whole number from 1 up");
	ck_assert_int_eq(parse(&f, "session", "3x", why, sizeof why), -EINVAL);
	ck_assert_int_eq(parse(&f, "session", "-3", why, sizeof why), -EINVAL);
	ck_assert_int_eq(parse(&f, "pid", "4294967296", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "expected a process id, a whole number from 1 up");
	ck_assert_int_eq(parse(&f, "loop", "4294967295", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "expected a loop id, a whole number such as 0 or 3");
	ck_assert_int_eq(parse(&f, "colour", "red", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "not a filter");
}
END_TEST

START_TEST(test_kinds)
{
	struct filter f = { 0 };
	char why[512];

	ck_assert_int_eq(parse(&f, "kind", "run,Wake", why, sizeof why), 0);
	ck_assert(f.has_kind);
	ck_assert_uint_eq(f.kinds, (1ull << XTC_TAIL_RUN) | (1ull << XTC_TAIL_WAKE));
	ck_assert_int_eq(parse(&f, "kind", "KIND_40", why, sizeof why), 0);
	ck_assert_uint_eq(f.kinds, 1ull << 40);
	ck_assert_int_eq(parse(&f, "kind", "KIND_64", why, sizeof why), -EINVAL);
	ck_assert_int_eq(parse(&f, "kind", "RUN,,WAKE", why, sizeof why), -EINVAL);
	ck_assert_int_eq(parse(&f, "kind", "nope", why, sizeof why), -EINVAL);
	ck_assert_msg(strstr(why, "unknown kind 'nope'; valid kinds (any case): SPAWN,EXIT,WAKE,RUN,") ==
	              why, "%s", why);
	ck_assert_int_eq(parse(&f, "kind", "", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "expected one or more kind names, such as RUN,WAKE");
}
END_TEST

START_TEST(test_times)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "@1764410400", S(1764410400) },
		{ "@1764410400.25", S(1764410400) + 250000000 },
		{ "2025-11-29T10:00:00Z", S(1764410400) },
		{ "2025-11-29T10:00:00.5Z", S(1764410400) + 500000000 },
		{ "2025-11-29T10:00Z", S(1764410400) },
		{ "2025-11-29Z", S(1764410400 - 36000) },
		{ "now", NOW },
		{ "-30s", NOW - S(30) },
		{ "-5m", NOW - S(300) },
		{ "-2h", NOW - S(7200) },
		{ "-1d", NOW - S(86400) },
		{ "-250ms", NOW - 250000000 },
		{ "-1.5s", NOW - 1500000000 },
		{ "-100000d", 0 },   /* before the epoch: from the start */
	};
	static const char *const bad[] = {
		"", "yesterday", "@", "@x", "@1e9", "-5", "-5x", "-m", "2025-13-01", "2025-11-32",
		"2025-11-29T25:00Z", "2025-11-29T10:00:0Z", "2025-11-29T10:00:000Z", "2025-11-29 10",
		"25-11-29", "2025-11-29T10:00:00ZZ",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		ck_assert_msg(filter_parse_time(good[i].s, NOW, &v) == 0, "'%s' refused", good[i].s);
		ck_assert_msg(v == good[i].v, "'%s': %llu, not %llu", good[i].s, (unsigned long long)v,
		              (unsigned long long)good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(filter_parse_time(bad[i], NOW, &v) == -EINVAL, "'%s' accepted", bad[i]);
}
END_TEST

/* Local time is the TZ's: the same instant as its UTC spelling. */
START_TEST(test_local_time)
{
	uint64_t local, utc;

	setenv("TZ", "XTC-1", 1);   /* POSIX: one hour east of UTC, no tzdata needed */
	tzset();
	ck_assert_int_eq(filter_parse_time("2025-11-29 11:00:00", NOW, &local), 0);
	ck_assert_int_eq(filter_parse_time("2025-11-29T10:00:00Z", NOW, &utc), 0);
	unsetenv("TZ");
	tzset();
	ck_assert_uint_eq(local, utc);
}
END_TEST

START_TEST(test_since_until)
{
	struct filter f = { 0 };
	char why[512];

	ck_assert_int_eq(parse(&f, "since", "-10m", why, sizeof why), 0);
	ck_assert(f.has_since && f.since_ns == NOW - S(600));
	ck_assert_int_eq(parse(&f, "until", "-5m", why, sizeof why), 0);
	ck_assert(f.has_until && f.until_ns == NOW - S(300));
	ck_assert_int_eq(parse(&f, "until", "-20m", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "--until must be later than --since");
	ck_assert_int_eq(parse(&f, "since", "last week", why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, time_form);
}
END_TEST

/* ---- --report's windows and durations ---- */

START_TEST(test_windows)
{
	struct report_window w;
	char why[512];

	ck_assert_int_eq(report_parse_window("-10m..-5m", NOW, &w, why, sizeof why), 0);
	ck_assert_uint_eq(w.from, NOW - S(600));
	ck_assert_uint_eq(w.to, NOW - S(300));
	ck_assert_int_eq(report_parse_window("@1764410000..now", NOW, &w, why, sizeof why), 0);
	ck_assert_uint_eq(w.from, S(1764410000));
	ck_assert_uint_eq(w.to, NOW);
	ck_assert_int_eq(report_parse_window("2025-11-29T09:00:00Z..2025-11-29T09:05:00Z", NOW, &w,
	                                     why, sizeof why), 0);
	ck_assert_uint_eq(w.to - w.from, S(300));

	ck_assert_int_eq(report_parse_window("-10m", NOW, &w, why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "expected a window FROM..TO, such as '-10m..-5m' or "
	                      "'2026-11-29 10:00:00..2026-11-29 10:05:00'");
	ck_assert_int_eq(report_parse_window("..-5m", NOW, &w, why, sizeof why), -EINVAL);
	ck_assert_int_eq(report_parse_window("-5m..", NOW, &w, why, sizeof why), -EINVAL);
	ck_assert_int_eq(report_parse_window("-5x..now", NOW, &w, why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "each side must be 'YYYY-MM-DD HH:MM:SS[.ffffff]' (local), "
	                      "'YYYY-MM-DDTHH:MM:SS[Z]', '@EPOCH', now, or a time ago such as -5m");
	ck_assert_int_eq(report_parse_window("-5m..-10m", NOW, &w, why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "the window ends before it begins");
	ck_assert_int_eq(report_parse_window("now..now", NOW, &w, why, sizeof why), -EINVAL);
}
END_TEST

START_TEST(test_durations)
{
	static const struct { const char *s; uint64_t ns; } good[] = {
		{ "500ms", 500000000 }, { "2s", S(2) }, { "1.5s", 1500000000 }, { "3m", S(180) },
		{ "250us", 250000 }, { "100ns", 100 }, { "1h", S(3600) }, { "0s", 0 },
	};
	static const char *const bad[] = { "", "5", "s", "-1s", "1sec", "1 s", "1d", "1e30h" };
	uint64_t ns;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		ck_assert_msg(report_parse_duration(good[i].s, &ns) == 0, "'%s' refused", good[i].s);
		ck_assert_uint_eq(ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(report_parse_duration(bad[i], &ns) == -EINVAL, "'%s' accepted", bad[i]);
}
END_TEST

/* ---- matching ---- */

static struct segread_session sess3 = {
	.id = 3, .start = { .session_id = 3, .pid = 4242, .anchor_mono_ns = 0,
	                    .anchor_real_ns = S(1764410000) },
};

static struct segread_item event(uint32_t kind, uint32_t pid_loop, uint32_t ring_loop, uint64_t t)
{
	struct segread_item it = { .type = SEGREAD_EVENT, .session = &sess3, .real_ns = t,
	                           .has_real = 1 };

	it.u.event.session_id = 3;
	it.u.event.loop_id = ring_loop;
	it.u.event.rec.kind = kind;
	it.u.event.rec.pid.loop_id = pid_loop;
	return it;
}

START_TEST(test_match_events)
{
	struct filter f = { 0 };
	struct segread_item run = event(XTC_TAIL_RUN, 2, 7, S(1764410100));
	struct segread_item unbound = event(XTC_TAIL_WAKE, XTC_TAIL_LOOP_NONE, 7, S(1764410100));
	char why[256];

	ck_assert(filter_match(&f, NULL, &run));
	ck_assert_uint_eq(filter_event_loop(&run), 2);
	ck_assert_uint_eq(filter_event_loop(&unbound), 7);
	ck_assert_int_eq(parse(&f, "session", "3", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &run));
	ck_assert_int_eq(parse(&f, "pid", "4242", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &run));
	ck_assert_int_eq(parse(&f, "loop", "2", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &run));
	ck_assert(!filter_match(&f, NULL, &unbound));
	ck_assert_int_eq(parse(&f, "loop", "7", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &unbound));
	ck_assert(!filter_match(&f, NULL, &run));

	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "kind", "RUN", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &run));
	ck_assert(!filter_match(&f, NULL, &unbound));
	run.u.event.rec.kind = 200;   /* beyond the kinds --kind can name */
	ck_assert(!filter_match(&f, NULL, &run));

	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "pid", "99", why, sizeof why), 0);
	ck_assert(!filter_match(&f, NULL, &unbound));
	unbound.session = NULL;       /* a session never started: no pid to match */
	ck_assert(!filter_match(&f, NULL, &unbound));

	/* --since inclusive, --until exclusive */
	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "since", "@1764410100", why, sizeof why), 0);
	ck_assert_int_eq(parse(&f, "until", "@1764410200", why, sizeof why), 0);
	run = event(XTC_TAIL_RUN, 2, 7, S(1764410100));
	ck_assert(filter_match(&f, NULL, &run));
	run.real_ns = S(1764410200);
	ck_assert(!filter_match(&f, NULL, &run));
	run.real_ns = S(1764410100) - 1;
	ck_assert(!filter_match(&f, NULL, &run));
}
END_TEST

/* DROP, session start and end, CORRUPT, EVICTED, SEGMENT END: what a
 * narrowed view keeps (filter.h's table). */
START_TEST(test_match_others)
{
	struct filter f = { 0 };
	struct segread_item drop = { .type = SEGREAD_DROP, .session = &sess3,
	                             .real_ns = S(1764410100) };
	struct segread_item start = { .type = SEGREAD_SESSION_START, .session = &sess3,
	                              .real_ns = S(1764410000) };
	struct segread_item end = { .type = SEGREAD_SESSION_END, .session = &sess3,
	                            .real_ns = S(1764410300) };
	struct segread_item corrupt = { .type = SEGREAD_CORRUPT, .session = &sess3 };
	struct segread_item evicted = { .type = SEGREAD_EVICTED };
	struct segread_item seg_end = { .type = SEGREAD_SEGMENT_END, .real_ns = S(1764410300) };
	static const uint64_t ids[] = { 1, 3 };
	char why[256];

	drop.u.drop.session_id = 3;
	drop.u.drop.loop_id = 5;
	drop.u.drop.from_ts_ns = S(100);   /* wall: anchor + 100 s = 1764410100 */
	drop.u.drop.to_ts_ns = S(250);     /* to 1764410250 */
	start.u.start.ss = &sess3.start;
	end.u.end.session_id = 3;
	corrupt.u.corrupt.session_id = 3;
	evicted.u.evicted.ev.session_count = 2;
	evicted.u.evicted.ids = ids;

	ck_assert_int_eq(parse(&f, "kind", "RUN", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &drop));
	ck_assert(filter_match(&f, NULL, &start));
	ck_assert(filter_match(&f, NULL, &end));
	ck_assert(filter_match(&f, NULL, &corrupt));
	ck_assert(filter_match(&f, NULL, &evicted));
	ck_assert(!filter_match(&f, NULL, &seg_end));

	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "loop", "5", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &drop));
	ck_assert(filter_match(&f, NULL, &start));
	drop.u.drop.loop_id = 6;
	ck_assert(!filter_match(&f, NULL, &drop));
	drop.u.drop.loop_id = 5;

	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "session", "4", why, sizeof why), 0);
	ck_assert(!filter_match(&f, NULL, &drop));
	ck_assert(!filter_match(&f, NULL, &start));
	ck_assert(!filter_match(&f, NULL, &end));
	ck_assert(!filter_match(&f, NULL, &corrupt));
	ck_assert(!filter_match(&f, NULL, &evicted));
	ck_assert_int_eq(parse(&f, "session", "3", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &evicted));

	/* a DROP is kept when its window overlaps [since, until) */
	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "since", "@1764410200", why, sizeof why), 0);
	ck_assert(filter_match(&f, NULL, &drop));
	ck_assert(!filter_match(&f, NULL, &start));
	ck_assert(filter_match(&f, NULL, &seg_end));
	ck_assert(filter_match(&f, NULL, &corrupt));
	ck_assert_int_eq(parse(&f, "since", "@1764410251", why, sizeof why), 0);
	ck_assert(!filter_match(&f, NULL, &drop));
	memset(&f, 0, sizeof f);
	ck_assert_int_eq(parse(&f, "until", "@1764410100", why, sizeof why), 0);
	ck_assert(!filter_match(&f, NULL, &drop));
	ck_assert(filter_match(&f, NULL, &start));
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_local_time);
	tcase_add_test(tc, test_since_until);
	tcase_add_test(tc, test_windows);
	tcase_add_test(tc, test_durations);
	suite_add_tcase(s, tc);
	tc = tcase_create("match");
	tcase_add_test(tc, test_match_events);
	tcase_add_test(tc, test_match_others);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(filter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
