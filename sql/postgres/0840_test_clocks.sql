-- Test clocks (sandbox environments only): a clock's customers live on its time. Advancing it runs the
-- scheduled jobs for them at each due instant; wall-clock runs leave them alone.

CREATE TABLE test_clocks (
  id                   text PRIMARY KEY,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL REFERENCES environments(id),
  name                 text NOT NULL,
  frozen_time          timestamptz NOT NULL,
  clock_status         text NOT NULL DEFAULT 'ready' CHECK (clock_status IN ('ready', 'advancing', 'internal_failure')),
  -- While advancing: where the advance goes, and how many due instants it has stepped through.
  advance_target       timestamptz,
  advance_started_from timestamptz,
  advance_steps        integer NOT NULL DEFAULT 0,
  failure_reason       text,
  status               text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata             jsonb NOT NULL DEFAULT '{}',
  version              integer NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  created_by           text,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  updated_by           text
);
CREATE INDEX test_clocks_scope ON test_clocks (tenant_id, environment_id, created_at);

ALTER TABLE customers ADD COLUMN test_clock_id text REFERENCES test_clocks(id);
-- Wall-clock jobs leave out customers on a clock: a small anti-join on this index (usually empty).
CREATE INDEX customers_test_clock ON customers (test_clock_id, id) WHERE test_clock_id IS NOT NULL;

-- Outbox events written while a clock advances carry its time: the advance sets meterbill.test_clock
-- (json { id, frozen_time }) in each of its transactions, and the event is stamped with it.
-- (The body keeps each ';' mid-line: the migration runner splits statements at a ';' ending a line.)
CREATE FUNCTION webhook_events_test_clock() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE clock text := current_setting('meterbill.test_clock', true); BEGIN
  IF clock IS NOT NULL AND clock <> '' THEN
    NEW.created_at := (clock::jsonb ->> 'frozen_time')::timestamptz; NEW.payload := NEW.payload || jsonb_build_object('test_clock', clock::jsonb); END IF; RETURN NEW; END
$$;
CREATE TRIGGER webhook_events_test_clock BEFORE INSERT ON webhook_events FOR EACH ROW EXECUTE FUNCTION webhook_events_test_clock();
