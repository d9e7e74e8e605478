import { describe, expect, it } from 'vitest'
import { checkTemplate, renderTemplate } from './mail-template.ts'

describe('email templates', () => {
  const vars = { customer_name: 'Ada <script>alert("x")</script> & Co', amount_due: '12.50' }

  it('fills placeholders as written in the plain part and escaped in the HTML part', () => {
    expect(renderTemplate('Dear {{customer_name}}, {{ amount_due }} due.', vars, false)).toBe('Dear Ada <script>alert("x")</script> & Co, 12.50 due.')
    expect(renderTemplate('<p>Dear {{customer_name}}</p>', vars, true)).toBe('<p>Dear Ada &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co</p>')
    expect(renderTemplate('{{invoice_number}}!', vars, true)).toBe('!')
  })

  it('refuses a placeholder the message does not offer, and stray braces', () => {
    expect(() => checkTemplate('templates.invoice.subject', 'Hi {{customer_name}}', ['customer_name'])).not.toThrow()
    expect(() => checkTemplate('templates.invoice.subject', 'Hi {{password}}', ['customer_name'])).toThrow(/password/)
    expect(() => checkTemplate('templates.invoice.subject', 'Hi {{customer_name}', ['customer_name'])).toThrow(/not a placeholder/)
  })
})
