import { describe, expect, it } from 'vitest'
import { allowanceEntryProblem, allowedHost, isIpAddress, refusedAddress } from './outbound-address.ts'

describe('refusedAddress', () => {
  it.each([
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fd00::1', 'private'],
    ['fc00::1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    // The form a URL normalises [::ffff:127.0.0.1] to.
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['100.64.0.1', 'private (carrier-grade NAT)'],
    ['metadata.google.internal', 'not an IP address'],
    ['1.2.3', 'not an IP address'],
    ['1:2:3:4:5:6:7:8:9', 'not an IP address'],
  ])('refuses %s as %s', (address, reason) => {
    expect(refusedAddress(address)).toBe(reason)
  })

  it.each(['8.8.8.8', '2606:4700::1111', '172.32.0.1', '172.15.255.255', '192.169.0.1', '100.128.0.1', '::ffff:8.8.8.8', '2001:db8::1'])('allows %s', (address) => {
    expect(refusedAddress(address)).toBeUndefined()
  })

  it('tells an address from a host name', () => {
    expect([isIpAddress('10.1.2.3'), isIpAddress('[fd00::1]'), isIpAddress('files.example.com'), isIpAddress('256.1.1.1')]).toEqual([true, true, false, false])
  })
})

describe('allowedHost', () => {
  const entries = ['files.internal', '127.0.0.1:8080', '[fd00::5]']
  it('allows a listed host on any port, or on its listed port only', () => {
    expect(allowedHost(entries, 'FILES.internal', 443)).toBe(true)
    expect(allowedHost(entries, '127.0.0.1', 8080)).toBe(true)
    expect(allowedHost(entries, '127.0.0.1', 8081)).toBe(false)
    expect(allowedHost(entries, '[fd00::5]', 80)).toBe(true)
    expect(allowedHost(entries, 'other.internal', 443)).toBe(false)
    expect(allowedHost([], '127.0.0.1', 8080)).toBe(false)
  })

  it('checks the form of an entry', () => {
    expect(['files.internal', 'files.internal:8443', '[::1]:80', '10.0.0.7'].map(allowanceEntryProblem)).toEqual([undefined, undefined, undefined, undefined])
    expect(allowanceEntryProblem('http://files.internal')).toBe('is not host or host:port')
    expect(allowanceEntryProblem('::1')).toBe('is not host or host:port')
  })
})
