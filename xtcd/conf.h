/*
 * xtcd/conf.h - the configuration file (xtcd.conf(5)) and how it merges
 * with the command line: built-in defaults, then the file, then the flags
 * given on the command line, which always win.
 *
 * (Not "config.h": that name is autoconf's, and a header next to the .c
 * files would shadow it.)
 */
#ifndef XTCD_CONF_H
#define XTCD_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xtcd/xtcd.h"

#define CONF_NO_QUOTA UINT64_MAX

/* The file read when --config is not given (a missing one is fine). */
const char *conf_default_path(void);

/* Build the settings to run with into *out: the defaults, then the file
 * at path (NULL: the default path, which may be missing), then every
 * flag cli holds (NULL: none).  With daemon, also require what running the daemon
 * needs (a directory).  Returns 0, or -1 with one line in err naming the
 * file, the line and the accepted form; *out is then left empty. */
struct settings_cli;
int  conf_build(struct config *out, const char *path, const struct settings_cli *cli, int daemon,
                char *err, size_t errlen);

/* Free what conf_build allocated in c. */
void conf_free(struct config *c);

/* The access rule: root always; else, when neither list is set, anyone;
 * else a uid in allow_uids or a (primary) gid in allow_gids. */
int  conf_peer_allowed(const struct config *c, uid_t uid, gid_t gid);

/* The quota of uid in bytes, CONF_NO_QUOTA when it has none. */
uint64_t conf_quota_for(const struct config *c, uid_t uid);

/* How many sessions one uid may have attached at once:
 * max_sessions_per_uid, or for auto half of max_clients (at least 1). */
unsigned conf_max_sessions_per_uid(const struct config *c);

/* How many bytes of client segments xtcd maps for one uid at once:
 * max_shm_per_uid, or for auto half of physical memory. */
uint64_t conf_max_shm_per_uid(const struct config *c);

/* A size as "256M" (exact powers of 1024 only), for messages. */
const char *conf_size_text(uint64_t v, char *buf, size_t len);

#endif /* XTCD_CONF_H */
