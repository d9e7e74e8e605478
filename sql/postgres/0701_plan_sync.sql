-- Plan sync (POST /v1/plans/{id}/sync/subscriptions): a run moves every live subscription of a plan onto the
-- plan's current prices, from the next period or now. The worker's plan-sync job works through a run's
-- subscriptions in id order; after each it records the change (plan_sync_changes, one row per run and
-- subscription: the audit, and what makes a resumed run move nobody twice) and its cursor, in the same
-- transaction as the subscription's new line items.
CREATE TABLE plan_sync_runs (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  plan_id            text NOT NULL REFERENCES plans(id),
  change_at          text NOT NULL CHECK (change_at IN ('immediate', 'end_of_period')),
  proration_behavior text NOT NULL CHECK (proration_behavior IN ('create_prorations', 'none')),
  run_status         text NOT NULL CHECK (run_status IN ('pending', 'running', 'completed', 'failed')),
  total              integer NOT NULL,
  processed          integer NOT NULL DEFAULT 0,
  moved              integer NOT NULL DEFAULT 0,
  skipped            integer NOT NULL DEFAULT 0,
  failed             integer NOT NULL DEFAULT 0,
  -- The last subscription id the run is done with.
  cursor             text NOT NULL DEFAULT '',
  started_at         timestamptz,
  finished_at        timestamptz,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX plan_sync_runs_open ON plan_sync_runs (created_at) WHERE run_status IN ('pending', 'running');

CREATE TABLE plan_sync_changes (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  run_id          text NOT NULL REFERENCES plan_sync_runs(id),
  subscription_id text NOT NULL REFERENCES subscriptions(id),
  outcome         text NOT NULL CHECK (outcome IN ('moved', 'skipped', 'failed')),
  reason          text,
  effective_date  timestamptz,
  -- [{ line_item_id, price_id, quantity }] of the lines ended and started.
  ended           jsonb NOT NULL DEFAULT '[]',
  started         jsonb NOT NULL DEFAULT '[]',
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text,
  UNIQUE (run_id, subscription_id)
);
