/*
 * xtcd/status.h - live status: what the daemon tells systemd (sd_notify
 * READY/STATUS/WATCHDOG/STOPPING) and what it answers to `xtcd --status`
 * (STATUS_REQ on the attach socket, proto/xtc_attach.h).
 */
#ifndef XTCD_STATUS_H
#define XTCD_STATUS_H

#include <ev.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Start the once-a-second sampler (rates, STATUS=) and, when systemd asks
 * for one (WATCHDOG_USEC, WATCHDOG_PID unset or ours), the watchdog. */
void status_init(struct ev_loop *loop);
void status_fini(void);

/* Send one sd_notify message ("READY=1\nSTATUS=..."); nothing without
 * NOTIFY_SOCKET. */
void status_notify(const char *msg);

/* Whether the first message of a connection, n bytes at buf (n < 0: a
 * receive error) with nfds descriptors, asks for the status.  A request
 * that is not well-formed is one too when its type says so: *why then
 * says what is wrong and the caller refuses it. */
int  status_is_request(const void *buf, ssize_t n, int nfds, const char **why);

/* Answer a status request on fd, which this takes over: STATUS, the
 * sessions uid may see, STATUS_END, then close. */
void status_serve(int fd, uid_t uid);

/* xtcd --status: ask the daemon at path and print to out.  Returns the
 * exit code: 0, or 1 when no daemon answers (one line on stderr). */
int  status_client(const char *path, int json, FILE *out);

/* A count as "812", "12.3k", "1.23M" (powers of 1000) into buf. */
const char *status_count_text(uint64_t v, char *buf, size_t len);

#endif /* XTCD_STATUS_H */
