/*
 * bench/xb_tp.h - the LTTng-UST tracepoint the benchmark compares against
 * xtc_tail_emit: provider xtcbench, event rec, the six fields of struct
 * xtc_shm_rec with the same widths (the timestamp is LTTng's own).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER xtcbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./xb_tp.h"

#if !defined(XB_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define XB_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	xtcbench, rec,
	LTTNG_UST_TP_ARGS(uint32_t, source, uint32_t, kind, uint32_t, loop_id,
	                  uint32_t, local_id, uint64_t, gen, uint64_t, detail),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, source, source)
		lttng_ust_field_integer(uint32_t, kind, kind)
		lttng_ust_field_integer(uint32_t, loop_id, loop_id)
		lttng_ust_field_integer(uint32_t, local_id, local_id)
		lttng_ust_field_integer(uint64_t, gen, gen)
		lttng_ust_field_integer(uint64_t, detail, detail)
	)
)

#endif /* XB_TP_H */

#include <lttng/tracepoint-event.h>
