/*
 * tests/check_ship.c - the parts of xtcd --ship that need no ClickHouse:
 * the rows (xtcd/read/ship_rows.c) are one JSON line each, the same bytes
 * for the same record every time (the key that makes a resend collapse),
 * with untrusted strings escaped; each item goes to its table; every table
 * is a ReplacingMergeTree whose ORDER BY holds its key; and a textfile
 * (xtcd/read/textfile.c) is replaced whole, nothing left beside it.
 * tests/e2e_clickhouse.sh tests the rest against a real server.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xtcd/read/ship.h"
#include "xtcd/read/textfile.h"

static struct segread_session sess;

/* An event item of session 7, WAKE of task 0xabc at a known wall time. */
static struct segread_item wake_item(void)
{
	struct segread_item it = { .type = SEGREAD_EVENT, .seq = 12, .offset = 4096,
	                           .session = &sess, .real_ns = 1764585600123456789ull,
	                           .has_real = 1 };

	sess.id = 7;
	sess.start.pid = 4242;
	sess.start.uid = 1000;
	memcpy(sess.start.comm, "ap\"i\n", 6);
	it.u.event.session_id = 7;
	it.u.event.ring = 2;
	it.u.event.loop_id = 1;
	it.u.event.rec = (xtc_tail_rec_t){ .ts_ns = 555, .source = XTC_TAIL_SCHED,
	                                   .kind = XTC_TAIL_WAKE,
	                                   .pid = { .loop_id = 1, .local_id = 0, .gen = 0 },
	                                   .detail = 0xabc };
	return it;
}

static const struct ship_key key = { .host = "host-\"a", .boot = "00112233445566778899aabbccddeeff",
                                     .seg_ns = 99, .seg = 12, .blk = 4096, .idx = 3 };

/* The row of it as a string (caller frees). */
static char *row(const struct ship_key *k, const struct segread_item *it, int *table)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	*table = ship_row(f, k, it);
	fclose(f);
	return buf;
}

START_TEST(test_event_row)
{
	struct segread_item it = wake_item();
	int t;
	char *a = row(&key, &it, &t), *b;

	ck_assert_int_eq(t, SHIP_EVENTS);
	ck_assert_int_eq(ship_row_table(&it), SHIP_EVENTS);
	/* one line, ending in a newline */
	ck_assert_ptr_eq(strchr(a, '\n'), a + strlen(a) - 1);
	ck_assert_ptr_nonnull(strstr(a, "{\"host\":\"host-\\\"a\",\"boot_id\":"
	                                "\"00112233445566778899aabbccddeeff\",\"seg_ns\":99,"
	                                "\"seg\":12,\"blk\":4096,\"idx\":3,\"session\":7,"));
	ck_assert_ptr_nonnull(strstr(a, "\"pid\":4242,\"uid\":1000,\"comm\":\"ap\\\"i\\n\""));
	ck_assert_ptr_nonnull(strstr(a, "\"ring\":2,\"ring_loop\":1,\"loop\":1,\"local_id\":0,"));
	ck_assert_ptr_nonnull(strstr(a, "\"time\":1764585600,\"wall_ns\":1764585600123456789,"
	                                "\"ts_ns\":555,\"kind\":\"WAKE\",\"source\":1,"
	                                "\"detail\":2748}"));
	/* the same record, the same bytes: a resend collapses */
	b = row(&key, &it, &t);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_end_row_without_start)
{
	struct segread_item it = { .type = SEGREAD_SESSION_END, .seq = 3, .offset = 128,
	                           .has_real = 1, .real_ns = 2000000000ull };
	int t;
	char *a;

	it.u.end = (struct xtc_seg_session_end){ .session_id = 5, .reason = XTC_END_PRODUCER_DIED,
	                                         .produced = 10, .written = 8, .dropped = 2 };
	a = row(&key, &it, &t);
	ck_assert_int_eq(t, SHIP_SESSIONS);
	/* its start was evicted: the segment's boot, zero pid, still a row */
	ck_assert_ptr_nonnull(strstr(a, "\"boot_id\":\"00112233445566778899aabbccddeeff\","
	                                "\"session\":5,\"pid\":0,"));
	ck_assert_ptr_nonnull(strstr(a, "\"end_ns\":2000000000,\"reason\":\"producer_died\","
	                                "\"produced\":10,\"written\":8,\"dropped\":2,\"lost\":0,"
	                                "\"complete\":0,\"ended\":1}"));
	free(a);
}
END_TEST

START_TEST(test_tables)
{
	struct segread_item it = { .type = SEGREAD_SEGMENT_BEGIN };
	static const char *const keys[SHIP_NTABLES] = {
		"ORDER BY (host, time, boot_id, seg_ns, seg, blk, idx)",
		"ORDER BY (host, boot_id, session)",
		"ORDER BY (host, boot_id, seg_ns, seg, blk, what)",
	};

	ck_assert_int_eq(ship_row_table(&it), -1);
	it.type = SEGREAD_DROP;
	ck_assert_int_eq(ship_row_table(&it), SHIP_DROPS);
	it.type = SEGREAD_EVICTED;
	ck_assert_int_eq(ship_row_table(&it), SHIP_DROPS);
	for (int t = 0; t < SHIP_NTABLES; t++) {
		ck_assert_ptr_nonnull(strstr(ship_table_sql(t), "ReplacingMergeTree"));
		ck_assert_ptr_nonnull(strstr(ship_table_sql(t), keys[t]));
		ck_assert_ptr_nonnull(strstr(ship_table_sql(t), ship_table_name(t)));
	}
}
END_TEST

START_TEST(test_unshipped_row)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ship_row_unshipped(f, "h", 4, 9, 0, 3000000000ull);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"seg\":4,\"blk\":0,\"what\":\"unshipped\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"count\":6,\"time\":3,"));
	ck_assert_ptr_nonnull(strstr(buf, "\"first_seq\":4,\"last_seq\":9,"));
	free(buf);
}
END_TEST

START_TEST(test_textfile_replace)
{
	char dir[] = "/tmp/check_ship.XXXXXX", path[128], got[64];
	FILE *f;
	size_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.prom", dir);
	ck_assert_int_eq(textfile_replace(path, "a 1\n", 4, 1), 0);
	ck_assert_int_eq(textfile_replace(path, "b 2\n", 4, 0), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	got[n] = '\0';
	fclose(f);
	ck_assert_str_eq(got, "b 2\n");
	snprintf(got, sizeof(got), "%s/x.prom.tmp.%ld", dir, (long)getpid());
	ck_assert_int_eq(access(got, F_OK), -1);
	unlink(path);
	rmdir(dir);
	ck_assert_int_eq(textfile_replace("/nonexistent/dir/x.prom", "", 0, 1), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ship");
	TCase *tc = tcase_create("rows");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_event_row);
	tcase_add_test(tc, test_end_row_without_start);
	tcase_add_test(tc, test_tables);
	tcase_add_test(tc, test_unshipped_row);
	tcase_add_test(tc, test_textfile_replace);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
