-- Payment provider connections (rule 16), the push of finalized invoices to them, and the provider's
-- notifications received.

CREATE TABLE connections (
  id                    text PRIMARY KEY,
  tenant_id             text NOT NULL,
  environment_id        text NOT NULL,
  name                  text NOT NULL,
  provider_type         text NOT NULL CHECK (provider_type IN ('stripe')),
  -- AES-256-GCM of the provider's secrets (JSON); never returned by the API.
  encrypted_secret_data text NOT NULL,
  api_base_url          text,
  sync_config           jsonb NOT NULL DEFAULT '{}',
  status                text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata              jsonb NOT NULL DEFAULT '{}',
  version               integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  created_by            text,
  updated_at            timestamptz NOT NULL DEFAULT now(),
  updated_by            text
);
CREATE INDEX connections_scope ON connections (tenant_id, environment_id, created_at);
-- One live connection per provider and environment: the callback URL names the provider, not a connection.
CREATE UNIQUE INDEX connections_provider ON connections (tenant_id, environment_id, provider_type) WHERE status <> 'deleted';

-- One row per invoice and connection: where its push stands. PENDING waits for next_attempt_at.
CREATE TABLE invoice_syncs (
  invoice_id           text NOT NULL REFERENCES invoices(id),
  connection_id        text NOT NULL REFERENCES connections(id),
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  provider_type        text NOT NULL,
  sync_status          text NOT NULL CHECK (sync_status IN ('PENDING', 'SYNCED', 'FAILED', 'SKIPPED')),
  attempts             integer NOT NULL DEFAULT 0,
  next_attempt_at      timestamptz NOT NULL,
  last_attempt_at      timestamptz,
  last_error           text,
  provider_invoice_id  text,
  provider_customer_id text,
  provider_status      text,
  collection_method    text,
  checkout_url         text,
  synced_at            timestamptz,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  PRIMARY KEY (invoice_id, connection_id)
);
CREATE INDEX invoice_syncs_due ON invoice_syncs (next_attempt_at) WHERE sync_status = 'PENDING';
CREATE INDEX invoice_syncs_provider_invoice ON invoice_syncs (connection_id, provider_invoice_id) WHERE provider_invoice_id IS NOT NULL;

-- Finalized invoices still owing: what the sync job looks through for invoices not yet pushed.
CREATE INDEX invoices_owing ON invoices (tenant_id, environment_id, finalized_at) WHERE invoice_status = 'FINALIZED' AND amount_remaining > 0;

-- Each provider notification once; each provider payment recorded once, whichever notification told it.
CREATE TABLE provider_events (
  id                text PRIMARY KEY,
  tenant_id         text NOT NULL,
  environment_id    text NOT NULL,
  connection_id     text NOT NULL REFERENCES connections(id),
  provider_event_id text NOT NULL,
  event_type        text NOT NULL,
  invoice_id        text,
  payment_reference text,
  outcome           text NOT NULL,
  received_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX provider_events_event ON provider_events (connection_id, provider_event_id);
CREATE UNIQUE INDEX provider_events_payment ON provider_events (connection_id, payment_reference) WHERE payment_reference IS NOT NULL;
