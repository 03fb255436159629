/*
 * tests/check_run.h - what the Check programs here share: a suite built
 * from a table of cases, and main()'s run of it (results printed, nonzero
 * exit when a test failed).
 */
#ifndef XTC_TESTS_CHECK_RUN_H
#define XTC_TESTS_CHECK_RUN_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

/* One TCase of a suite: its tests (NULL-terminated), a checked fixture
 * (or NULL), a timeout in seconds (0: Check's default), and for loop tests
 * the number of runs (0: each test runs once). */
struct check_case {
	const char *name;
	const TTest *const *tests;
	void      (*setup)(void);
	void      (*teardown)(void);
	int         timeout;
	int         loops;
};

/* A suite of n cases. */
static inline Suite *check_suite(const char *name, const struct check_case *cases, size_t n)
{
	Suite *s = suite_create(name);

	for (size_t i = 0; i < n; i++) {
		const struct check_case *c = &cases[i];
		TCase *tc = tcase_create(c->name);

		if (c->setup || c->teardown)
			tcase_add_checked_fixture(tc, c->setup, c->teardown);
		if (c->timeout)
			tcase_set_timeout(tc, c->timeout);
		for (const TTest *const *t = c->tests; *t; t++) {
			if (c->loops)
				tcase_add_loop_test(tc, *t, 0, c->loops);
			else
				tcase_add_test(tc, *t);
		}
		suite_add_tcase(s, tc);
	}
	return s;
}

#define CHECK_TESTS(...) ((const TTest *const[]){ __VA_ARGS__, NULL })

/* Run every test of s (forking per test unless CK_FORK=no); the exit
 * status for main. */
static inline int check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* XTC_TESTS_CHECK_RUN_H */
