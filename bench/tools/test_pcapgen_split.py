#!/usr/bin/env python3
"""fg-pcapgen --split Q (issue 37): the Q files hold exactly the packets of
the unsplit pcap, each file in the unsplit order, and every connection's
packets in one file.  Seeded: every scenario of bench/scenarios with a random
flow count, packet count and Q; FG_TEST_SEED picks the seed (printed).

    test_pcapgen_split.py FG_PCAPGEN SCENARIO_DIR
"""
import glob
import os
import random
import struct
import subprocess
import sys
import tempfile


def records(path):
    with open(path, 'rb') as f:
        hdr = f.read(24)
        assert len(hdr) == 24 and struct.unpack('<I', hdr[:4])[0] == 0xa1b2c3d4, path
        out = []
        while True:
            h = f.read(16)
            if not h:
                return hdr, out
            assert len(h) == 16, f'{path}: truncated record header'
            sec, usec, cl, ln = struct.unpack('<IIII', h)
            d = f.read(cl)
            assert len(d) == cl == ln, f'{path}: truncated record'
            out.append((sec * 1000000 + usec, h + d))


def tuple_of(frame):
    et = struct.unpack('>H', frame[16 + 12:16 + 14])[0]
    p = frame[16 + 14:]
    if et == 0x0800:
        ihl = (p[0] & 15) * 4
        return (4, p[12:20], p[ihl:ihl + 4], p[9])
    if et == 0x86dd:
        return (6, p[8:40], p[40:44], p[6])
    return (0, p[:20], b'', 0)


def check(pcapgen, scn, flows, npkts, q, tmp):
    base = os.path.join(tmp, 'x.pcap')
    sets = ['--set', f'flows={flows}']
    subprocess.run([pcapgen, scn, '-o', base, '--packets', str(npkts), '--quiet'] + sets, check=True)
    subprocess.run([pcapgen, scn, '-o', base, '--packets', str(npkts), '--quiet', '--split', str(q)] + sets,
                   check=True)
    hdr, whole = records(base)
    parts, owner = [], {}
    for k in range(q):
        h, r = records(os.path.join(tmp, f'x.q{k}.pcap'))
        assert h == hdr, f'{scn}: q{k}: pcap header differs'
        ts = [t for t, _ in r]
        assert ts == sorted(ts) and len(set(ts)) == len(ts), f'{scn}: q{k}: packets out of order'
        for _, rec in r:
            key = tuple_of(rec)
            assert owner.setdefault(key, k) == k, f'{scn}: a connection in q{owner[key]} and q{k}'
        parts += r
    assert sorted(parts) == whole, f'{scn}: split files != unsplit pcap (Q={q})'
    return len(owner)


def main():
    pcapgen, sdir = sys.argv[1], sys.argv[2]
    seed = int(os.environ.get('FG_TEST_SEED', random.SystemRandom().randrange(1 << 31)))
    print(f'seed {seed}')
    rng = random.Random(seed)
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        # Q=1 is the plain file, byte for byte
        scn = sorted(glob.glob(os.path.join(sdir, '*.scn')))
        a = os.path.join(tmp, 'a.pcap')
        subprocess.run([pcapgen, scn[0], '-o', a, '--packets', '500', '--quiet', '--set', 'flows=100'], check=True)
        subprocess.run([pcapgen, scn[0], '-o', os.path.join(tmp, 'b.pcap'), '--packets', '500', '--quiet',
                        '--set', 'flows=100', '--split', '1'], check=True)
        assert open(a, 'rb').read() == open(os.path.join(tmp, 'b.pcap'), 'rb').read(), '--split 1 differs'
        for _ in range(3):
            for s in scn:
                flows, q = rng.randrange(50, 3000), rng.randrange(2, 13)
                npkts = rng.randrange(1, 4 * flows)
                conns = check(pcapgen, s, flows, npkts, q, tmp)
                n += 1
                print(f'ok {os.path.basename(s)} flows={flows} packets={npkts} Q={q}: {conns} tuples')
        r = subprocess.run([pcapgen, scn[0], '-o', a, '--split', '65'], capture_output=True)
        assert r.returncode == 2, '--split 65 accepted'
    print(f'{n} passed, 0 failed')


if __name__ == '__main__':
    main()
