#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""trex_hdr: pktgen-scripts/trex/trex_run.py's HdrHistogram decoder (the
latency percentiles of every trex-*.json come from it) against
HdrHistogram_c.  trex_hdr_vectors.txt: one histogram a line, "BASE64 p50
p99 p99.9 max" as HdrHistogram_c's hdr_log_encode / hdr_value_at_percentile
/ hdr_max print them, for the histogram TRex keeps (1 .. 10^7 usec, 3
significant digits): three seeded heavy-tailed samples of 20,000 values
(1 .. 10^7), an empty one and one of a single value.  A damaged
histogram is refused.  The latency of a window (lat_window: the difference
of two snapshots) comes from the HDR histograms when they hold samples and
from TRex's coarse buckets when not (several TX cores in software mode)."""
import base64
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
api = types.ModuleType('trex_stl_lib.api')        # the client is not needed to decode
api.STLClient = api.STLProfile = None
sys.modules['trex_stl_lib'] = types.ModuleType('trex_stl_lib')
sys.modules['trex_stl_lib.api'] = api
sys.path.insert(0, os.path.join(ROOT, 'pktgen-scripts', 'trex'))
import trex_run  # noqa: E402

fails = 0
with open(os.path.join(HERE, 'trex_hdr_vectors.txt')) as f:
    for n, line in enumerate(f, 1):
        b64, *want = line.split()
        want = [int(x) for x in want]
        counts = trex_run.hdr_decode(b64)
        total = sum(c for _, c in counts)
        got = [trex_run.percentile(counts, q) for q in (0.5, 0.99, 0.999)]
        got.append(counts[-1][0] if counts else 0)
        if total == 0:
            ok = got[:3] == [None] * 3 and want[3] == 0
        else:
            ok = got == want and [v for v, _ in counts] == sorted(v for v, _ in counts)
        print(f"vector {n}: {total} samples, p50/p99/p99.9/max {got} (HdrHistogram_c {want}): {'ok' if ok else 'FAIL'}")
        fails += not ok
        if n == 1:   # a damaged cookie is refused, not read as numbers
            raw = bytearray(base64.b64decode(b64))
            raw[0] ^= 0x55
            try:
                trex_run.hdr_decode(base64.b64encode(bytes(raw)).decode())
                print('damaged histogram read: FAIL')
                fails += 1
            except ValueError:
                print('damaged histogram refused: ok')

# lat_window over snapshots shaped as TRex reports them (get_stats()['latency'][pg_id])
vec = [line.split()[0] for line in open(os.path.join(HERE, 'trex_hdr_vectors.txt'))]


def snap(hdrh, hist):
    return trex_run.lat_counts(types.SimpleNamespace(get_stats=lambda: {'latency': {7: {
        'latency': {'hdrh': hdrh, 'histogram': hist, 'total_max': 1, 'average': 1},
        'err_cntrs': {}}}}), 7)


# HDR: the window of vector 1 -> vector 1 is empty; empty -> vector 1 is vector 1
w0 = trex_run.lat_window(snap(vec[0], {}), snap(vec[0], {}))
w1 = trex_run.lat_window(snap(vec[3], {}), snap(vec[0], {}))
ok = w0['lat_samples'] == 0 and w0['lat_p50_us'] is None and w1['lat_source'] == 'hdrh' and \
    w1['lat_samples'] == 20000 and w1['lat_p99_us'] == 9471
print(f"lat_window hdrh: {w0['lat_samples']} / {w1['lat_samples']} samples, p99 {w1['lat_p99_us']}: {'ok' if ok else 'FAIL'}")
fails += not ok
# coarse: empty HDR histogram (vector 4) as with several TX cores; 100 samples
# in the window: 60 under 10 us, 38 in 20-30 us, 2 in 300-400 us
h0 = snap(vec[3], {'0': 10, '20': 5})
h1 = snap(vec[3], {'0': 70, '20': 43, '300': 2})
w = trex_run.lat_window(h0, h1)
ok = (w['lat_source'], w['lat_samples'], w['lat_p50_us'], w['lat_p99_us'], w['lat_p999_us'], w['lat_max_us']) == \
    ('trex-histogram-bucket-top', 100, 10, 400, 400, 400)
print(f"lat_window coarse: {w['lat_source']} {w['lat_samples']} samples p50/p99/p99.9/max "
      f"{w['lat_p50_us']}/{w['lat_p99_us']}/{w['lat_p999_us']}/{w['lat_max_us']}: {'ok' if ok else 'FAIL'}")
fails += not ok
sys.exit(1 if fails else 0)
