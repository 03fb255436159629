/*
 * lib/common/trace_enc.h - the XTCL v3 and dial9 trace encoders, over an array
 * of records from any source: the in-process snapshot (lib/dump.c, behind
 * xtc_tail_dump and xtc_tail_dump_dial9) or records read back from
 * segments (xtcd --export xtcl|dial9).
 *
 * Internal: compiled into libxtctail, where -fvisibility=hidden and the
 * version script keep these symbols out of the ABI, and into libxtcseg for
 * xtcd.  The encoders only write: taking the records, and guarding a
 * library caller against SIGPIPE, are the caller's (see lib/dump.c).
 *
 * Output goes to fd through a small buffer; short writes and EINTR are
 * resumed and a full non-blocking fd is waited on with poll(2).  Every
 * function returns 0 or -errno (the first write error, or -ENOMEM).
 */
#ifndef XTC_LIB_TRACE_ENC_H
#define XTC_LIB_TRACE_ENC_H

#include <stddef.h>

#include "xtc_tail.h"

/* Whether rec[0..n) fits XTCL v3, before a byte is written: -EOVERFLOW
 * for more than UINT32_MAX records, -ERANGE for a kind or source above
 * 255 (one byte each on the wire), else 0. */
int trace_enc_xtcl_check(const xtc_tail_rec_t *rec, size_t n);

/* Write rec[0..n) to fd as an XTCL v3 dump: the 24-byte header (count n,
 * base_ts_ns the first record's ts_ns), then one varint/delta record each.
 * A timestamp that goes backwards is clamped to the one before it.  Call
 * trace_enc_xtcl_check() first: values it refuses would be truncated. */
int trace_enc_xtcl_write(int fd, const xtc_tail_rec_t *rec, size_t n);

/* Write rec[0..n) to fd as a dial9 trace ("TRC\0", version 1): one schema
 * per kind, written before its first event, timestamps exact (a reset
 * frame where a delta would not fit or would go backwards), and WAKE
 * joined to the task that last parked as its task pointer. */
int trace_enc_dial9_write(int fd, const xtc_tail_rec_t *rec, size_t n);

#endif /* XTC_LIB_TRACE_ENC_H */
