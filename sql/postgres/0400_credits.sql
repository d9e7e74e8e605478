-- Prepaid credit: credit grants and their applications, wallets and their ledger. Money and credits are
-- numeric (exact); the stores turn them into Decimal. Balances are never stored: they are the sum of
-- credits_available over a wallet's open credits, which the ledger keeps.

CREATE TABLE credit_grants (
  id                       text PRIMARY KEY,
  tenant_id                text NOT NULL,
  environment_id           text NOT NULL,
  name                     text NOT NULL,
  scope                    text NOT NULL CHECK (scope IN ('PLAN', 'SUBSCRIPTION')),
  plan_id                  text REFERENCES plans(id),
  subscription_id          text REFERENCES subscriptions(id),
  cadence                  text NOT NULL CHECK (cadence IN ('ONETIME', 'RECURRING')),
  credits                  numeric NOT NULL CHECK (credits > 0),
  conversion_rate          numeric CHECK (conversion_rate > 0),
  topup_conversion_rate    numeric CHECK (topup_conversion_rate > 0),
  period                   text,
  period_count             integer CHECK (period_count >= 1),
  credit_grant_anchor      timestamptz,
  start_date               timestamptz,
  end_date                 timestamptz,
  expiration_type          text NOT NULL CHECK (expiration_type IN ('NEVER', 'DURATION', 'BILLING_CYCLE')),
  expiration_duration      integer CHECK (expiration_duration >= 1),
  expiration_duration_unit text CHECK (expiration_duration_unit IN ('DAY', 'WEEK', 'MONTH', 'YEAR')),
  priority                 integer,
  status                   text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                 jsonb NOT NULL DEFAULT '{}',
  version                  integer NOT NULL DEFAULT 1,
  created_at               timestamptz NOT NULL DEFAULT now(),
  created_by               text,
  updated_at               timestamptz NOT NULL DEFAULT now(),
  updated_by               text,
  CHECK (scope <> 'PLAN' OR (plan_id IS NOT NULL AND subscription_id IS NULL)),
  CHECK (scope <> 'SUBSCRIPTION' OR subscription_id IS NOT NULL),
  CHECK ((cadence = 'RECURRING') = (period IS NOT NULL))
);
CREATE INDEX credit_grants_scope ON credit_grants (tenant_id, environment_id, created_at);
CREATE INDEX credit_grants_plan ON credit_grants (plan_id) WHERE status = 'published';
CREATE INDEX credit_grants_subscription ON credit_grants (subscription_id) WHERE status = 'published';

-- One application per grant, subscription and period: the unique key is what makes the scheduled job
-- exactly-once, whatever reruns, races or crashes.
CREATE TABLE credit_grant_applications (
  id                                 text PRIMARY KEY,
  tenant_id                          text NOT NULL,
  environment_id                     text NOT NULL,
  credit_grant_id                    text NOT NULL REFERENCES credit_grants(id),
  subscription_id                    text NOT NULL REFERENCES subscriptions(id),
  credits                            numeric NOT NULL CHECK (credits > 0),
  application_reason                 text NOT NULL,
  application_status                 text NOT NULL CHECK (application_status IN ('pending', 'applied', 'failed', 'skipped', 'cancelled')),
  scheduled_for                      timestamptz NOT NULL,
  applied_at                         timestamptz,
  period_start                       timestamptz NOT NULL,
  period_end                         timestamptz,
  expiry_date                        timestamptz,
  priority                           integer,
  failure_reason                     text,
  retry_count                        integer NOT NULL DEFAULT 0,
  idempotency_key                    text NOT NULL,
  subscription_status_at_application text,
  wallet_transaction_id              text,
  status                             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                           jsonb NOT NULL DEFAULT '{}',
  version                            integer NOT NULL DEFAULT 1,
  created_at                         timestamptz NOT NULL DEFAULT now(),
  created_by                         text,
  updated_at                         timestamptz NOT NULL DEFAULT now(),
  updated_by                         text,
  UNIQUE (credit_grant_id, subscription_id, period_start)
);
CREATE INDEX credit_grant_applications_subscription ON credit_grant_applications (subscription_id, scheduled_for);
-- The job's work list: what is due and not yet applied.
CREATE INDEX credit_grant_applications_due ON credit_grant_applications (scheduled_for) WHERE application_status IN ('pending', 'failed');

