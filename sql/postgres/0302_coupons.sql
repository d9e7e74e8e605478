-- Coupons, their associations to subscriptions (or one subscription line item) and the discounts
-- they gave on invoices.

CREATE TABLE coupons (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL,
  environment_id      text NOT NULL,
  name                text NOT NULL,
  type                text NOT NULL CHECK (type IN ('fixed', 'percentage')),
  cadence             text NOT NULL CHECK (cadence IN ('once', 'repeated', 'forever')),
  amount_off          numeric,
  percentage_off      numeric,
  currency            text,
  duration_in_periods integer,
  max_redemptions     integer,
  total_redemptions   integer NOT NULL DEFAULT 0,
  redeem_after        timestamptz,
  redeem_before       timestamptz,
  rules               jsonb NOT NULL DEFAULT '{}',
  status              text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata            jsonb NOT NULL DEFAULT '{}',
  version             integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT now(),
  created_by          text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text,
  CHECK ((type = 'fixed') = (amount_off IS NOT NULL AND currency IS NOT NULL)),
  CHECK ((type = 'percentage') = (percentage_off IS NOT NULL))
);
CREATE INDEX coupons_scope ON coupons (tenant_id, environment_id, created_at);

CREATE TABLE coupon_associations (
  id                        text PRIMARY KEY,
  tenant_id                 text NOT NULL,
  environment_id            text NOT NULL,
  coupon_id                 text NOT NULL REFERENCES coupons(id),
  subscription_id           text NOT NULL,
  subscription_line_item_id text,
  subscription_phase_id     text,
  start_date                timestamptz NOT NULL,
  end_date                  timestamptz,
  status                    text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                  jsonb NOT NULL DEFAULT '{}',
  version                   integer NOT NULL DEFAULT 1,
  created_at                timestamptz NOT NULL DEFAULT now(),
  created_by                text,
  updated_at                timestamptz NOT NULL DEFAULT now(),
  updated_by                text
);
CREATE INDEX coupon_associations_subscription ON coupon_associations (subscription_id);
CREATE INDEX coupon_associations_coupon ON coupon_associations (coupon_id);
-- A subscription's coupon (on the whole or on one line) is redeemed once.
CREATE UNIQUE INDEX coupon_associations_once ON coupon_associations (subscription_id, coupon_id, coalesce(subscription_line_item_id, ''))
  WHERE status <> 'deleted';

CREATE TABLE coupon_applications (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  coupon_id             text NOT NULL,
  coupon_association_id text,
  coupon_snapshot       jsonb NOT NULL,
  invoice_id            text NOT NULL REFERENCES invoices(id),
  invoice_line_item_id  text,
  subscription_id       text,
  applied_at            timestamptz NOT NULL,
  currency              text NOT NULL,
  discount_type         text NOT NULL,
  discount_percentage   numeric,
  discounted_amount     numeric NOT NULL,
  original_price        numeric NOT NULL,
  final_price           numeric NOT NULL,
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text
);
CREATE INDEX coupon_applications_invoice ON coupon_applications (invoice_id);
CREATE INDEX coupon_applications_association ON coupon_applications (coupon_association_id) WHERE coupon_association_id IS NOT NULL;
