-- Catalog and customers: customers (with integration mappings), features, plans, addons, prices and
-- entitlements. Every row carries the common record columns; keys that must be unique are unique
-- among records that are not deleted, so a deleted record's key can be used again.
-- meter_id columns carry no foreign key: meters are another migration series, applied in any order.

CREATE TABLE customers (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL,
  environment_id      text NOT NULL,
  external_id         text NOT NULL,
  name                text NOT NULL DEFAULT '',
  email               text,
  address_line1       text,
  address_line2       text,
  address_city        text,
  address_state       text,
  address_postal_code text,
  address_country     text,
  status              text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata            jsonb NOT NULL DEFAULT '{}',
  version             integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT now(),
  created_by          text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text
);
CREATE INDEX customers_scope ON customers (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX customers_external_id ON customers (tenant_id, environment_id, external_id) WHERE status <> 'deleted';

CREATE TABLE entity_integration_mappings (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  entity_id          text NOT NULL,
  entity_type        text NOT NULL,
  provider_type      text NOT NULL,
  provider_entity_id text NOT NULL,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX entity_integration_mappings_entity ON entity_integration_mappings (tenant_id, environment_id, entity_id);
CREATE UNIQUE INDEX entity_integration_mappings_provider ON entity_integration_mappings
  (tenant_id, environment_id, entity_type, provider_type, provider_entity_id) WHERE status <> 'deleted';

CREATE TABLE features (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  name           text NOT NULL,
  description    text,
  lookup_key     text,
  type           text NOT NULL CHECK (type IN ('metered', 'boolean', 'static')),
  meter_id       text,
  unit_singular  text,
  unit_plural    text,
  reporting_unit jsonb,
  alert_settings jsonb,
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  version        integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text,
  CHECK ((type = 'metered') = (meter_id IS NOT NULL))
);
CREATE INDEX features_scope ON features (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX features_lookup_key ON features (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted' AND lookup_key IS NOT NULL;

CREATE TABLE plans (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  name           text NOT NULL,
  lookup_key     text,
  description    text,
  display_order  integer NOT NULL DEFAULT 0,
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  version        integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text
);
CREATE INDEX plans_scope ON plans (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX plans_lookup_key ON plans (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted' AND lookup_key IS NOT NULL;

CREATE TABLE addons (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  name           text NOT NULL,
  lookup_key     text NOT NULL,
  description    text,
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  version        integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text
);
CREATE INDEX addons_scope ON addons (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX addons_lookup_key ON addons (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted';

CREATE TABLE prices (
  id                   text PRIMARY KEY,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  entity_type          text NOT NULL CHECK (entity_type IN ('PLAN', 'ADDON')),
  entity_id            text NOT NULL,
  lookup_key           text,
  description          text,
  display_name         text,
  currency             text NOT NULL,
  amount               numeric NOT NULL,
  type                 text NOT NULL CHECK (type IN ('FIXED', 'USAGE')),
  billing_model        text NOT NULL CHECK (billing_model IN ('FLAT_FEE', 'PACKAGE', 'TIERED')),
  billing_cadence      text NOT NULL CHECK (billing_cadence IN ('RECURRING', 'ONETIME')),
  billing_period       text NOT NULL,
  billing_period_count integer NOT NULL DEFAULT 1,
  invoice_cadence      text NOT NULL CHECK (invoice_cadence IN ('ADVANCE', 'ARREAR')),
  tier_mode            text CHECK (tier_mode IN ('VOLUME', 'SLAB')),
  tiers                jsonb,
  transform_quantity   jsonb,
  trial_period_days    integer NOT NULL DEFAULT 0,
  min_quantity         numeric,
  meter_id             text,
  price_unit_type      text NOT NULL DEFAULT 'FIAT' CHECK (price_unit_type IN ('FIAT', 'CUSTOM')),
  price_unit           text,
  price_unit_amount    numeric,
  price_unit_tiers     jsonb,
  conversion_rate      numeric,
  group_id             text,
  parent_price_id      text,
  start_date           timestamptz,
  end_date             timestamptz,
  status               text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata             jsonb NOT NULL DEFAULT '{}',
  version              integer NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  created_by           text,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  updated_by           text,
  -- Usage is known only after the period: a usage price is always billed in arrear.
  CHECK (type = 'FIXED' OR invoice_cadence = 'ARREAR'),
  CHECK ((type = 'USAGE') = (meter_id IS NOT NULL))
);
CREATE INDEX prices_scope ON prices (tenant_id, environment_id, created_at);
CREATE INDEX prices_entity ON prices (tenant_id, environment_id, entity_id);
CREATE UNIQUE INDEX prices_lookup_key ON prices (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted' AND lookup_key IS NOT NULL;

CREATE TABLE entitlements (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  entity_type        text NOT NULL CHECK (entity_type IN ('PLAN', 'ADDON')),
  entity_id          text NOT NULL,
  feature_id         text NOT NULL REFERENCES features(id),
  feature_type       text NOT NULL CHECK (feature_type IN ('metered', 'boolean', 'static')),
  is_enabled         boolean NOT NULL DEFAULT true,
  -- NULL is unlimited.
  usage_limit        bigint,
  usage_reset_period text,
  is_soft_limit      boolean NOT NULL DEFAULT false,
  static_value       text,
  display_order      integer NOT NULL DEFAULT 0,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX entitlements_scope ON entitlements (tenant_id, environment_id, created_at);
CREATE INDEX entitlements_entity ON entitlements (entity_id) WHERE status = 'published';
CREATE UNIQUE INDEX entitlements_feature ON entitlements (tenant_id, environment_id, entity_type, entity_id, feature_id) WHERE status <> 'deleted';
