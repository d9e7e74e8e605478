-- Subscriptions tie a customer to a plan over time. Line items are snapshots of the plan's prices at
-- creation, so later catalog edits never change what an existing subscription bills.

CREATE TABLE subscriptions (
  id                        text PRIMARY KEY,
  tenant_id                 text NOT NULL,
  environment_id            text NOT NULL,
  customer_id               text NOT NULL REFERENCES customers(id),
  invoicing_customer_id     text REFERENCES customers(id),
  parent_subscription_id    text REFERENCES subscriptions(id),
  plan_id                   text NOT NULL REFERENCES plans(id),
  lookup_key                text,
  currency                  text NOT NULL,
  subscription_status       text NOT NULL CHECK (subscription_status IN ('not_started', 'trialing', 'active', 'incomplete', 'cancelled')),
  subscription_type         text NOT NULL CHECK (subscription_type IN ('standalone', 'parent', 'inherited', 'delegated_invoicing', 'grouped_invoicing')),
  billing_cadence           text NOT NULL DEFAULT 'RECURRING',
  billing_cycle             text NOT NULL CHECK (billing_cycle IN ('anniversary', 'calendar')),
  billing_period            text NOT NULL,
  billing_period_count      integer NOT NULL DEFAULT 1,
  billing_anchor            timestamptz NOT NULL,
  start_date                timestamptz NOT NULL,
  end_date                  timestamptz,
  current_period_start      timestamptz NOT NULL,
  current_period_end        timestamptz NOT NULL,
  trial_start               timestamptz,
  trial_end                 timestamptz,
  cancel_at                 timestamptz,
  cancel_at_period_end      boolean NOT NULL DEFAULT false,
  cancelled_at              timestamptz,
  collection_method         text NOT NULL,
  payment_behavior          text NOT NULL,
  payment_terms             text,
  proration_behavior        text NOT NULL,
  customer_timezone         text NOT NULL DEFAULT 'UTC',
  gateway_payment_method_id text,
  commitment_amount         numeric,
  commitment_duration       text,
  overage_factor            numeric,
  enable_true_up            boolean NOT NULL DEFAULT false,
  auto_invoice_threshold    numeric,
  coupons                   jsonb NOT NULL DEFAULT '[]',
  tax_rate_overrides        jsonb NOT NULL DEFAULT '[]',
  status                    text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                  jsonb NOT NULL DEFAULT '{}',
  version                   integer NOT NULL DEFAULT 1,
  created_at                timestamptz NOT NULL DEFAULT now(),
  created_by                text,
  updated_at                timestamptz NOT NULL DEFAULT now(),
  updated_by                text
);
CREATE INDEX subscriptions_scope ON subscriptions (tenant_id, environment_id, created_at);
-- The entitlement lookup starts here: a customer's subscriptions.
CREATE INDEX subscriptions_customer ON subscriptions (tenant_id, environment_id, customer_id);
CREATE INDEX subscriptions_parent ON subscriptions (parent_subscription_id) WHERE parent_subscription_id IS NOT NULL;
-- The lifecycle job looks for subscriptions with a transition due.
CREATE INDEX subscriptions_due ON subscriptions (subscription_status, current_period_end) WHERE subscription_status <> 'cancelled';

CREATE TABLE subscription_phases (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  subscription_id text NOT NULL REFERENCES subscriptions(id),
  start_date      timestamptz NOT NULL,
  end_date        timestamptz,
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX subscription_phases_subscription ON subscription_phases (subscription_id, start_date);

CREATE TABLE subscription_addons (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  subscription_id text NOT NULL REFERENCES subscriptions(id),
  addon_id        text NOT NULL REFERENCES addons(id),
  quantity        integer NOT NULL DEFAULT 1 CHECK (quantity >= 1),
  start_date      timestamptz NOT NULL,
  end_date        timestamptz,
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX subscription_addons_subscription ON subscription_addons (subscription_id);

CREATE TABLE subscription_line_items (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  subscription_id       text NOT NULL REFERENCES subscriptions(id),
  subscription_phase_id text REFERENCES subscription_phases(id),
  addon_association_id  text REFERENCES subscription_addons(id),
  customer_id           text NOT NULL,
  entity_type           text NOT NULL CHECK (entity_type IN ('plan', 'addon')),
  entity_id             text NOT NULL,
  plan_display_name     text,
  display_name          text,
  price_id              text NOT NULL REFERENCES prices(id),
  -- The price's billing terms when the line was made (amount, model, tiers, ...).
  price                 jsonb NOT NULL,
  price_type            text NOT NULL,
  meter_id              text,
  currency              text NOT NULL,
  quantity              numeric NOT NULL,
  billing_period        text NOT NULL,
  billing_period_count  integer NOT NULL,
  invoice_cadence       text NOT NULL,
  trial_period_days     integer NOT NULL DEFAULT 0,
  start_date            timestamptz NOT NULL,
  end_date              timestamptz,
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text
);
CREATE INDEX subscription_line_items_subscription ON subscription_line_items (subscription_id, start_date);
CREATE INDEX subscription_line_items_scope ON subscription_line_items (tenant_id, environment_id, created_at);
