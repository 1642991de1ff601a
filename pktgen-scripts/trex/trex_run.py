# SPDX-License-Identifier: BSD-3-Clause
"""Drives a running TRex server (t-rex-64 -i --hdrh) through its STL Python
API for trex_vs_dut.sh: one port, one-armed (what the DUT forwards comes back
on the port that sent it), the streams of fg_stl.py.

  1. max:      the scenario at --max-mpps (more than the rig forwards):
               offered = the port's TX rate, forwarded = its RX rate over
               --seconds after --warmup.
  2. latency:  for each background rate (--lat-mpps, or --lat-pcts of this
               run's own forwarded rate), the scenario at that rate plus a
               latency stream (--lat-pps, its own pg_id per step): TRex's
               HDR histogram of the round trip gives p50/p99/p99.9/max.

Prints one JSON object on stdout.  Needs the TRex client on PYTHONPATH
(<trex>/automation/trex_control_plane/interactive).
"""
import argparse
import base64
import json
import os
import struct
import sys
import time
import zlib

from trex_stl_lib.api import STLClient, STLProfile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def hdr_decode(b64):
    """Counts of a compressed, base64 HdrHistogram (V2 encoding) as
    [(value, count)], values in the histogram's unit (TRex: usec), each the
    highest value its bucket holds (what hdr_value_at_percentile reports)."""
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack('>ii', raw[:8])
    if cookie & ~0xf0 != 0x1c849304 & ~0xf0:
        raise ValueError('not a compressed HdrHistogram')
    body = zlib.decompress(raw[8:8 + length])
    (cookie, plen, norm, sig, lowest, highest, _ratio) = struct.unpack('>iiiiqqd', body[:40])
    if norm:
        raise ValueError('normalizing offset not supported')
    largest_single = 2 * 10 ** sig
    sbc_mag = (largest_single - 1).bit_length()          # ceil(log2)
    half_mag = max(sbc_mag, 1) - 1
    half = 1 << half_mag
    unit_mag = max(lowest, 1).bit_length() - 1           # floor(log2)

    def value_at(index):
        bucket = (index >> half_mag) - 1
        sub = (index & (half - 1)) + half
        if bucket < 0:
            sub -= half
            bucket = 0
        return (sub << (bucket + unit_mag)) + (1 << (bucket + unit_mag)) - 1

    out, idx, pos, end = [], 0, 40, 40 + plen
    while pos < end:
        v, shift = 0, 0
        for i in range(9):                              # LEB128, 9 bytes at most
            byte = body[pos]
            pos += 1
            if i == 8:
                v |= byte << 56
                break
            v |= (byte & 0x7f) << shift
            shift += 7
            if not byte & 0x80:
                break
        v = (v >> 1) ^ -(v & 1)                          # zig-zag
        if v < 0:
            idx += -v
        else:
            if v:
                out.append((value_at(idx), v))
            idx += 1
    return out


def percentile(counts, q):
    total = sum(c for _, c in counts)
    if not total:
        return None
    need, acc = q * total, 0
    for v, c in counts:
        acc += c
        if acc >= need:
            return v
    return counts[-1][0]


def alive(pid):
    """pid runs (a zombie, exited but not yet waited for, does not)"""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def port_counts(c, port):
    st = c.get_stats(ports=[port])[port]
    return st['opackets'], st['ipackets'], time.monotonic()


def coarse(hist):
    """TRex's own latency histogram ({"lower bound usec": count}, buckets
    10 us wide below 100 us, 100 us below 1 ms, ...; "0": under 10 us) as
    {upper bound: count}: a percentile read from it is that bucket's top."""
    out = {}
    for k, n in (hist or {}).items():
        lo = int(float(k))
        step = 10 if lo < 100 else 10 ** (len(str(lo)) - 1)
        out[lo + step] = out.get(lo + step, 0) + n
    return out


def lat_counts(c, pg_id):
    """pg_id's latency now: ({value: count} of the HDR histogram, {bucket
    top: count} of TRex's coarse one, its latency stats).  In software mode
    with more than one TX core TRex sums per-core latency counters without
    their HDR histograms (CTimeHistogram::operator+= leaves m_hdrh out): the
    HDR one stays empty there and the coarse one is what there is."""
    lat = c.get_stats()['latency'].get(pg_id, {})
    ls = lat.get('latency', {})
    return dict(hdr_decode(ls['hdrh'])) if ls.get('hdrh') else {}, coarse(ls.get('histogram')), lat


