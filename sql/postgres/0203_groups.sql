-- Groups of prices or of features (e.g. "Compute", "Storage"), for presenting a catalog. Membership is
-- the member's group_id: one place to change, so a group and its members cannot disagree.
CREATE TABLE groups (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  name           text NOT NULL,
  lookup_key     text,
  entity_type    text NOT NULL CHECK (entity_type IN ('price', 'feature')),
  status         text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'deleted', 'archived')),
  metadata       jsonb NOT NULL DEFAULT '{}',
  version        integer NOT NULL DEFAULT 1,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  updated_by     text
);
CREATE INDEX groups_scope ON groups (tenant_id, environment_id, created_at);
CREATE UNIQUE INDEX groups_lookup_key ON groups (tenant_id, environment_id, lookup_key) WHERE status <> 'deleted' AND lookup_key IS NOT NULL;

ALTER TABLE features ADD COLUMN group_id text;
CREATE INDEX prices_group ON prices (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX features_group ON features (group_id) WHERE group_id IS NOT NULL;
