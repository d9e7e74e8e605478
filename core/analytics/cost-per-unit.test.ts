import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { costPerUnit, type FeatureFigures } from './cost-per-unit.ts'

const item = (over: Partial<FeatureFigures>): FeatureFigures => ({ featureId: 'feat_1', featureName: 'API calls', unitSingular: 'call', reportingUnit: null, usage: '0', cost: new D(0), ...over })

describe('costPerUnit', () => {
  it("adds a feature's items up and divides its cost by its usage", () => {
    // Two sources of one feature: 300 + 100 calls for 1.20 + 0.40 = 1.60; 1.60 ÷ 400 = 0.004 a call.
    const figures = costPerUnit([item({ usage: '300', cost: new D('1.20') }), item({ usage: '100', cost: new D('0.40') })])
    expect(figures.map((f) => ({ ...f, value: f.value.toFixed() }))).toEqual([{ id: 'cost-per-unit', name: 'Cost per call', feature_name: 'API calls', type: 'feature', value: '0.004' }])
  })

  it("uses the feature's reporting unit and keeps 10 places, half up", () => {
    // 2,500,000 tokens for 7.00: in M tokens 2.5, so 2.80 per M token.
    const tokens = item({ featureId: 'feat_2', featureName: 'Tokens', unitSingular: 'token', reportingUnit: { unit_singular: 'M token', conversion_rate: 1_000_000 }, usage: '2500000', cost: new D('7') })
    // 3 calls for 0.01: 0.003333333333… → 0.0033333333.
    const calls = item({ usage: '3', cost: new D('0.01') })
    expect(costPerUnit([tokens, calls]).map((f) => [f.name, f.value.toFixed()])).toEqual([
      ['Cost per M token', '2.8'],
      ['Cost per call', '0.0033333333'],
    ])
  })

  it('has no figure for a feature without usage, and names a unit-less feature per unit', () => {
    expect(costPerUnit([item({ usage: '0', cost: new D('0') })])).toEqual([])
    expect(costPerUnit([item({ unitSingular: null, usage: '4', cost: new D('1') })]).map((f) => [f.name, f.value.toFixed()])).toEqual([['Cost per unit', '0.25']])
  })
})
