-- S3 connections (Flexprice's provider_type s3): the bucket credentials scheduled exports name by connection_id.
-- An environment may hold several (one per bucket account), so the one-connection-per-provider index leaves s3 out.
ALTER TABLE connections DROP CONSTRAINT connections_provider_type_check;
ALTER TABLE connections ADD CONSTRAINT connections_provider_type_check CHECK (provider_type IN ('stripe', 'quickbooks', 's3'));
DROP INDEX connections_provider;
CREATE UNIQUE INDEX connections_provider ON connections (tenant_id, environment_id, provider_type) WHERE status <> 'deleted' AND provider_type <> 's3';
CREATE INDEX scheduled_tasks_connection ON scheduled_tasks (connection_id) WHERE connection_id IS NOT NULL AND status <> 'deleted';
