/*
 * tests/check_names.c - what the format's numbers are called and how
 * values print: the name tables (lib/seg/segname.c), the SUBMIT_FAIL
 * detail decoder, the boot id parser (lib/common/clock.c) and the value
 * formatters every reading mode, the report and --status share
 * (xtcd/read/print.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/common/clock.h"
#include "lib/seg/segname.h"
#include "xtcd/read/print.h"
#include "xtcd/shm_check.h"
#include "tests/check_run.h"

/* The on-disk values: changing one is a format change. */
_Static_assert(XTC_DROP_RING_FULL == 1 && XTC_DROP_OVERWRITTEN == 2 &&
               XTC_DROP_NO_FREE_RING == 4 && XTC_DROP_QUOTA == 5, "DROP causes");
_Static_assert(XTC_CORRUPT_HEAD_BACKWARDS == 1 && XTC_CORRUPT_HEAD_JUMPED == 2 &&
               XTC_CORRUPT_DROPPED_BACKWARDS == 3 && XTC_CORRUPT_HEAD_TOO_FAST == 4 &&
               XTC_CORRUPT_UNWRITTEN == 5, "CORRUPT reasons");
_Static_assert(XTC_SEG_RING_NONE == 0xFFFFFFFFu, "no ring");
/* The daemon writes its ring checks' verdicts as CORRUPT reasons. */
_Static_assert((int)SHM_RING_HEAD_BACKWARDS == XTC_CORRUPT_HEAD_BACKWARDS &&
               (int)SHM_RING_HEAD_JUMPED == XTC_CORRUPT_HEAD_JUMPED &&
               (int)SHM_RING_DROPPED_BACKWARDS == XTC_CORRUPT_DROPPED_BACKWARDS &&
               (int)SHM_RING_HEAD_TOO_FAST == XTC_CORRUPT_HEAD_TOO_FAST &&
               (int)SHM_RING_UNWRITTEN == XTC_CORRUPT_UNWRITTEN,
               "ring faults are corrupt reasons");

/* ---- name tables ---- */

