// A client of an OpenAI-compatible chat-completions API (OpenAI, Azure's compatible endpoint, Ollama,
// vLLM, llama.cpp's server…): one request, a time limit, and the answer's text. Whatever it answers is
// untrusted text; callers parse and check it.
import type { AiConfig } from '../core/config.ts'

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

/** An answer larger than this is refused unread: a configuration is a few kilobytes. */
const MAX_ANSWER_BYTES = 1 << 20

export class AiError extends Error {
  override name = 'AiError'
}

/** The chat-completions address: the configured one when it names it, else `<base>/chat/completions`. */
function completionsUrl(base: string): string {
  const url = new URL(base)
  if (!url.pathname.endsWith('/chat/completions')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/chat/completions`
  return url.toString()
}

/** Sends the messages with temperature 0 and a JSON answer asked for; returns the first choice's text. */
export async function chatCompletion(ai: AiConfig, messages: ChatMessage[]): Promise<string> {
  let res: Response
  try {
    res = await fetch(completionsUrl(ai.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(ai.key && { authorization: `Bearer ${ai.key}` }) },
      body: JSON.stringify({ model: ai.model, messages, temperature: 0, response_format: { type: 'json_object' } }),
      signal: AbortSignal.timeout(ai.timeoutMs),
    })
  } catch (err) {
    const e = err as Error
    throw new AiError(e.name === 'TimeoutError' ? `no answer within ${ai.timeoutMs / 1000} s` : `unreachable: ${e.message}`)
  }
  const text = await res.text()
  if (Buffer.byteLength(text) > MAX_ANSWER_BYTES) throw new AiError(`answer larger than ${MAX_ANSWER_BYTES} bytes`)
  if (!res.ok) throw new AiError(`answered ${res.status}: ${text.slice(0, 200)}`)
  let body: { choices?: { message?: { content?: unknown } }[] }
  try {
    body = JSON.parse(text)
  } catch {
    throw new AiError('answered something that is not JSON')
  }
  const content = body.choices?.[0]?.message?.content
  if (typeof content !== 'string' || !content.trim()) throw new AiError('answered no message content')
  return content
}
