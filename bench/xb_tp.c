/*
 * bench/xb_tp.c - instantiate the xtcbench tracepoint provider (probes and
 * the tracepoint definitions) inside the benchmark driver.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "xb_tp.h"
