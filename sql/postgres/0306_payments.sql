-- Payments as records of their own: each payment of an invoice (recorded by hand, from a wallet, reported
-- by a payment provider or tried by its charge), with its method, provider reference, status and failure.

CREATE TABLE payments (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL,
  environment_id      text NOT NULL,
  destination_type    text NOT NULL CHECK (destination_type IN ('INVOICE')),
  destination_id      text NOT NULL REFERENCES invoices(id),
  customer_id         text NOT NULL,
  idempotency_key     text,
  payment_method_type text NOT NULL CHECK (payment_method_type IN ('CARD', 'ACH', 'OFFLINE', 'CREDITS', 'PAYMENT_LINK')),
  payment_method_id   text,
  payment_gateway     text,
  gateway_payment_id  text,
  amount              numeric NOT NULL CHECK (amount >= 0),
  currency            text NOT NULL,
  payment_status      text NOT NULL CHECK (payment_status IN ('INITIATED', 'PENDING', 'PROCESSING', 'SUCCEEDED', 'FAILED')),
  error_message       text,
  succeeded_at        timestamptz,
  failed_at           timestamptz,
  status              text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata            jsonb NOT NULL DEFAULT '{}',
  version             integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT now(),
  created_by          text,
  updated_at          timestamptz NOT NULL DEFAULT now(),
  updated_by          text
);
CREATE INDEX payments_scope ON payments (tenant_id, environment_id, created_at);
CREATE INDEX payments_destination ON payments (destination_id, created_at);
CREATE INDEX payments_customer ON payments (tenant_id, environment_id, customer_id, created_at);
