/*
 * lib/seg/segname.h - what the numbers of the segment format mean, in
 * words: event kinds (lib/xtc_tail.h), SESSION_END reasons, DROP causes
 * and CORRUPT reasons (proto/xtc_seg.h), and the two shapes of a
 * SUBMIT_FAIL detail.  Every reading mode, the report and the daemon's
 * log take their names from here.  Internal (libxtcseg.la).
 *
 * Each enumeration has a name: one token, stable, for JSON and `key=value`
 * text ("producer_died").  End and corrupt reasons also have a phrase for
 * sentences in the daemon's log ("producer died").  A value no table
 * knows is formatted into the caller's buffer ("KIND_17", "cause_9"), so
 * a newer writer's values still print.
 *
 * A new event kind (lib/xtc_tail.h, with its XTC_TAIL_NKINDS) is one row
 * in segname.c's kind table; the build fails until the two agree.
 */
#ifndef XTC_LIB_SEGNAME_H
#define XTC_LIB_SEGNAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/xtc_seg.h"
#include "xtc_tail.h"

/* Kinds with a name: 0 .. SEGNAME_NKINDS - 1.  Counters indexed by kind
 * (--stats, --report) have one slot per named kind and one for the rest. */
#define SEGNAME_NKINDS XTC_TAIL_NKINDS

/* "WAKE", ... or "KIND_<n>" (formatted in buf). */
const char *segname_kind(uint32_t kind, char *buf, size_t len);

/* enum xtc_seg_end_reason: "detached", ... or "reason_<n>" (in buf). */
const char *segname_end_reason(uint32_t reason, char *buf, size_t len);

/* The same as a phrase: "detached", "producer died", ... or "reason <n>". */
const char *segname_end_reason_text(uint32_t reason, char *buf, size_t len);

/* enum xtc_seg_drop_cause: "ring_full", "overwritten", "no_free_ring",
 * "quota" or "cause_<n>" (in buf). */
const char *segname_drop_cause(uint32_t cause, char *buf, size_t len);

/* enum xtc_seg_corrupt_reason: "head_backwards", "head_jumped",
 * "dropped_backwards", "head_too_fast", "unwritten" or "reason_<n>" (in
 * buf). */
const char *segname_corrupt_reason(uint32_t reason, char *buf, size_t len);

/* The same as a phrase: "head went backwards", ... or "reason <n>". */
const char *segname_corrupt_reason_text(uint32_t reason, char *buf, size_t len);

/* A SUBMIT_FAIL detail (lib/xtc_tail.h): a refused submit's errno, stored
 * negated or plain, or a short submit as XTC_TAIL_SHORT_SUBMIT_BASE + the
 * SQEs it left unsubmitted.  Returns 1 for a short submit (the count in
 * *left, *err 0), 0 for an errno (in *err, positive; 0 when the detail
 * is 0; *left 0). */
int segname_submit_fail(uint64_t detail, int *err, uint64_t *left);

#endif /* XTC_LIB_SEGNAME_H */
