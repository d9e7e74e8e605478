// One place that binds htm to Preact: components write html`<div>${text}</div>`, and every
// interpolated value is rendered as text (Preact never parses strings as markup), which is what
// keeps a customer named "<img src=x onerror=…>" a harmless string.
import { h, render, createContext } from 'preact'
import htm from 'htm'

export const html = htm.bind(h)
export { render, createContext }
export { useState, useEffect, useMemo, useCallback, useRef, useContext } from 'preact/hooks'
