// How a message leaves: composed once into its raw form (nodemailer's MailComposer), then handed to the SMTP server of
// SMTP_URL, or, with none set, written as <id>.eml under DATA_DIR/mail/ (the embedded default: what would be sent).
import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer, { type Transporter } from 'nodemailer'
import MailComposer from 'nodemailer/lib/mail-composer/index.js'
import type { Config } from '../../core/config.ts'

export interface Outgoing {
  from: { name: string; address: string }
  replyTo: string | null
  to: string
  subject: string
  text: string
  html: string
  messageId: string
  date: Date
  attachments: { filename: string; content: Buffer; contentType: string }[]
}

export async function compose(m: Outgoing): Promise<Buffer> {
  const mail = new MailComposer({
    from: m.from,
    to: m.to,
    replyTo: m.replyTo ?? undefined,
    subject: m.subject,
    text: m.text,
    html: m.html,
    messageId: m.messageId,
    date: m.date,
    attachments: m.attachments,
  })
  return mail.compile().build()
}

export interface Delivery {
  outcome: 'sent' | 'transient' | 'permanent'
  /** The SMTP reply code, when the server answered. */
  code: number | null
  response: string
  file_path?: string
}

export const transportOf = (config: Config): 'smtp' | 'file' => (config.smtpUrl ? 'smtp' : 'file')

const transporters = new Map<string, Transporter>()
function smtp(url: string): Transporter {
  let t = transporters.get(url)
  if (!t) transporters.set(url, (t = nodemailer.createTransport(url, { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 })))
  return t
}

/**
 * Sends the raw message. A 4xx reply (and a connection that never got as far as a reply) is transient: tried again
 * later; a 5xx reply is permanent.
 */
export async function deliver(config: Config, raw: Buffer, envelope: { from: string; to: string }, id: string): Promise<Delivery> {
  if (!config.smtpUrl) {
    const dir = join(config.dataDir, 'mail')
    mkdirSync(dir, { recursive: true })
    const path = join(dir, `${id}.eml`)
    // Written whole or not at all: a reader of the folder never sees half a message.
    writeFileSync(`${path}.tmp`, raw)
    renameSync(`${path}.tmp`, path)
    return { outcome: 'sent', code: null, response: `written to ${path}`, file_path: path }
  }
  try {
    const info = (await smtp(config.smtpUrl).sendMail({ envelope, raw })) as { response?: string }
    const response = info.response ?? '250'
    return { outcome: 'sent', code: Number.parseInt(response, 10) || 250, response }
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string }
    const code = typeof e.responseCode === 'number' ? e.responseCode : null
    return { outcome: code !== null && code >= 500 ? 'permanent' : 'transient', code, response: e.response ?? e.message }
  }
}
