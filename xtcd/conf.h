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

/* Mark every setting of c "not given", before the command line is
 * parsed into it, so that conf_build can tell what the flags set. */
void conf_unset(struct config *c);

/* Build the settings to run with into *out: the defaults, then the file
 * at path (NULL: the default path, which may be missing), then every
 * setting cli gives.  With daemon, also require what running the daemon
 * needs (a directory).  Returns 0, or -1 with one line in err naming the
 * file, the line and the accepted form; *out is then left empty. */
int  conf_build(struct config *out, const char *path, const struct config *cli, int daemon,
                char *err, size_t errlen);

/* Free what conf_build allocated in c. */
void conf_free(struct config *c);

/* Parse "alice,1001" into a malloc'ed array (added to *list, *n).  Users
 * with group 0, groups with group 1.  Returns 0, or -1 with why. */
int  conf_parse_ids(const char *s, int groups, uint32_t **list, size_t *n, char *why, size_t len);

/* The access rule: root always; else, when neither list is set, anyone;
 * else a uid in allow_uids or a (primary) gid in allow_gids. */
int  conf_peer_allowed(const struct config *c, uid_t uid, gid_t gid);

/* The quota of uid in bytes, CONF_NO_QUOTA when it has none. */
uint64_t conf_quota_for(const struct config *c, uid_t uid);

/* A size as "256M" (exact powers of 1024 only), for messages. */
const char *conf_size_text(uint64_t v, char *buf, size_t len);

#endif /* XTCD_CONF_H */
