// The raw events table's row as read back (sql/clickhouse/0001_usage.sql): the aggregator's backfill and
// the usage domain's event reads share it.
export interface StoredEventRow {
  id: string
  external_customer_id: string
  customer_id: string
  event_name: string
  source: string
  timestamp: string
  received_at: string
  properties: string
}

export const EVENT_COLUMNS = 'id, external_customer_id, customer_id, event_name, source, timestamp, received_at, properties'
