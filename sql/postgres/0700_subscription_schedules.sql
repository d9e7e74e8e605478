-- Plan changes (POST /v1/subscriptions/{id}/change/execute). A change at the end of the period is a
-- schedule: its line items are written when it is asked (the old plan's end at the boundary, the target
-- plan's start there), so the billing run bills the boundary right whichever job runs first; the worker
-- moves the subscription onto the target plan when it comes due. Cancelling a pending schedule undoes its
-- line items. plan_start_date: when the subscription joined its current plan (a plan's credit grants
-- count their periods from there).
ALTER TABLE subscriptions ADD COLUMN plan_start_date timestamptz;

CREATE TABLE subscription_schedules (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  subscription_id text NOT NULL REFERENCES subscriptions(id),
  schedule_type   text NOT NULL CHECK (schedule_type IN ('plan_change')),
  schedule_status text NOT NULL CHECK (schedule_status IN ('pending', 'executed', 'cancelled', 'failed')),
  scheduled_at    timestamptz NOT NULL,
  -- target_plan_id, proration_behavior, the line items it ended (with their ends before) and created.
  configuration   jsonb NOT NULL,
  execution_result jsonb,
  executed_at     timestamptz,
  cancelled_at    timestamptz,
  error_message   text,
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX subscription_schedules_subscription ON subscription_schedules (subscription_id, scheduled_at);
-- The worker's due scan, and at most one pending plan change per subscription.
CREATE INDEX subscription_schedules_due ON subscription_schedules (scheduled_at) WHERE schedule_status = 'pending';
CREATE UNIQUE INDEX subscription_schedules_one_pending ON subscription_schedules (subscription_id) WHERE schedule_status = 'pending' AND schedule_type = 'plan_change';
