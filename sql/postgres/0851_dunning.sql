-- Dunning (domains/dunning): each environment's schedule, and where each overdue invoice stands in it. The invoice
-- carries its state for reads (dunning_status, dunning_next_step_at, dunning_next_step); a subscription whose
-- entitlements a final step suspended names the invoice that must be paid.

CREATE TABLE dunning_settings (
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  enabled        boolean NOT NULL DEFAULT false,
  -- [{ days_after_due, actions: [...] }], ordered by days.
  steps          jsonb NOT NULL DEFAULT '[]',
  -- When it was last turned on: invoices due from then on enter the schedule (older overdue ones are not swept in).
  enabled_at     timestamptz,
  updated_at     timestamptz NOT NULL,
  updated_by     text,
  PRIMARY KEY (tenant_id, environment_id)
);

-- One row per step run on an invoice: the unique key makes a step run once, whichever worker gets there first.
CREATE TABLE dunning_step_runs (
  invoice_id     text NOT NULL,
  step           integer NOT NULL,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  actions        jsonb NOT NULL,
  -- { action: outcome } for every action of the step.
  results        jsonb NOT NULL DEFAULT '{}',
  ran_at         timestamptz NOT NULL,
  PRIMARY KEY (invoice_id, step)
);

-- NULL: never in dunning; active: steps to come; completed: the last step ran; uncollectible: the last step marked it so;
-- resolved: paid in full (or voided) after dunning began.
ALTER TABLE invoices ADD COLUMN dunning_status text CHECK (dunning_status IN ('active', 'completed', 'uncollectible', 'resolved'));
ALTER TABLE invoices ADD COLUMN dunning_next_step integer;
ALTER TABLE invoices ADD COLUMN dunning_next_step_at timestamptz;
CREATE INDEX invoices_dunning_due ON invoices (dunning_next_step_at) WHERE dunning_status = 'active';

ALTER TABLE subscriptions ADD COLUMN entitlements_suspended_by text;
