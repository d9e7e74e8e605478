-- Cost sheets (Flexprice's costsheet): what serving usage costs you. A sheet is a named record; its unit costs
-- are prices with entity_type COSTSHEET (a USAGE price of a meter, with start_date and end_date when it is in
-- force). The newest published sheet of an environment is its active one; cost analytics prices usage with it.
CREATE TABLE costsheets (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  environment_id  text NOT NULL,
  name            text NOT NULL,
  lookup_key      text,
  description     text,
  status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata        jsonb NOT NULL DEFAULT '{}',
  version         integer NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      text
);
CREATE INDEX costsheets_scope ON costsheets (tenant_id, environment_id, created_at);
-- Flexprice refuses a second sheet of the same name in an environment; a lookup key is unique too.
CREATE UNIQUE INDEX costsheets_name ON costsheets (tenant_id, environment_id, name) WHERE status <> 'deleted';
CREATE UNIQUE INDEX costsheets_lookup_key ON costsheets (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted' AND lookup_key IS NOT NULL;

ALTER TABLE prices DROP CONSTRAINT prices_entity_type_check;
ALTER TABLE prices ADD CONSTRAINT prices_entity_type_check CHECK (entity_type IN ('PLAN', 'ADDON', 'COSTSHEET'));