START_TEST(test_kind_names)
{
	static const char *const want[] = {
		"SPAWN", "EXIT", "WAKE", "RUN", "PARK", "SEND", "RECV", "MBOX_HWM", "LOOP_POLL",
		"PARK_TASK", "REAP", "SUBMIT", "SUBMIT_FAIL", "POLL_FULL", "LIFECYCLE_DROP",
		"LOOP_WAIT", "LOOP_WAKE", "LOOP_DISPATCH", "CB_BEGIN", "CB_END", "CB_FUNC",
		"WATCH_START", "WATCH_STOP",
	};
	char buf[24], other[24];

	ck_assert_uint_eq(SEGNAME_NKINDS, sizeof(want) / sizeof(want[0]));
	ck_assert_uint_eq(SEGNAME_NKINDS, XTC_TAIL_NKINDS);
	for (uint32_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		ck_assert_str_eq(segname_kind(k, buf, sizeof(buf)), want[k]);
	/* every named kind has its own name, none of them the fallback */
	for (uint32_t k = 0; k < SEGNAME_NKINDS; k++) {
		const char *n = segname_kind(k, buf, sizeof(buf));

		ck_assert_ptr_ne(n, buf);
		for (uint32_t j = k + 1; j < SEGNAME_NKINDS; j++)
			ck_assert_str_ne(n, segname_kind(j, other, sizeof(other)));
	}
	/* the first kind past the table prints as a number */
	snprintf(other, sizeof(other), "KIND_%d", SEGNAME_NKINDS);
	ck_assert_ptr_eq(segname_kind(SEGNAME_NKINDS, buf, sizeof(buf)), buf);
	ck_assert_str_eq(buf, other);
	ck_assert_str_eq(segname_kind(UINT32_MAX, buf, sizeof(buf)), "KIND_4294967295");
	/* a short buffer truncates, never overflows */
	ck_assert_str_eq(segname_kind(1000, buf, 6), "KIND_");
}
END_TEST

/* One value of an enumeration and the text its namer must give. */
struct name_case {
	const char *(*fn)(uint32_t v, char *buf, size_t len);
	uint32_t    v;
	const char *want;
};

static const struct name_case name_cases[] = {
	{ segname_end_reason, XTC_END_DETACHED, "detached" },
	{ segname_end_reason, XTC_END_PRODUCER_DIED, "producer_died" },
	{ segname_end_reason, XTC_END_DAEMON_SHUTDOWN, "daemon_shutdown" },
	{ segname_end_reason, XTC_END_CORRUPT, "corrupt" },
	{ segname_end_reason, XTC_END_IO_ERROR, "io_error" },
	{ segname_end_reason, XTC_END_DAEMON_CRASHED, "daemon_crashed" },
	{ segname_end_reason, 0, "reason_0" },
	{ segname_end_reason, 7, "reason_7" },
	/* the daemon logs "ended: <phrase>"; tests and operators grep for it */
	{ segname_end_reason_text, XTC_END_DETACHED, "detached" },
	{ segname_end_reason_text, XTC_END_PRODUCER_DIED, "producer died" },
	{ segname_end_reason_text, XTC_END_DAEMON_SHUTDOWN, "daemon shutdown" },
	{ segname_end_reason_text, XTC_END_CORRUPT, "corrupt" },
	{ segname_end_reason_text, XTC_END_IO_ERROR, "io error" },
	{ segname_end_reason_text, XTC_END_DAEMON_CRASHED, "daemon crashed" },
	{ segname_end_reason_text, 7, "reason 7" },
	{ segname_drop_cause, XTC_DROP_RING_FULL, "ring_full" },
	{ segname_drop_cause, XTC_DROP_OVERWRITTEN, "overwritten" },
	{ segname_drop_cause, XTC_DROP_NO_FREE_RING, "no_free_ring" },
	{ segname_drop_cause, XTC_DROP_QUOTA, "quota" },
	{ segname_drop_cause, 3, "cause_3" },   /* reserved: no name */
	{ segname_drop_cause, 0, "cause_0" },
	{ segname_drop_cause, 6, "cause_6" },
	{ segname_corrupt_reason, XTC_CORRUPT_HEAD_BACKWARDS, "head_backwards" },
	{ segname_corrupt_reason, XTC_CORRUPT_HEAD_JUMPED, "head_jumped" },
	{ segname_corrupt_reason, XTC_CORRUPT_DROPPED_BACKWARDS, "dropped_backwards" },
	{ segname_corrupt_reason, XTC_CORRUPT_HEAD_TOO_FAST, "head_too_fast" },
	{ segname_corrupt_reason, XTC_CORRUPT_UNWRITTEN, "unwritten" },
	{ segname_corrupt_reason, 0, "reason_0" },
	{ segname_corrupt_reason, 9, "reason_9" },
	/* the phrases of the daemon's "broke an invariant" line */
	{ segname_corrupt_reason_text, XTC_CORRUPT_HEAD_BACKWARDS, "head went backwards" },
	{ segname_corrupt_reason_text, XTC_CORRUPT_HEAD_JUMPED, "head ran past the ring" },
	{ segname_corrupt_reason_text, XTC_CORRUPT_DROPPED_BACKWARDS,
	  "drop counter went backwards" },
	{ segname_corrupt_reason_text, XTC_CORRUPT_HEAD_TOO_FAST,
	  "head moved faster than a producer can write" },
	{ segname_corrupt_reason_text, XTC_CORRUPT_UNWRITTEN, "head covers memory never written" },
	{ segname_corrupt_reason_text, 6, "reason 6" },
};
#define N_NAME_CASES ((int)(sizeof(name_cases) / sizeof(name_cases[0])))

/* Loop test over name_cases: the text, and a buffer only for numbers. */
START_TEST(test_enum_names)
{
	const struct name_case *c = &name_cases[_i];
	char buf[32];
	const char *got = c->fn(c->v, buf, sizeof(buf));

	ck_assert_str_eq(got, c->want);
	/* names are constants; a number (the only text ending in a digit)
	 * is formatted in buf */
	ck_assert_int_eq(got == buf, isdigit((unsigned char)c->want[strlen(c->want) - 1]) != 0);
}
END_TEST

/* ---- SUBMIT_FAIL ---- */

/* decode d; returns the short flag, with err and left through pointers */
static int sf(uint64_t d, int *err, uint64_t *left)
{
	*err = -12345;
	*left = 12345;
	return segname_submit_fail(d, err, left);
}

START_TEST(test_submit_fail_decode)
{
	const uint64_t base = XTC_TAIL_SHORT_SUBMIT_BASE;
	uint64_t left;
	int err;

	/* an errno, plain or negated */
	ck_assert_int_eq(sf(EAGAIN, &err, &left), 0);
	ck_assert_int_eq(err, EAGAIN);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(sf((uint64_t)-(int64_t)EBUSY, &err, &left), 0);
	ck_assert_int_eq(err, EBUSY);
	ck_assert_int_eq(sf(0, &err, &left), 0);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(sf(base - 1, &err, &left), 0);
	ck_assert_int_eq(err, (int)base - 1);
	ck_assert_int_eq(sf((uint64_t)-(int64_t)(base - 1), &err, &left), 0);
	ck_assert_int_eq(err, (int)base - 1);
	/* a short submit: the base plus what it left */
	ck_assert_int_eq(sf(base, &err, &left), 1);
	ck_assert_uint_eq(left, 0);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(sf(base + 3, &err, &left), 1);
	ck_assert_uint_eq(left, 3);
	/* a negative beyond any errno is not an errno: it reads as a count */
	ck_assert_int_eq(sf((uint64_t)-(int64_t)base, &err, &left), 1);
	ck_assert_uint_eq(left, (uint64_t)-(int64_t)base - base);
}
END_TEST

START_TEST(test_submit_fail_detail_text)
{
	char buf[64];

	print_detail(buf, sizeof(buf), XTC_TAIL_SUBMIT_FAIL, (uint64_t)-(int64_t)EAGAIN);
	ck_assert_str_eq(buf, "-EAGAIN");
	print_detail(buf, sizeof(buf), XTC_TAIL_SUBMIT_FAIL, EAGAIN);
	ck_assert_str_eq(buf, "-EAGAIN");
	print_detail(buf, sizeof(buf), XTC_TAIL_SUBMIT_FAIL, 0);
	ck_assert_str_eq(buf, "err=0");
	print_detail(buf, sizeof(buf), XTC_TAIL_SUBMIT_FAIL, XTC_TAIL_SHORT_SUBMIT_BASE + 2);
	ck_assert_str_eq(buf, "short submit: 2 left");
	print_errno_name(buf, sizeof(buf), 4000);
	ck_assert_str_eq(buf, "-4000");
}
END_TEST

/* ---- boot id ---- */

START_TEST(test_boot_id_parse)
{
	static const char text[] = "6f0c1e4a-9b2d-4c3e-8f7a-0123456789ab\n";
	static const uint8_t want[16] = { 0x6f, 0x0c, 0x1e, 0x4a, 0x9b, 0x2d, 0x4c, 0x3e,
	                                  0x8f, 0x7a, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab };
	uint8_t out[16], zero[16] = { 0 };

	clock_boot_id_parse(text, strlen(text), out);
	ck_assert_mem_eq(out, want, 16);
	/* missing digits read as zero, a half byte included */
	clock_boot_id_parse("abc", 3, out);
	ck_assert_uint_eq(out[0], 0xab);
	ck_assert_uint_eq(out[1], 0xc0);
	ck_assert_mem_eq(out + 2, zero, 14);
	/* digits past 32 are ignored; an empty text is all zeros */
	clock_boot_id_parse("0123456789abcdef0123456789abcdefff", 34, out);
	ck_assert_uint_eq(out[15], 0xef);
	memset(out, 0x55, sizeof(out));
	clock_boot_id_parse("", 0, out);
	ck_assert_mem_eq(out, zero, 16);
}
END_TEST

START_TEST(test_boot_id_of_this_machine)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	char text[64] = "";
	uint8_t got[16], want[16];

	if (!f)
		return; /* no /proc here: clock_boot_id gives zeros, checked above */
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
	fclose(f);
	clock_boot_id_parse(text, strlen(text), want);
	clock_boot_id(got);
	ck_assert_mem_eq(got, want, 16);
}
END_TEST

