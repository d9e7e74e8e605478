-- Spend control: credit holds on wallets, reservations made by the entitlement check, and a spending
-- limit per subscription. A hold or reservation counts while active and unexpired; its expiry is a time,
-- so it stops counting at that instant whether or not the expiry job has marked it yet.

CREATE TABLE wallet_holds (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL,
  environment_id      text NOT NULL,
  wallet_id           text NOT NULL REFERENCES wallets(id),
  customer_id         text NOT NULL,
  hold_status         text NOT NULL DEFAULT 'active' CHECK (hold_status IN ('active', 'settled', 'released', 'expired')),
  -- In credits, as credit_balance is.
  amount              numeric NOT NULL CHECK (amount > 0),
  settled_amount      numeric CHECK (settled_amount >= 0),
  feature_id          text,
  quantity            numeric,
  expires_at          timestamptz NOT NULL,
  -- The debit a settlement posted (none for a settlement of 0).
  transaction_id      text REFERENCES wallet_transactions(id),
  closed_at           timestamptz,
  idempotency_key     text,
  status              text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata            jsonb NOT NULL DEFAULT '{}',
  version             integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT now(),
  created_by          text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text
);
CREATE INDEX wallet_holds_active ON wallet_holds (wallet_id, expires_at) WHERE hold_status = 'active';
CREATE INDEX wallet_holds_wallet ON wallet_holds (wallet_id, created_at);
CREATE INDEX wallet_holds_expiring ON wallet_holds (expires_at) WHERE hold_status = 'active';
CREATE UNIQUE INDEX wallet_holds_idempotency ON wallet_holds (wallet_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE entitlement_reservations (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL,
  environment_id      text NOT NULL,
  customer_id         text NOT NULL,
  feature_id          text NOT NULL,
  quantity            numeric NOT NULL CHECK (quantity > 0),
  reservation_status  text NOT NULL DEFAULT 'active' CHECK (reservation_status IN ('active', 'released')),
  expires_at          timestamptz NOT NULL,
  status              text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata            jsonb NOT NULL DEFAULT '{}',
  version             integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT now(),
  created_by          text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text
);
CREATE INDEX entitlement_reservations_active ON entitlement_reservations (tenant_id, environment_id, customer_id, feature_id, expires_at)
  WHERE reservation_status = 'active';

-- One row per subscription with a limit; reached_period_start makes subscription.spending_limit.reached
-- fire once per period, whichever process sees it first.
CREATE TABLE subscription_spending_limits (
  subscription_id       text PRIMARY KEY REFERENCES subscriptions(id),
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  spending_limit        numeric NOT NULL CHECK (spending_limit >= 0),
  currency              text NOT NULL,
  reached_period_start  timestamptz,
  updated_at            timestamptz NOT NULL DEFAULT now()
);
