-- Tenancy, API keys and the outbox. Every record row carries tenant_id and environment_id.

CREATE TABLE tenants (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  status      text NOT NULL DEFAULT 'published',
  metadata    jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE environments (
  id          text PRIMARY KEY,
  tenant_id   text NOT NULL REFERENCES tenants(id),
  name        text NOT NULL,
  type        text NOT NULL CHECK (type IN ('production', 'sandbox', 'development')),
  slug        text NOT NULL,
  status      text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata    jsonb NOT NULL DEFAULT '{}',
  version     integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  created_by  text,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  updated_by  text,
  UNIQUE (tenant_id, slug)
);

CREATE TABLE api_keys (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL REFERENCES tenants(id),
  environment_id text NOT NULL REFERENCES environments(id),
  name           text NOT NULL,
  -- SHA-256 of the secret: the secret carries 256 random bits, so a slow hash adds nothing.
  key_hash       bytea NOT NULL UNIQUE,
  display_id     text NOT NULL,
  roles          text[] NOT NULL,
  type           text NOT NULL DEFAULT 'private_key',
  expires_at     timestamptz,
  last_used_at   timestamptz,
  revoked_at     timestamptz,
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text
);
CREATE INDEX api_keys_scope ON api_keys (tenant_id, environment_id, created_at);

-- Outbound events, written in the same transaction as the change they announce; delivered later.
CREATE TABLE webhook_events (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  event_type      text NOT NULL,
  entity_type     text,
  entity_id       text,
  payload         jsonb NOT NULL,
  delivery_status text NOT NULL DEFAULT 'pending' CHECK (delivery_status IN ('pending', 'delivered', 'failed', 'skipped')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz
);
CREATE INDEX webhook_events_scope ON webhook_events (tenant_id, environment_id, created_at);
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE delivery_status = 'pending';
