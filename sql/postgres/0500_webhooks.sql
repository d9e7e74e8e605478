-- Outbound webhooks: endpoints per environment, one delivery per (event, endpoint), every attempt logged.

CREATE TABLE webhook_endpoints (
  id                         text PRIMARY KEY,
  tenant_id                  text NOT NULL,
  environment_id             text NOT NULL,
  url                        text NOT NULL,
  description                text,
  -- Event types the endpoint receives; empty means every type.
  filter_types               jsonb NOT NULL DEFAULT '[]',
  disabled                   boolean NOT NULL DEFAULT false,
  -- whsec_<base64>: kept as written because HMAC signing needs the key itself; never returned after
  -- create or rotate. The previous secret still signs until previous_secret_expires_at (rotation overlap).
  secret                     text NOT NULL,
  previous_secret            text,
  previous_secret_expires_at timestamptz,
  status                     text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata                   jsonb NOT NULL DEFAULT '{}',
  version                    integer NOT NULL DEFAULT 1,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  created_by                 text,
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  updated_by                 text
);
CREATE INDEX webhook_endpoints_scope ON webhook_endpoints (tenant_id, environment_id, created_at);

-- When an event was matched to the endpoints subscribed to it (NULL: not yet; the delivery job does it).
ALTER TABLE webhook_events ADD COLUMN dispatched_at timestamptz;
CREATE INDEX webhook_events_undispatched ON webhook_events (created_at, id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_deliveries (
  event_id         text NOT NULL REFERENCES webhook_events(id),
  endpoint_id      text NOT NULL REFERENCES webhook_endpoints(id),
  tenant_id        text NOT NULL,
  environment_id   text NOT NULL,
  delivery_status  text NOT NULL DEFAULT 'pending' CHECK (delivery_status IN ('pending', 'delivered', 'failed')),
  -- Attempts made since the delivery was (re)queued; max_attempts bounds the failed ones.
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  last_status_code integer,
  last_error       text,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE delivery_status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id);

CREATE TABLE webhook_attempts (
  id                   text PRIMARY KEY,
  event_id             text NOT NULL,
  endpoint_id          text NOT NULL,
  tenant_id            text NOT NULL,
  environment_id       text NOT NULL,
  url                  text NOT NULL,
  -- NULL when no HTTP answer came (refused, timed out); then error says why.
  response_status_code integer,
  response             text,
  error                text,
  duration_ms          integer NOT NULL,
  created_at           timestamptz NOT NULL,
  FOREIGN KEY (event_id, endpoint_id) REFERENCES webhook_deliveries (event_id, endpoint_id)
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, created_at);
