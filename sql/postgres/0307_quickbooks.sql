-- QuickBooks Online as a connection (an accounting system: it receives invoices, payments and credit
-- notes; it collects nothing), and where each record's push to it stands.

ALTER TABLE connections DROP CONSTRAINT connections_provider_type_check;
ALTER TABLE connections ADD CONSTRAINT connections_provider_type_check CHECK (provider_type IN ('stripe', 'quickbooks'));

-- One row per record and accounting connection. PENDING waits for next_attempt_at; external_id is the
-- record's id in the accounting system once it answered.
CREATE TABLE accounting_syncs (
  connection_id   text NOT NULL REFERENCES connections(id),
  entity_type     text NOT NULL CHECK (entity_type IN ('invoice', 'credit_note', 'payment')),
  entity_id       text NOT NULL,
  -- The invoice the record belongs to (itself for an invoice): what the invoice's sync view lists.
  invoice_id      text NOT NULL REFERENCES invoices(id),
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  provider_type   text NOT NULL,
  sync_status     text NOT NULL CHECK (sync_status IN ('PENDING', 'SYNCED', 'FAILED', 'SKIPPED')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_attempt_at timestamptz,
  last_error      text,
  external_id     text,
  synced_at       timestamptz,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (connection_id, entity_type, entity_id)
);
CREATE INDEX accounting_syncs_due ON accounting_syncs (next_attempt_at) WHERE sync_status = 'PENDING';
CREATE INDEX accounting_syncs_invoice ON accounting_syncs (invoice_id);
