-- contrib/clickhouse/queries.sql - the questions a fleet asks of the
-- tables xtcd --ship fills (xtcd(8), SHIPPING).  Each query starts at a
-- "-- name:" line; tests/e2e_clickhouse.sh runs every one of them against
-- a real ClickHouse and checks it against xtcd --stats and --report.
--
-- Every query reads with FINAL: a batch sent twice (a shipper killed
-- between ClickHouse's answer and its cursor write) is two copies of the
-- same rows until a merge collapses them, and FINAL collapses them at read
-- time.  An exact aggregate over the key (uniqExact((host, boot_id, seg_ns,
-- seg, blk, idx))) is the other way to count exactly without FINAL.
-- Windows are wall-clock: edit the INTERVAL to ask about another one.

-- name: events_drops_per_loop
-- Events and drops per host and loop over the last hour.
SELECT host, loop, events, drop_records, dropped
FROM
(
  SELECT host, ring_loop AS loop, count() AS events
  FROM events FINAL
  WHERE time >= now() - INTERVAL 1 HOUR
  GROUP BY host, loop
)
ANY LEFT JOIN
(
  SELECT host, ring_loop AS loop, count() AS drop_records, sum(count) AS dropped
  FROM drops FINAL
  WHERE what = 'drop' AND time >= now() - INTERVAL 1 HOUR
  GROUP BY host, loop
) USING (host, loop)
ORDER BY host, loop;

-- name: latency_per_host
-- Wake-to-run latency (RUN's detail, ns) per host over the last hour;
-- GROUP BY host, session for a row per session, as xtcd --report shows.
SELECT host, count() AS runs,
       quantileExact(0.5)(detail) AS p50_ns, quantileExact(0.99)(detail) AS p99_ns,
       max(detail) AS max_ns
FROM events FINAL
WHERE kind = 'RUN' AND time >= now() - INTERVAL 1 HOUR
GROUP BY host
ORDER BY host;

-- name: incomplete_sessions
-- Sessions whose record is not complete, and why.
SELECT host, session, pid, comm, reason, produced, written, dropped, lost,
       multiIf(ended = 0, 'no SESSION_END shipped yet: still recording, or xtcd is down',
               reason != 'detached', concat('ended ', reason),
               dropped > 0, concat(toString(dropped), ' records dropped'),
               lost > 0, concat(toString(lost), ' records lost to I/O'),
               'part of its history was evicted or a ring was corrupt') AS why
FROM sessions FINAL
WHERE complete = 0
ORDER BY host, start, session;

-- name: lost_wakeups
-- The seed's lost-wakeup join: a proc whose last record is a PARK_TASK,
-- with no WAKE for its task after it, in a session that went on
-- recording for at least the window (1.5 s here, xtcd --report --stall).
-- As --report does, the verdict is "cannot_tell" when something that could
-- hold the missing WAKE is known to be missing: a drop of the session
-- ending after the park, records lost to I/O, an end other than a clean
-- detach, or segments of the host deleted before they were shipped.
SELECT host, session, pid, comm, loop, local_id, gen, task, park_ns,
       if(last_drop_ns >= park_ns OR last_unshipped_ns >= park_ns OR reason != 'detached'
          OR lost > 0, 'cannot_tell', 'proven') AS verdict
FROM
(
  SELECT * FROM
  (
    SELECT * FROM
    (
      SELECT * FROM
      (
        -- each proc's last park, when nothing of it (RUN, EXIT, PARK_TASK) followed
        SELECT host, boot_id, session, any(pid) AS pid, any(comm) AS comm,
               loop, local_id, gen, argMax(detail, wall_ns) AS task,
               max(wall_ns) AS park_ns, argMax(kind, wall_ns) AS last_kind
        FROM events FINAL
        WHERE kind IN ('PARK_TASK', 'RUN', 'EXIT')
        GROUP BY host, boot_id, session, loop, local_id, gen
        HAVING last_kind = 'PARK_TASK'
      )
      ANY LEFT JOIN
      (
        -- ... and no WAKE of its task after it
        SELECT host, boot_id, session, detail AS task, max(wall_ns) AS last_wake
        FROM events FINAL WHERE kind = 'WAKE'
        GROUP BY host, boot_id, session, task
      ) USING (host, boot_id, session, task)
      WHERE last_wake < park_ns
    )
    ANY LEFT JOIN
    (
      -- ... while the session went on recording for the window (1.5 s)
      SELECT host, boot_id, session, max(wall_ns) AS last_ns
      FROM events FINAL GROUP BY host, boot_id, session
    ) USING (host, boot_id, session)
    WHERE last_ns >= park_ns + 1500000000
  )
  ANY LEFT JOIN
  (
    -- what could hide the WAKE: a drop of the session after the park, ...
    SELECT host, session, max(to_ns) AS last_drop_ns
    FROM drops FINAL WHERE what = 'drop' GROUP BY host, session
  ) USING (host, session)
)
ANY LEFT JOIN
(
  -- ... records lost to I/O, an unclean end, or segments never shipped
  SELECT host, session, reason, lost, last_unshipped_ns
  FROM (SELECT host, session, reason, lost FROM sessions FINAL)
  ANY LEFT JOIN
  (
    SELECT host, max(from_ns) AS last_unshipped_ns
    FROM drops FINAL WHERE what = 'unshipped' GROUP BY host
  ) USING (host)
) USING (host, session)
ORDER BY host, session, park_ns;
