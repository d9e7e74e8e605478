-- Meters. `revision` numbers the filters: a change of filters starts a new revision whose meter_usage rows
-- are backfilled from raw events; queries read `ready_revision`, the newest one fully backfilled.
CREATE TABLE meters (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  name            text NOT NULL,
  event_name      text NOT NULL,
  filters         jsonb NOT NULL DEFAULT '[]',
  aggregation     jsonb NOT NULL,
  reset_usage     text NOT NULL DEFAULT 'BILLING_PERIOD' CHECK (reset_usage IN ('BILLING_PERIOD', 'NEVER')),
  revision        integer NOT NULL DEFAULT 1,
  ready_revision  integer NOT NULL DEFAULT 0,
  revised_at      timestamptz NOT NULL DEFAULT now(),
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX meters_scope ON meters (tenant_id, environment_id, created_at);
CREATE INDEX meters_pending ON meters (revised_at) WHERE ready_revision < revision;

-- Each revision's filters (rows of the ready revision keep being written while a newer one backfills)
-- and the progress of its backfill.
CREATE TABLE meter_revisions (
  meter_id     text NOT NULL REFERENCES meters(id),
  revision     integer NOT NULL,
  filters      jsonb NOT NULL,
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
  processed    bigint NOT NULL DEFAULT 0,
  total        bigint,
  error        text,
  started_at   timestamptz,
  finished_at  timestamptz,
  PRIMARY KEY (meter_id, revision)
);
