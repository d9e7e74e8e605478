-- Credit notes on finalized invoices and their lines, each line crediting one invoice line.

CREATE TABLE credit_notes (
  id                 text PRIMARY KEY,
  tenant_id          text NOT NULL,
  environment_id     text NOT NULL,
  invoice_id         text NOT NULL REFERENCES invoices(id),
  customer_id        text NOT NULL,
  subscription_id    text,
  credit_note_number text,
  credit_note_status text NOT NULL CHECK (credit_note_status IN ('DRAFT', 'FINALIZED', 'VOIDED')),
  credit_note_type   text NOT NULL CHECK (credit_note_type IN ('ADJUSTMENT', 'REFUND')),
  reason             text NOT NULL CHECK (reason IN ('DUPLICATE', 'FRAUDULENT', 'ORDER_CHANGE', 'UNSATISFACTORY', 'SERVICE_ISSUE', 'BILLING_ERROR', 'SUBSCRIPTION_CANCELLATION')),
  refund_status      text,
  currency           text NOT NULL,
  memo               text,
  total_amount       numeric NOT NULL CHECK (total_amount > 0),
  idempotency_key    text,
  finalized_at       timestamptz,
  voided_at          timestamptz,
  status             text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata           jsonb NOT NULL DEFAULT '{}',
  version            integer NOT NULL DEFAULT 1,
  created_at         timestamptz NOT NULL DEFAULT now(),
  created_by         text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  updated_by         text
);
CREATE INDEX credit_notes_scope ON credit_notes (tenant_id, environment_id, created_at);
CREATE INDEX credit_notes_invoice ON credit_notes (invoice_id);
CREATE UNIQUE INDEX credit_notes_number ON credit_notes (tenant_id, environment_id, credit_note_number) WHERE credit_note_number IS NOT NULL;
CREATE UNIQUE INDEX credit_notes_idempotency_key ON credit_notes (tenant_id, environment_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL AND status <> 'deleted';

CREATE TABLE credit_note_line_items (
  id                   text PRIMARY KEY,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  credit_note_id       text NOT NULL REFERENCES credit_notes(id),
  invoice_line_item_id text NOT NULL REFERENCES invoice_line_items(id),
  amount               numeric NOT NULL CHECK (amount > 0),
  currency             text NOT NULL,
  display_name         text,
  status               text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata             jsonb NOT NULL DEFAULT '{}',
  version              integer NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  created_by           text,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  updated_by           text
);
CREATE INDEX credit_note_line_items_note ON credit_note_line_items (credit_note_id);
