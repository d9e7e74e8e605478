// Every relative link in README.md, BENCHMARKS.md and docs/*.md leads somewhere: the file exists and, when the link
// names a heading (#…) of a Markdown file, that heading does too (GitHub's anchors). A page moved or a heading renamed
// without its links fails here.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')
const pages = ['README.md', 'BENCHMARKS.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** The text outside code: fenced blocks and inline code spans hold examples, not links or headings. */
const prose = (markdown: string): string => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, (code) => code.replace(/[[\]()]/g, ''))

/** GitHub's anchors: the heading's text lower-cased, punctuation dropped, spaces as hyphens; repeats get -1, -2… */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
  for (const [, heading] of text.matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = heading.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n ? `${base}-${n}` : base)
  }
  return out
}

describe('links in the docs', () => {
  it.each(pages)('%s: every relative link resolves', (page) => {
    const source = readFileSync(join(root, page), 'utf8')
    const broken: string[] = []
    for (const [, target] of prose(source).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      const [path, anchor] = target.split('#') as [string, string | undefined]
      const file = path ? join(dirname(join(root, page)), decodeURIComponent(path)) : join(root, page)
      if (!existsSync(file)) broken.push(`${target}: no file ${relative(root, file)}`)
      else if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${target}: no heading #${anchor} in ${relative(root, file)}`)
      }
    }
    expect(broken).toEqual([])
  })
})
