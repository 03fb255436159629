/*
 * xtcd/read/ship_http.c - POST a batch to ClickHouse's HTTP interface.
 *
 * libcurl, because a fleet's ClickHouse is rarely on loopback: it brings
 * TLS (https://), user and password in the URL or ClickHouse's
 * ?user=&password= parameters, proxies, IPv6 and keep-alive, all kept up
 * to date by Debian.  One easy handle is reused, so consecutive batches
 * share one connection.  A build without libcurl (configure
 * --without-curl) keeps every other mode; --ship then says how to get it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xtcd/read/ship.h"

#if HAVE_CURL
#include <curl/curl.h>

#define ANSWER_MAX 4096   /* of ClickHouse's answer kept for the message */

struct ship_http {
	CURL *c;
	char *base;
	char  answer[ANSWER_MAX];
	size_t answer_len;
	char  curl_err[CURL_ERROR_SIZE];
};

int ship_http_available(void)
{
	return 1;
}

/* Keep the start of the answer (an error text); discard the rest. */
static size_t answer_cb(char *p, size_t size, size_t n, void *user)
{
	struct ship_http *h = user;
	size_t len = size * n, room = sizeof(h->answer) - 1 - h->answer_len;

	if (room > len)
		room = len;
	memcpy(h->answer + h->answer_len, p, room);
	h->answer_len += room;
	h->answer[h->answer_len] = '\0';
	return len;
}

int ship_http_open(struct ship_http **hp, const char *base_url)
{
	struct ship_http *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	h->c = curl_easy_init();
	h->base = strdup(base_url);
	if (!h->c || !h->base) {
		ship_http_close(h);
		return -ENOMEM;
	}
	curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, answer_cb);
	curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->c, CURLOPT_ERRORBUFFER, h->curl_err);
	curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	/* A batch is small: a server that takes a minute is in trouble, and
	 * the batch is sent again, which the table's key makes harmless. */
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, 60000L);
	*hp = h;
	return 0;
}

void ship_http_close(struct ship_http *h)
{
	if (!h)
		return;
	if (h->c)
		curl_easy_cleanup(h->c);
	free(h->base);
	free(h);
}

/* The first line of ClickHouse's answer, trimmed. */
static const char *answer_line(struct ship_http *h)
{
	char *nl = strchr(h->answer, '\n');

	if (nl)
		*nl = '\0';
	return h->answer_len ? h->answer : "(no answer)";
}

int ship_http_post(struct ship_http *h, const char *sql, const char *body, size_t len,
                   char *err, size_t errlen)
{
	char *q = curl_easy_escape(h->c, sql, 0), *url;
	long status = 0;
	CURLcode rc;
	int ret = -1;

	if (!q || asprintf(&url, "%s%squery=%s", h->base, strchr(h->base, '?') ? "&" : "?", q) < 0) {
		curl_free(q);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	curl_free(q);
	h->answer_len = 0;
	h->answer[0] = '\0';
	h->curl_err[0] = '\0';
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(h->c);
	if (rc != CURLE_OK)
		snprintf(err, errlen, "%s", h->curl_err[0] ? h->curl_err : curl_easy_strerror(rc));
	else if (curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status), status != 200)
		snprintf(err, errlen, "HTTP %ld: %s", status, answer_line(h));
	else
		ret = 0;
	free(url);
	return ret;
}

#else /* !HAVE_CURL */

int ship_http_available(void)
{
	return 0;
}

int ship_http_open(struct ship_http **hp, const char *base_url)
{
	(void)base_url;
	*hp = NULL;
	return -ENOSYS;
}

void ship_http_close(struct ship_http *h)
{
	(void)h;
}

int ship_http_post(struct ship_http *h, const char *sql, const char *body, size_t len,
                   char *err, size_t errlen)
{
	(void)h, (void)sql, (void)body, (void)len;
	snprintf(err, errlen, "built without libcurl");
	return -1;
}

#endif
