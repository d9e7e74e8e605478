// A hold as the API and its webhooks show it: an active hold past its expiry shows as expired (it stopped
// counting at that instant, whether or not the expiry job has marked it yet).
import type { OutboundEvent } from '../../../infra/outbox.ts'
import { toWire } from '../../records/wire.ts'
import type { HoldRow, HoldStatus } from './holds-store.ts'

export interface HoldView extends Omit<HoldRow, 'status' | 'hold_status'> {
  status: HoldStatus
}

export function holdView(row: HoldRow, at: Date): HoldView {
  const { status: _record, hold_status, ...rest } = row
  return { ...rest, status: hold_status === 'active' && row.expires_at <= at ? 'expired' : hold_status }
}

/** `wallet.hold.<event>` with the hold as it now is. */
export const holdEvent = (event: 'created' | 'settled' | 'released' | 'expired', row: HoldRow, at: Date): OutboundEvent => ({
  eventType: `wallet.hold.${event}`,
  entityType: 'wallet_hold',
  entityId: row.id,
  payload: { wallet_hold: toWire(holdView(row, at)) },
})