CREATE TABLE wallets (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  customer_id           text NOT NULL REFERENCES customers(id),
  name                  text NOT NULL,
  description           text,
  currency              text NOT NULL,
  wallet_status         text NOT NULL DEFAULT 'active' CHECK (wallet_status IN ('active', 'closed')),
  wallet_type           text NOT NULL DEFAULT 'PRE_PAID' CHECK (wallet_type IN ('PRE_PAID', 'POST_PAID')),
  conversion_rate       numeric NOT NULL CHECK (conversion_rate > 0),
  topup_conversion_rate numeric NOT NULL CHECK (topup_conversion_rate > 0),
  config                jsonb NOT NULL DEFAULT '{"allowed_price_types": ["ALL"]}',
  auto_topup            jsonb,
  alert_settings        jsonb,
  -- Credit balance alerts and ongoing balance alerts move separately; each crossing is one event.
  alert_state           text NOT NULL DEFAULT 'ok' CHECK (alert_state IN ('ok', 'info', 'warning', 'in_alarm')),
  ongoing_alert_state   text NOT NULL DEFAULT 'ok' CHECK (ongoing_alert_state IN ('ok', 'info', 'warning', 'in_alarm')),
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text
);
CREATE INDEX wallets_scope ON wallets (tenant_id, environment_id, created_at);
CREATE INDEX wallets_customer ON wallets (tenant_id, environment_id, customer_id);
-- A customer has at most one active wallet per currency.
CREATE UNIQUE INDEX wallets_active_currency ON wallets (tenant_id, environment_id, customer_id, currency)
  WHERE wallet_status = 'active' AND status <> 'deleted';

-- The ledger. Rows are never deleted and their amounts never change: credits_available on a credit is the
-- one running figure, only ever lowered by a guarded UPDATE (credits_available >= taken), and
-- transaction_status moves pending → completed | failed once, for purchases paid by invoice.
CREATE TABLE wallet_transactions (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  wallet_id             text NOT NULL REFERENCES wallets(id),
  customer_id           text NOT NULL,
  type                  text NOT NULL CHECK (type IN ('credit', 'debit')),
  transaction_reason    text NOT NULL,
  transaction_status    text NOT NULL DEFAULT 'completed' CHECK (transaction_status IN ('pending', 'completed', 'failed')),
  credit_amount         numeric NOT NULL CHECK (credit_amount > 0),
  amount                numeric NOT NULL,
  currency              text NOT NULL,
  credits_available     numeric NOT NULL DEFAULT 0 CHECK (credits_available >= 0 AND credits_available <= credit_amount),
  expiry_date           timestamptz,
  priority              integer,
  conversion_rate       numeric NOT NULL,
  topup_conversion_rate numeric,
  -- Made by the wallet's auto top-up (rule 10 looks for an unpaid one).
  auto_topup            boolean NOT NULL DEFAULT false,
  -- INVOICE (paid by or buying with it), CREDIT_GRANT_APPLICATION, WALLET_TRANSACTION (an expired credit).
  reference_type        text,
  reference_id          text,
  -- A credit restored from another (credits returned by a voided invoice) names the credit it restores.
  parent_transaction_id text REFERENCES wallet_transactions(id),
  -- Debits: the credits taken from each credit transaction, in consumption order.
  consumption_breakdown jsonb,
  idempotency_key       text,
  description           text,
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text,
  CHECK (type = 'credit' OR credits_available = 0)
);
CREATE INDEX wallet_transactions_wallet ON wallet_transactions (wallet_id, created_at);
-- Balances read only the credits with something left: a short list however long the ledger grows.
CREATE INDEX wallet_transactions_open ON wallet_transactions (wallet_id) WHERE type = 'credit' AND credits_available > 0;
CREATE INDEX wallet_transactions_expiring ON wallet_transactions (expiry_date)
  WHERE type = 'credit' AND credits_available > 0 AND transaction_status = 'completed' AND expiry_date IS NOT NULL;
CREATE INDEX wallet_transactions_reference ON wallet_transactions (reference_type, reference_id);
CREATE UNIQUE INDEX wallet_transactions_idempotency ON wallet_transactions (wallet_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- feature.wallet_balance.alert: each feature's alert state per wallet it watches.
CREATE TABLE feature_wallet_alerts (
  feature_id  text NOT NULL REFERENCES features(id),
  wallet_id   text NOT NULL REFERENCES wallets(id),
  alert_state text NOT NULL CHECK (alert_state IN ('ok', 'info', 'warning', 'in_alarm')),
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (feature_id, wallet_id)
);
