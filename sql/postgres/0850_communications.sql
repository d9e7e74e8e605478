-- Customer email (domains/communications): each environment's sender and template overrides, one record per message
-- (what, to whom, its delivery state and claim), and every delivery attempt.

CREATE TABLE communication_settings (
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  from_email     text NOT NULL,
  from_name      text,
  reply_to       text,
  -- Kinds sent automatically when their record appears (finalized invoice, credit note, succeeded payment): { kind: boolean }.
  auto_send      jsonb NOT NULL DEFAULT '{}',
  -- Overrides of the built-in templates: { kind: { subject, text, html } }, each part optional.
  templates      jsonb NOT NULL DEFAULT '{}',
  updated_at     timestamptz NOT NULL,
  updated_by     text,
  PRIMARY KEY (tenant_id, environment_id)
);

CREATE TABLE communications (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('invoice', 'credit_note', 'payment_receipt', 'dunning_reminder')),
  -- What the message is for, once: invoice:<id>, credit_note:<id>, payment:<id>, dunning:<invoice>:<step>, or a manual
  -- send's own key. The unique index makes two workers queueing the same record one message.
  source_key      text NOT NULL,
  customer_id     text NOT NULL,
  invoice_id      text,
  credit_note_id  text,
  payment_id      text,
  to_email        text,
  from_email      text NOT NULL,
  subject         text NOT NULL,
  -- <record id@sender domain>: the same on every attempt, so a receiver can tell a resend.
  message_id      text NOT NULL,
  -- pending → sending (claimed) → sent | retrying → … | failed; skipped: nothing to send to; unknown: the sender
  -- stopped between its claim and recording the outcome over SMTP (it may have been delivered; never resent).
  delivery_status text NOT NULL CHECK (delivery_status IN ('pending', 'sending', 'sent', 'retrying', 'failed', 'skipped', 'unknown')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  -- The claim: who sends it and until when; a claim past lease_until belongs to a process that stopped.
  claimed_by      text,
  lease_until     timestamptz,
  transport       text,
  -- The .eml written (embedded default, DATA_DIR/mail/).
  file_path       text,
  last_error      text,
  sent_at         timestamptz,
  variables       jsonb NOT NULL DEFAULT '{}',
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL,
  created_by      text,
  updated_at      timestamptz NOT NULL,
  updated_by      text
);
CREATE UNIQUE INDEX communications_source ON communications (tenant_id, environment_id, source_key);
CREATE INDEX communications_scope ON communications (tenant_id, environment_id, created_at);
CREATE INDEX communications_due ON communications (next_attempt_at) WHERE delivery_status IN ('pending', 'retrying');
CREATE INDEX communications_claimed ON communications (lease_until) WHERE delivery_status = 'sending';

CREATE TABLE communication_attempts (
  id               text PRIMARY KEY,
  communication_id text NOT NULL REFERENCES communications(id),
  tenant_id        text NOT NULL,
  environment_id   text NOT NULL,
  attempted_at     timestamptz NOT NULL,
  transport        text NOT NULL,
  outcome          text NOT NULL CHECK (outcome IN ('sent', 'transient', 'permanent', 'unknown')),
  -- The SMTP reply code, when the server answered.
  response_code    integer,
  response         text
);
CREATE INDEX communication_attempts_message ON communication_attempts (communication_id, attempted_at);
