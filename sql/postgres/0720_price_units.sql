-- Price units (Flexprice's pricing_unit): a catalog of custom units (credits, tokens) with their base currency
-- and the rate one unit is worth in it. A CUSTOM price names its unit by price_unit_id and copies its code and
-- rate, so the price keeps billing as created. The code, base currency and rate are fixed once created.
CREATE TABLE price_units (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  name            text NOT NULL,
  code            text NOT NULL,
  symbol          text NOT NULL,
  base_currency   text NOT NULL,
  conversion_rate numeric NOT NULL CHECK (conversion_rate > 0),
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX price_units_scope ON price_units (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX price_units_code ON price_units (tenant_id, environment_id, code) WHERE status <> 'deleted';

ALTER TABLE prices ADD COLUMN price_unit_id text REFERENCES price_units(id);
CREATE INDEX prices_price_unit ON prices (price_unit_id) WHERE status = 'published' AND price_unit_id IS NOT NULL;

-- An entitlement's window (null: from always, until always) and the entitlement it stands in for.
ALTER TABLE entitlements
  ADD COLUMN parent_entitlement_id text REFERENCES entitlements(id),
  ADD COLUMN start_date timestamptz,
  ADD COLUMN end_date timestamptz,
  ADD CONSTRAINT entitlements_window CHECK (end_date IS NULL OR start_date IS NULL OR end_date > start_date);
