-- Usage adjustments (docs/invoicing.md, "Late usage and corrections settle themselves"): each environment's settings,
-- and one row per adjustment issued for a finalized usage line. A row is written (pending) before its document, under
-- a key unique per (invoice line, usage it settles up to), so a rerun, a crash or a second worker issues it once: the
-- document carries the same key as its idempotency_key, and a pending row is finished with its own amounts.
CREATE TABLE usage_adjustment_settings (
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  late_usage     text NOT NULL DEFAULT 'adjust' CHECK (late_usage IN ('adjust', 'ignore')),
  -- Below this amount (absolute, in the invoice's currency) nothing is issued; the difference waits for the next run.
  minimum_amount numeric NOT NULL DEFAULT 0,
  -- Finalized invoices whose period ended within this many of their periods are looked at.
  horizon_periods integer NOT NULL DEFAULT 3,
  updated_at     timestamptz NOT NULL,
  updated_by     text,
  PRIMARY KEY (tenant_id, environment_id)
);

CREATE TABLE usage_adjustments (
  id                   text PRIMARY KEY,
  -- The order adjustments of a line were made in: the last one's settled_usage is what the line settled.
  seq                  bigserial NOT NULL,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  invoice_id           text NOT NULL,
  invoice_line_item_id text NOT NULL,
  adjustment_key       text NOT NULL,
  -- The line's usage this adjustment settles up to (the next run prices from here).
  settled_usage        numeric NOT NULL,
  usage_delta          numeric NOT NULL,
  amount               numeric NOT NULL,
  tax                  numeric NOT NULL,
  total                numeric NOT NULL,
  kind                 text NOT NULL CHECK (kind IN ('charge', 'credit')),
  status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'issued')),
  -- invoice (a USAGE_ADJUSTMENT invoice) or credit_note, once issued.
  document_type        text,
  document_id          text,
  created_at           timestamptz NOT NULL,
  issued_at            timestamptz,
  UNIQUE (tenant_id, environment_id, adjustment_key)
);

CREATE INDEX usage_adjustments_line ON usage_adjustments (invoice_line_item_id, seq);
CREATE INDEX usage_adjustments_pending ON usage_adjustments (created_at) WHERE status = 'pending';
