// The usage chart: uPlot on a canvas. One series draws a line with its points; several (a group_by)
// draw stacked bars, the largest group on top. The same numbers are in a table under the chart
// (for screen readers, and for anyone who wants the exact values).
import uPlot from 'uplot'
import { html, useEffect, useRef } from '../lib/html.js'

const PALETTE = ['#2563eb', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#ec4899', '#84cc16']

const fmt = (v) => (v === null || v === undefined ? '—' : Number.isInteger(v) ? v.toLocaleString() : v.toLocaleString(undefined, { maximumFractionDigits: 6 }))

function options(width, series, stacked) {
  const base = {
    width,
    height: 300,
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [{ stroke: '#64748b', grid: { stroke: '#eef2f7' } }, { stroke: '#64748b', grid: { stroke: '#eef2f7' }, size: 60, values: (u, ticks) => ticks.map(fmt) }],
  }
  if (!stacked) {
    const color = PALETTE[0]
    return { ...base, series: [{}, { label: series[0].name, stroke: color, width: 2, fill: `${color}1f`, points: { show: true, size: 6, fill: color }, value: (u, v) => fmt(v) }] }
  }
  // Bars of cumulative sums, the tallest (every group) drawn first and each next one (one group fewer)
  // over it, so each group's slice shows; the first group, the largest, ends up on top of the stack.
  // align 1: a bar starts at its window's start, as the window does.
  const bars = uPlot.paths.bars({ size: [0.7, 64], align: 1 })
  return {
    ...base,
    series: [
      {},
      ...series.map((s, i) => ({
        label: s.name,
        stroke: PALETTE[i % PALETTE.length],
        fill: PALETTE[i % PALETTE.length],
        width: 0,
        paths: bars,
        points: { show: false },
        value: (u, v, si, di) => (di === null || di === undefined ? '—' : fmt(s.values[di])),
      })),
    ],
  }
}

/** [x, values] for one series; for several, [x, sum of groups 0…n, sum of groups 1…n, …, group n]. */
function dataOf(windows, series, stacked) {
  const xs = windows.map((ms) => ms / 1000)
  if (!stacked) return [xs, series[0].values]
  const sums = []
  let running = windows.map(() => 0)
  for (const s of [...series].reverse()) {
    running = running.map((v, k) => v + s.values[k])
    sums.unshift(running)
  }
  return [xs, ...sums]
}

export function UsageChart({ windows, series }) {
  const box = useRef(null)
  const plot = useRef(null)
  const stacked = series.length > 1
  const shape = `${stacked}|${series.map((s) => s.name).join('\u0000')}`

  useEffect(() => {
    const el = box.current
    const u = new uPlot(options(el.clientWidth || 600, series, stacked), dataOf(windows, series, stacked), el)
    plot.current = u
    const resize = new ResizeObserver(() => u.setSize({ width: el.clientWidth, height: 300 }))
    resize.observe(el)
    return () => {
      resize.disconnect()
      u.destroy()
      plot.current = null
    }
  }, [shape])

  // Same series, new numbers (the periodic refresh): update in place, without redrawing the legend.
  useEffect(() => {
    plot.current?.setData(dataOf(windows, series, stacked))
  }, [windows, series])

  const rows = windows.map((ms, k) => ({ ms, values: series.map((s) => s.values[k]) })).filter((r) => r.values.some((v) => v !== 0))
  return html`<figure class="chart" data-series=${series.length} data-points=${rows.length}>
    <div class="chart-canvas" ref=${box}></div>
    <details class="chart-data">
      <summary>Data (${rows.length} window${rows.length === 1 ? '' : 's'} with usage)</summary>
      <table>
        <thead><tr><th>window start</th>${series.map((s) => html`<th class="num">${s.name}</th>`)}</tr></thead>
        <tbody>
          ${rows.map((r) => html`<tr><td>${new Date(r.ms).toISOString()}</td>${r.values.map((v) => html`<td class="num">${v}</td>`)}</tr>`)}
        </tbody>
      </table>
    </details>
  </figure>`
}
