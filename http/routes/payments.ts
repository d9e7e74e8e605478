import type { Route } from '../route.ts'
import { recordRoutes } from '../record-routes.ts'
import * as service from '../../domains/invoicing/payments/service.ts'

// Payments are made by what pays an invoice (PUT /v1/invoices/{id}/payment, a wallet, a provider): read here.
export const paymentRoutes: Route[] = recordRoutes({
  path: '/v1/payments',
  tag: 'Payments',
  noun: 'payment',
  sortable: ['created_at', 'updated_at', 'amount'],
  filters: service.FILTERS,
  service: { get: service.getPayment, list: service.listPayments },
})