def lat_window(h0, h1):
    """Latency of the samples between two lat_counts() snapshots: from the
    HDR histograms when the later one has samples, else from TRex's coarse
    one (bucket tops)."""
    k, src = (0, 'hdrh') if sum(h1[0].values()) else (1, 'trex-histogram-bucket-top')
    a0, a1, lat = h0[k], h1[k], h1[2]
    counts = sorted((v, n - a0.get(v, 0)) for v, n in a1.items() if n > a0.get(v, 0))
    ls = lat.get('latency', {})
    return {'lat_source': src, 'lat_samples': sum(n for _, n in counts),
            'lat_p50_us': percentile(counts, 0.50), 'lat_p99_us': percentile(counts, 0.99),
            'lat_p999_us': percentile(counts, 0.999), 'lat_max_us': counts[-1][0] if counts else None,
            'trex_total_max_us': ls.get('total_max'), 'trex_average_us': ls.get('average'),
            'lat_errors': lat.get('err_cntrs')}


def run_phase(c, a, port, mpps, lat_pps=0, pg_id=0):
    """The scenario at `mpps` (+ a latency stream): TX/RX rates over
    a.seconds after a.warmup, and the latency samples of that window alone
    (the difference of the histogram at its ends: HDR, or TRex's coarse
    one where TRex reports no HDR samples)."""
    tun = {'scenario': a.scenario, 'mpps': mpps}
    if a.flows:
        tun['flows'] = a.flows
    if lat_pps:
        tun.update(lat_pps=lat_pps, lat_pg_id=pg_id)
    prof = STLProfile.load_py(os.path.join(HERE, 'fg_stl.py'), **tun)
    c.reset(ports=[port])
    c.set_port_attr(ports=[port], promiscuous=True)
    c.add_streams(prof.get_streams(), ports=[port])
    c.clear_stats(ports=[port])
    c.start(ports=[port], mult='1', force=True)
    try:
        time.sleep(a.warmup)
        h0 = lat_counts(c, pg_id) if lat_pps else None
        tx0, rx0, t0 = port_counts(c, port)
        time.sleep(a.seconds)
        tx1, rx1, t1 = port_counts(c, port)
        dt = t1 - t0
        r = {'tx_pkts': tx1 - tx0, 'rx_pkts': rx1 - rx0, 'seconds': round(dt, 3),
             'tx_mpps': round((tx1 - tx0) / dt / 1e6, 4), 'rx_mpps': round((rx1 - rx0) / dt / 1e6, 4)}
        if lat_pps:
            r.update({'background_mpps': mpps, 'lat_pps': lat_pps, 'pg_id': pg_id})
            r.update(lat_window(h0, lat_counts(c, pg_id)))
    finally:
        c.stop(ports=[port])
        c.wait_on_traffic(ports=[port], timeout=10)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--server', default='127.0.0.1')
    ap.add_argument('--sync-port', type=int, default=4501)
    ap.add_argument('--async-port', type=int, default=4500)
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--scenario', default='steady-1m')
    ap.add_argument('--flows', type=int)
    ap.add_argument('--max-mpps', type=float, default=40.0)
    ap.add_argument('--seconds', type=float, default=3)
    ap.add_argument('--warmup', type=float, default=1)
    ap.add_argument('--lat-pcts', default='10,50,90', help='of this run\'s forwarded rate (when no --lat-mpps)')
    ap.add_argument('--lat-mpps', default='', help='background rates for the latency steps, comma list')
    ap.add_argument('--lat-pps', type=float, default=10000)
    ap.add_argument('--connect-timeout', type=float, default=60)
    ap.add_argument('--trex-pid', type=int, help='give up connecting once this process is gone')
    a = ap.parse_args()

    c = STLClient(server=a.server, sync_port=a.sync_port, async_port=a.async_port, verbose_level='error')
    t_end = time.monotonic() + a.connect_timeout
    while True:
        try:
            c.connect()
            break
        except Exception:
            if time.monotonic() > t_end or (a.trex_pid and not alive(a.trex_pid)):
                raise
            time.sleep(1)
    out = {'trex_version': c.get_server_version().get('version'), 'scenario': a.scenario, 'flows': a.flows}
    try:
        c.acquire(ports=[a.port], force=True)
        out['max'] = run_phase(c, a, a.port, a.max_mpps)
        fwd = out['max']['rx_mpps']
        if a.lat_mpps:
            rates = [float(x) for x in a.lat_mpps.split(',') if x]
        else:
            rates = [round(fwd * float(p) / 100, 4) for p in a.lat_pcts.split(',') if p]
        out['latency'] = []
        for i, r in enumerate(rates):
            if r <= 0:
                continue
            out['latency'].append(run_phase(c, a, a.port, r, a.lat_pps, pg_id=10 + i))
        out['status'] = 'ok'
    except Exception as e:  # reported, not hidden: the JSON says what broke
        out.update(status='failed', reason=f'{type(e).__name__}: {e}'[:300])
    finally:
        try:
            c.release(ports=[a.port])
        except Exception:
            pass
        c.disconnect()
    print(json.dumps(out))
    return 0 if out['status'] == 'ok' else 1


if __name__ == '__main__':
    sys.exit(main())
