// A real SMTP server for the email tests (the smtp-server package): keeps every message it accepts, raw, and can
// answer the next messages with a temporary failure (4xx) or call a hook once a message's data has arrived.
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'

export interface SmtpSink {
  url: string
  messages: { from: string; to: string[]; raw: string }[]
  /** The next this-many messages are refused after their data with 451. */
  failNext: number
  /** Called once a message's data has arrived and before it is accepted. */
  onReceived?: (raw: string) => void
  stop(): Promise<void>
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const sink: Omit<SmtpSink, 'url' | 'stop'> = { messages: [], failNext: 0 }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        if (sink.failNext > 0) {
          sink.failNext -= 1
          return callback(Object.assign(new Error('mailbox busy, try again later'), { responseCode: 451 }))
        }
        sink.onReceived?.(raw)
        sink.messages.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  return Object.assign(sink, { url: `smtp://127.0.0.1:${port}`, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) })
}

/** A header of a raw message (its first occurrence, unfolded). */
export function header(raw: string, name: string): string | undefined {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ')
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]
}

/** The attachments of a raw message: filename, content type and decoded bytes (base64 parts). */
export function attachments(raw: string): { filename: string; contentType: string; content: Buffer }[] {
  const out = []
  for (const part of raw.split(/\r\n--/)) {
    const disposition = /Content-Disposition: attachment;\s*filename=(?:"([^"]+)"|(\S+))/i.exec(part.replace(/\r\n[ \t]+/g, ' '))
    if (!disposition) continue
    const type = /Content-Type: ([^;\r\n]+)/i.exec(part)?.[1] ?? ''
    const body = part.slice(part.indexOf('\r\n\r\n') + 4).replace(/\s+/g, '')
    out.push({ filename: disposition[1] ?? disposition[2], contentType: type, content: Buffer.from(body, 'base64') })
  }
  return out
}

/** The decoded text/plain part (quoted-printable or 7bit). */
export function plainText(raw: string): string {
  const part = raw.split(/\r\n--/).find((p) => /Content-Type: text\/plain/i.test(p)) ?? ''
  const body = part.slice(part.indexOf('\r\n\r\n') + 4)
  return /quoted-printable/i.test(part) ? body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))) : body
}
