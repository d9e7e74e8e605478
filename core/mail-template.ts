// Email templates, pure: {{name}} placeholders filled from a message's variables, HTML-escaped in the HTML part so a
// customer's name or a memo cannot inject markup. A placeholder the kind does not offer is refused when the template
// is saved, not discovered when a message goes out.
import { validationError } from './errors.ts'

const PLACEHOLDER = /\{\{\s*([a-z_]+)\s*\}\}/g

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c])

/** The template with each placeholder replaced by its variable (escaped for HTML when `html`); an absent one is empty. */
export function renderTemplate(template: string, variables: Record<string, string>, html: boolean): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = variables[name] ?? ''
    return html ? escapeHtml(value) : value
  })
}

/** Refuses a template naming a placeholder outside `allowed`, or one with unbalanced braces. */
export function checkTemplate(field: string, template: string, allowed: readonly string[]): void {
  for (const [, name] of template.matchAll(PLACEHOLDER)) {
    if (!allowed.includes(name)) throw validationError(field, `{{${name}}} is not a placeholder of this message (${allowed.join(', ')})`)
  }
  if (/\{\{|\}\}/.test(template.replace(PLACEHOLDER, ''))) throw validationError(field, 'has a {{ or }} that is not a placeholder {{name}}')
}
