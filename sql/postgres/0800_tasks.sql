-- Tasks (/v1/tasks, Flexprice's shape): imports of events, customers, prices and features from a CSV or JSON Lines
-- file, and exports of one entity over a window to a file under DATA_DIR/tasks. A task is worked by whichever
-- process claims it (the API at once, else the worker's tasks job): the claim sets task_status PROCESSING and a
-- heartbeat; a task whose heartbeat stopped is claimed again and resumes after its checkpoint, processed_records,
-- the records done. Each batch of records is written with its checkpoint and its row errors in one transaction
-- (events: handed to intake first, with ids fixed by task and row, so a batch sent again is deduplicated).
CREATE TABLE tasks (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  task_type          text NOT NULL CHECK (task_type IN ('IMPORT', 'EXPORT')),
  entity_type        text NOT NULL,
  file_type          text NOT NULL,
  file_url           text,
  file_name          text,
  -- An import file given in the request itself.
  file_content       text,
  -- EXPORT: { start_time, end_time, filters }.
  export_spec        jsonb,
  scheduled_task_id  text,
  task_status        text NOT NULL CHECK (task_status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
  total_records      integer,
  processed_records  integer NOT NULL DEFAULT 0,
  successful_records integer NOT NULL DEFAULT 0,
  failed_records     integer NOT NULL DEFAULT 0,
  error_summary      text,
  -- Bytes of the export file written, or of the import file read from file_url (kept under DATA_DIR/tasks for a resume).
  file_bytes         bigint,
  started_at         timestamptz,
  completed_at       timestamptz,
  failed_at          timestamptz,
  heartbeat_at       timestamptz,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX tasks_scope ON tasks (tenant_id, environment_id, created_at);
CREATE INDEX tasks_open ON tasks (created_at) WHERE task_status IN ('PENDING', 'PROCESSING');

-- An import's rejected records: the record's number (1 = the first record after a CSV header), the field and why.
CREATE TABLE task_row_errors (
  task_id    text NOT NULL REFERENCES tasks(id),
  row_number integer NOT NULL,
  field      text NOT NULL,
  reason     text NOT NULL,
  PRIMARY KEY (task_id, row_number, field)
);
