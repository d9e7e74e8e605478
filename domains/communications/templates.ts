// The built-in email of each kind (subject, plain text, HTML) and the placeholders each offers; an environment
// overrides any part in its settings (core/mail-template.ts fills and escapes them).
import type { Kind, Template } from './store.ts'

const COMMON = ['customer_name', 'customer_email', 'sender_name', 'invoice_number', 'invoice_id', 'currency', 'total', 'amount_due', 'amount_remaining', 'due_date', 'pay_url'] as const

export const PLACEHOLDERS: Record<Kind, readonly string[]> = {
  invoice: [...COMMON, 'period_start', 'period_end'],
  credit_note: [...COMMON, 'credit_note_number', 'credit_amount', 'reason'],
  payment_receipt: [...COMMON, 'payment_amount', 'payment_date', 'payment_method'],
  dunning_reminder: [...COMMON, 'days_overdue', 'step'],
}

const html = (body: string) => `<!doctype html><html><body style="font-family:sans-serif;color:#222">${body}<p style="color:#666">{{sender_name}}</p></body></html>`

export const DEFAULT_TEMPLATES: Record<Kind, Required<Template>> = {
  invoice: {
    subject: 'Invoice {{invoice_number}} from {{sender_name}}',
    text: 'Dear {{customer_name}},\n\nYour invoice {{invoice_number}} for {{total}} {{currency}} is attached. {{amount_due}} {{currency}} is due by {{due_date}}.\n{{pay_url}}\n\n{{sender_name}}\n',
    html: html('<p>Dear {{customer_name}},</p><p>Your invoice <b>{{invoice_number}}</b> for {{total}} {{currency}} is attached. {{amount_due}} {{currency}} is due by {{due_date}}.</p><p>{{pay_url}}</p>'),
  },
  credit_note: {
    subject: 'Credit note {{credit_note_number}} for invoice {{invoice_number}}',
    text: 'Dear {{customer_name}},\n\nWe issued credit note {{credit_note_number}} of {{credit_amount}} {{currency}} on invoice {{invoice_number}} ({{reason}}).\n\n{{sender_name}}\n',
    html: html('<p>Dear {{customer_name}},</p><p>We issued credit note <b>{{credit_note_number}}</b> of {{credit_amount}} {{currency}} on invoice {{invoice_number}} ({{reason}}).</p>'),
  },
  payment_receipt: {
    subject: 'Payment received for invoice {{invoice_number}}',
    text: 'Dear {{customer_name}},\n\nWe received {{payment_amount}} {{currency}} on {{payment_date}} for invoice {{invoice_number}}. Still due: {{amount_remaining}} {{currency}}.\n\nThank you,\n{{sender_name}}\n',
    html: html('<p>Dear {{customer_name}},</p><p>We received {{payment_amount}} {{currency}} on {{payment_date}} for invoice <b>{{invoice_number}}</b>. Still due: {{amount_remaining}} {{currency}}.</p><p>Thank you.</p>'),
  },
  dunning_reminder: {
    subject: 'Reminder: invoice {{invoice_number}} is {{days_overdue}} days overdue',
    text: 'Dear {{customer_name}},\n\nInvoice {{invoice_number}} was due on {{due_date}}; {{amount_remaining}} {{currency}} is still open. Please pay it at your earliest convenience.\n{{pay_url}}\n\n{{sender_name}}\n',
    html: html('<p>Dear {{customer_name}},</p><p>Invoice <b>{{invoice_number}}</b> was due on {{due_date}}; {{amount_remaining}} {{currency}} is still open. Please pay it at your earliest convenience.</p><p>{{pay_url}}</p>'),
  },
}
