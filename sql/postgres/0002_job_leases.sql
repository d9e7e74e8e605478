-- One leader per scheduled job across processes: a lease row, taken when free or expired.
-- (A lease instead of a session advisory lock: the embedded PGlite serves one connection, which a
-- held session lock would pin for the whole run.)
CREATE TABLE job_leases (
  name        text PRIMARY KEY,
  holder      text NOT NULL,
  expires_at  timestamptz NOT NULL,
  last_run_at timestamptz,
  last_summary jsonb
);
