# SPDX-License-Identifier: BSD-3-Clause
"""A small packet builder for daemon tests (Ethernet, IPv4, IPv6, TCP,
ICMP/ICMPv6 errors) with its own checksum code: expected outputs are built
here, independently of pkt/."""
import ipaddress
import struct


def csum(data, start=0):
    if len(data) & 1:
        data += b"\0"
    s = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip(s):
    return ipaddress.ip_address(s).packed


def eth(dst, src, ethertype, payload):
    frame = mac(dst) + mac(src) + struct.pack("!H", ethertype) + payload
    return frame + b"\0" * max(0, 60 - len(frame))


def tcp(src, dst, sport, dport, flags, payload=b"", seq=1000, ack=0):
    """TCP segment with a correct checksum for @src/@dst (4 or 16 bytes)."""
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags,
                      65535, 0, 0)
    seg = hdr + payload
    if len(src) == 4:
        ph = src + dst + struct.pack("!BBH", 0, 6, len(seg))
    else:
        ph = src + dst + struct.pack("!IxxxB", len(seg), 6)
    c = csum(ph + seg)
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def ipv4(src, dst, proto, payload, ttl=64, ident=0x1234, df=True):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident,
                      0x4000 if df else 0, ttl, proto, 0, src, dst)
    return hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:] + payload


def ipv6(src, dst, nh, payload, hlim=64):
    return struct.pack("!IHBB", 0x60000000, len(payload), nh, hlim) + src + dst + payload


def icmp4_err(typ, code, rest, quote):
    body = struct.pack("!BBHI", typ, code, 0, rest) + quote
    return body[:2] + struct.pack("!H", csum(body)) + body[4:]


def icmp6_err(src, dst, typ, code, rest, quote):
    body = struct.pack("!BBHI", typ, code, 0, rest) + quote
    ph = src + dst + struct.pack("!IxxxB", len(body), 58)
    return body[:2] + struct.pack("!H", csum(ph + body)) + body[4:]
