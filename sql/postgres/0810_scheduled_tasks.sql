-- Scheduled exports (/v1/tasks/scheduled): a task exports one entity on an interval to a bucket or a local directory,
-- one run per window. The watermark is the end of the last window planned: the next window starts there, so windows
-- follow each other without gap or overlap. The bucket's credentials are sealed (infra/secrets.ts, the task id as
-- associated data) and never read back by the API.
CREATE TABLE scheduled_tasks (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  connection_id         text,
  entity_type           text NOT NULL,
  interval              text NOT NULL CHECK (interval IN ('15MIN', 'hourly', 'daily')),
  enabled               boolean NOT NULL DEFAULT true,
  job_config            jsonb NOT NULL,
  encrypted_secret_data text,
  watermark             timestamptz NOT NULL,
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text
);
CREATE INDEX scheduled_tasks_scope ON scheduled_tasks (tenant_id, environment_id, created_at);
CREATE INDEX scheduled_tasks_due ON scheduled_tasks (watermark) WHERE enabled AND status = 'published';

-- One row per window of a task: 'automatic' windows come from the watermark (unique per task and window start: a
-- window is planned once), 'custom' ones from a forced run's range. A run is taken under a lease (lease_token,
-- lease_until); a failed attempt waits next_attempt_at and is given up (failed) after the last attempt.
CREATE TABLE scheduled_task_runs (
  id                text PRIMARY KEY,
  tenant_id         text NOT NULL,
  environment_id    text NOT NULL,
  scheduled_task_id text NOT NULL REFERENCES scheduled_tasks(id),
  mode              text NOT NULL CHECK (mode IN ('automatic', 'custom')),
  window_start      timestamptz NOT NULL,
  window_end        timestamptz NOT NULL CHECK (window_end > window_start),
  run_status        text NOT NULL DEFAULT 'pending' CHECK (run_status IN ('pending', 'running', 'completed', 'failed')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL,
  lease_token       text,
  lease_until       timestamptz,
  row_count         bigint,
  byte_count        bigint,
  location          text,
  error             text,
  started_at        timestamptz,
  completed_at      timestamptz,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
CREATE UNIQUE INDEX scheduled_task_runs_window ON scheduled_task_runs (scheduled_task_id, window_start) WHERE mode = 'automatic';
CREATE INDEX scheduled_task_runs_task ON scheduled_task_runs (scheduled_task_id, created_at);
CREATE INDEX scheduled_task_runs_due ON scheduled_task_runs (next_attempt_at) WHERE run_status IN ('pending', 'running');
