-- Tax rates, their associations (tenant, customer, subscription) and the taxes applied to invoices.

CREATE TABLE tax_rates (
  id               text PRIMARY KEY,
  tenant_id        text NOT NULL,
  environment_id   text NOT NULL,
  name             text NOT NULL,
  code             text NOT NULL,
  description      text,
  tax_rate_type    text NOT NULL CHECK (tax_rate_type IN ('percentage', 'fixed')),
  percentage_value numeric,
  fixed_value      numeric,
  scope            text NOT NULL DEFAULT 'EXTERNAL' CHECK (scope IN ('INTERNAL', 'EXTERNAL', 'ONETIME')),
  tax_rate_status  text NOT NULL DEFAULT 'ACTIVE' CHECK (tax_rate_status IN ('ACTIVE', 'INACTIVE')),
  status           text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata         jsonb NOT NULL DEFAULT '{}',
  version          integer NOT NULL DEFAULT 1,
  created_at       timestamptz NOT NULL DEFAULT now(),
  created_by       text,
  updated_at       timestamptz NOT NULL DEFAULT now(),
  updated_by       text,
  CHECK ((tax_rate_type = 'percentage') = (percentage_value IS NOT NULL)),
  CHECK ((tax_rate_type = 'fixed') = (fixed_value IS NOT NULL))
);
CREATE INDEX tax_rates_scope ON tax_rates (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX tax_rates_code ON tax_rates (tenant_id, environment_id, code) WHERE status <> 'deleted';

CREATE TABLE tax_associations (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  tax_rate_id    text NOT NULL REFERENCES tax_rates(id),
  entity_type    text NOT NULL CHECK (entity_type IN ('tenant', 'customer', 'subscription')),
  entity_id      text NOT NULL,
  priority       integer NOT NULL DEFAULT 0,
  auto_apply     boolean NOT NULL DEFAULT true,
  currency       text,
  start_date     timestamptz,
  end_date       timestamptz,
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  version        integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text
);
CREATE INDEX tax_associations_entity ON tax_associations (tenant_id, environment_id, entity_type, entity_id);
CREATE UNIQUE INDEX tax_associations_once ON tax_associations (tenant_id, environment_id, entity_type, entity_id, tax_rate_id) WHERE status <> 'deleted';

CREATE TABLE taxes_applied (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  tax_rate_id        text NOT NULL,
  -- The rate as it was applied: later edits of the rate do not change an issued invoice.
  tax_rate           jsonb NOT NULL,
  tax_association_id text,
  entity_type        text NOT NULL,
  entity_id          text NOT NULL,
  taxable_amount     numeric NOT NULL,
  tax_amount         numeric NOT NULL,
  currency           text NOT NULL,
  applied_at         timestamptz NOT NULL,
  idempotency_key    text,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX taxes_applied_entity ON taxes_applied (entity_type, entity_id);