/* ---- value formatters ---- */

START_TEST(test_print_loop_pid)
{
	char buf[48];
	xtc_pid_t p = { .loop_id = 3, .local_id = 17, .gen = 42 };

	ck_assert_str_eq(print_loop(buf, sizeof(buf), 0), "0");
	ck_assert_str_eq(print_loop(buf, sizeof(buf), 4294967294u), "4294967294");
	ck_assert_str_eq(print_loop(buf, sizeof(buf), XTC_TAIL_LOOP_NONE), "-");
	ck_assert_int_eq(print_loop_json(7), 7);
	ck_assert_int_eq(print_loop_json(XTC_TAIL_LOOP_NONE), -1);
	ck_assert_str_eq(print_pid(buf, sizeof(buf), &p), "3.17.42");
	p.loop_id = XTC_TAIL_LOOP_NONE;
	p.gen = UINT64_MAX;
	ck_assert_str_eq(print_pid(buf, sizeof(buf), &p), "-.17.18446744073709551615");
}
END_TEST

START_TEST(test_print_duration)
{
	static const struct { uint64_t ns; const char *text; } cases[] = {
		{ 0, "0ns" },
		{ 999, "999ns" },
		{ 1000, "1.000us" },
		{ 12345, "12.345us" },
		{ 999999, "999.999us" },
		{ 1000000, "1.000ms" },
		{ 1250000, "1.250ms" },
		{ 999999999, "999.999ms" },
		{ 1000000000, "1.000s" },
		{ 12500000000ull, "12.500s" },
		{ 59999999999ull, "59.999s" },
		{ 60000000000ull, "1m00s" },
		{ 125000000000ull, "2m05s" },
		{ 3599999999999ull, "59m59s" },
		{ 3600000000000ull, "1h00m" },
		{ 11220000000000ull, "3h07m" },
		{ 86399999999999ull, "23h59m" },
		{ 86400000000000ull, "1d00h" },
		{ 187200000000000ull, "2d04h" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(print_duration(buf, sizeof(buf), cases[i].ns), cases[i].text);
	ck_assert_str_eq(print_duration(buf, sizeof(buf), UINT64_MAX), "213503d23h");
}
END_TEST

START_TEST(test_print_bytes)
{
	static const struct { uint64_t n; const char *text; } cases[] = {
		{ 0, "0B" },
		{ 1023, "1023B" },
		{ 1024, "1.0K" },
		{ 97689, "95.4K" },
		{ (1u << 20) - 1, "1024.0K" },
		{ 1u << 20, "1.0M" },
		{ 222298112, "212.0M" },
		{ 1u << 30, "1.00G" },
		{ 4ull << 30, "4.00G" },
		{ 1ull << 40, "1.00T" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(print_bytes(buf, sizeof(buf), cases[i].n), cases[i].text);
}
END_TEST

START_TEST(test_print_wall)
{
	/* 2026-01-05 10:11:12.123456789 UTC */
	const uint64_t t = 1767607872ull * 1000000000u + 123456789u;
	struct printer f;
	char buf[48], buf2[48];

	setenv("TZ", "UTC", 1);
	tzset();
	ck_assert_str_eq(print_wall(buf, sizeof(buf), t), "2026-01-05 10:11:12.123456");
	ck_assert_str_eq(print_wall_clock(buf, sizeof(buf), t), "10:11:12.123456");
	ck_assert_str_eq(print_wall(buf, sizeof(buf), 0), "1970-01-01 00:00:00.000000");
	/* the printer's cached second agrees with print_wall on both sides of
	 * a second boundary and back */
	print_init(&f, stdout, 0);
	for (uint64_t d = 0; d < 3000000000ull; d += 999999999ull) {
		ck_assert_str_eq(print_time(&f, t + d, buf, sizeof(buf)),
		                 print_wall(buf2, sizeof(buf2), t + d));
	}
	ck_assert_str_eq(print_time(&f, t, buf, sizeof(buf)), "2026-01-05 10:11:12.123456");
	/* local time: a fixed offset needs no tzdata */
	setenv("TZ", "XXX-2", 1);
	tzset();
	ck_assert_str_eq(print_wall(buf, sizeof(buf), t), "2026-01-05 12:11:12.123456");
	setenv("TZ", "UTC", 1);
	tzset();
}
END_TEST

static Suite *names_suite(void)
{
	const struct check_case cases[] = {
		{ .name = "kinds", .tests = CHECK_TESTS(test_kind_names) },
		{ .name = "enums", .tests = CHECK_TESTS(test_enum_names), .loops = N_NAME_CASES },
		{ .name = "submit_fail",
		  .tests = CHECK_TESTS(test_submit_fail_decode, test_submit_fail_detail_text) },
		{ .name = "boot_id",
		  .tests = CHECK_TESTS(test_boot_id_parse, test_boot_id_of_this_machine) },
		{ .name = "formatters",
		  .tests = CHECK_TESTS(test_print_loop_pid, test_print_duration, test_print_bytes,
		                       test_print_wall) },
	};

	return check_suite("names", cases, sizeof(cases) / sizeof(cases[0]));
}

int main(void)
{
	return check_run(names_suite());
}
