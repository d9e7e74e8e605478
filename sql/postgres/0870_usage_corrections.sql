-- Usage corrections (docs/usage.md, "Corrections"): one row per applied cancel or amend of a stored event, with who,
-- when and why. The event's corrections form a chain (sequence 1, 2, …): the unique sequence serializes two requests
-- correcting one event at once, and the unique correction key (a digest of the item) makes a resent item change nothing.
-- status: pending until its ClickHouse rows are written (the usage-corrections job finishes what a crash left pending).
CREATE TABLE usage_corrections (
  id                   text PRIMARY KEY,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  event_id             text NOT NULL,
  sequence             integer NOT NULL,
  correction_key       text NOT NULL,
  action               text NOT NULL CHECK (action IN ('cancel', 'amend')),
  reason               text,
  -- The stored event whose usage this correction cancels (the original, or the previous amend's replacement).
  cancelled_id         text NOT NULL,
  external_customer_id text NOT NULL,
  event_name           text NOT NULL,
  event_timestamp      timestamptz NOT NULL,
  -- amend: the corrected event, stored under a new id.
  replacement_id       text,
  replacement          jsonb,
  status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied')),
  created_by           text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  applied_at           timestamptz,
  UNIQUE (tenant_id, environment_id, event_id, sequence),
  UNIQUE (tenant_id, environment_id, event_id, correction_key)
);

CREATE INDEX usage_corrections_replacement ON usage_corrections (tenant_id, environment_id, replacement_id) WHERE replacement_id IS NOT NULL;
CREATE INDEX usage_corrections_listing ON usage_corrections (tenant_id, environment_id, event_timestamp);
CREATE INDEX usage_corrections_pending ON usage_corrections (created_at) WHERE status = 'pending';
