#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""flowgate benchmark results: run, record, tabulate, plot.

  fg_results.py machine --out bench/results/machine.json
  fg_results.py run --out FILE [--timeout S] [--label L] -- CMD ARGS...
      runs CMD, takes the last JSON object it prints on stdout, and writes
      {"status", "command", "machine", "date", "wall_s", "result"} to FILE.
      A sub-benchmark that is not built ("not built", exit 2) is recorded as
      status "not available" with the reason; a failure as "failed".  Never
      invents a figure.
  fg_results.py report [--results bench/results] [--md bench/RESULTS.md]
      regenerates the generated sections of RESULTS.md (between
      <!-- BEGIN generated:X --> / <!-- END generated:X --> markers; text
      outside them is kept) and the PNG plots in bench/results/plots/.
  fg_results.py scenario FILE      prints the scenario as JSON (reader test)

Results layout (bench/results/):
  machine.json                 this machine (CPU, cores, memory, DPDK, git)
  testpmd-null.json            testpmd io net_null<->net_null ceiling
  testpmd-<scenario>.json      testpmd io, scenario pcap replay -> net_null
  conntrack-<flows>[-fill<F>].json, dataplane-<mode>-<flows>[-new].json,
  control.json, latency-<scenario>.json, scenario-<scenario>.json
  pktgen-<scenario>.json       Pktgen-DPDK -> flowgate over net_memif
                               (recorded by hand runs, see pktgen-scripts/)
  device/*.json                device-machine runs (committed, not rerun)
  plots/*.png
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))


# ---------------------------------------------------------------- scenarios
def scenario_load(path):
    """Reads a flat 'key = value' scenario file (format: bench/scenarios/README.md)."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith('#'):
                continue
            if '=' not in s:
                raise ValueError(f'{path}:{n}: expected key = value')
            k, v = (x.strip() for x in s.split('=', 1))
            if v.startswith('"'):
                if not v.endswith('"') or len(v) < 2:
                    raise ValueError(f'{path}:{n}: unterminated quote')
                v = v[1:-1]
            elif '#' in v:
                v = v.split('#', 1)[0].strip()
            out[k] = v
    return out


# ---------------------------------------------------------------- machine
def machine_info():
    info = {'hostname': platform.node(), 'kernel': platform.release(),
            'cores': os.cpu_count()}
    try:
        cpu = open('/proc/cpuinfo').read()
        m = re.search(r'model name\s*:\s*(.*)', cpu)
        info['cpu'] = m.group(1).strip() if m else platform.processor()
    except OSError:
        info['cpu'] = platform.processor()
    try:
        mem = open('/proc/meminfo').read()
        info['mem_gib'] = round(int(re.search(r'MemTotal:\s+(\d+)', mem).group(1)) / 2**20, 1)
        info['hugepages_2m'] = int(re.search(r'HugePages_Total:\s+(\d+)', mem).group(1))
    except (OSError, AttributeError):
        pass
    for cmd, key in ((['pkg-config', '--modversion', 'libdpdk'], 'dpdk'),
                     (['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], 'git')):
        try:
            info[key] = subprocess.run(cmd, capture_output=True, text=True,
                                       timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        osr = open('/etc/os-release').read()
        m = re.search(r'PRETTY_NAME="(.*)"', osr)
        info['os'] = m.group(1) if m else ''
    except OSError:
        pass
    return info


def machine_line(m):
    if not m:
        return 'unknown machine'
    return (f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
            f"{m.get('mem_gib', '?')} GiB, {m.get('os', '')}, DPDK {m.get('dpdk', '?')}")


# ---------------------------------------------------------------- run
def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith('{') and line.endswith('}'):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def cmd_run(a):
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == '--' else a.cmd
    if not cmd:
        sys.exit('fg_results run: no command')
    shown = [c[len(ROOT) + 1:] if c.startswith(ROOT + '/') else c for c in cmd]
    rec = {'command': ' '.join(shlex.quote(c) for c in shown), 'label': a.label,
           'machine': json.load(open(a.machine)) if a.machine and os.path.exists(a.machine)
           else machine_info(),
           'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors='replace') if isinstance(e.stdout, bytes) else (e.stdout or '')
        err = (e.stderr.decode(errors='replace') if isinstance(e.stderr, bytes) else (e.stderr or ''))
        err += f'\ntimed out after {a.timeout} s'
        rc = 124
    except OSError as e:
        out, err, rc = '', str(e), 127
    rec['wall_s'] = round(time.time() - t0, 1)
    res = last_json(out)
    if rc == 0 and res is not None and res.get('status') not in ('failed', 'not available'):
        rec['status'] = 'ok'
        rec['result'] = res
    else:
        text = (err + '\n' + out).strip()
        nb = re.search(r"(is not built[^\n]*|not available[^\n]*|No such file[^\n]*|not found[^\n]*)", text)
        rec['status'] = 'not available' if (nb or rc == 127 or (res or {}).get('status') == 'not available') else 'failed'
        rec['rc'] = rc
        rec['reason'] = (nb.group(0) if nb else (res or {}).get('reason')) or text[-400:]
        if res is not None:
            rec['result'] = res
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, 'w') as f:
        json.dump(rec, f, indent=1)
        f.write('\n')
    summ = rec['status']
    if rec['status'] == 'ok':
        keys = [k for k in ('mpps', 'testpmd_io_mpps', 'lookup_mpps', 'insert_mpps',
                            'new_flows_mps', 'list_s', 'publish_ms') if k in res]
        summ += ' ' + ' '.join(f'{k}={res[k]}' for k in keys)
    else:
        summ += ': ' + str(rec['reason']).splitlines()[-1][:160] if rec['reason'] else ''
    print(f'    -> {os.path.relpath(a.out)}: {summ} ({rec["wall_s"]} s)', flush=True)
    return 0


# ---------------------------------------------------------------- report
def load_results(d):
    res = {}
    for p in sorted(glob.glob(os.path.join(d, '*.json')) + glob.glob(os.path.join(d, 'device', '*.json'))):
        try:
            res[os.path.relpath(p, d)] = json.load(open(p))
        except (OSError, json.JSONDecodeError) as e:
            res[os.path.relpath(p, d)] = {'status': 'failed', 'reason': f'unreadable: {e}'}
    return res


def portable(cmd):
    """A recorded command as anyone can run it: the build directory as
    `build` (the README's), the scenario pcaps under $BENCH_TMP (the
    directory scripts/bench.sh writes them to), not the names one machine
    happened to use."""
    cmd = re.sub(r'(?<![\w/.-])build-[\w.-]+', 'build', cmd or '?')
    return cmd.replace('/tmp/flowgate-bench/', '$BENCH_TMP/')


def cmd_of(rec):
    return portable((rec or {}).get('command'))


def R(rec):
    """The result dict of an ok record, else None."""
    if rec and rec.get('status') == 'ok':
        return rec.get('result')
    return None


def na(rec):
    if rec is None:
        return 'not run'
    if rec.get('status') == 'ok':
        return ''
    reason = str(rec.get('reason', '')).strip().splitlines()
    return f"{rec.get('status', 'n/a')}" + (f" ({reason[-1][:80]})" if reason else '')


def fmt(v, nd=2):
    if v is None:
        return '—'
    if isinstance(v, float):
        return f'{v:.{nd}f}'
    return str(v)


def human(n):
    n = int(n)
    for div, suf in ((10**9, 'G'), (10**6, 'M'), (10**3, 'K')):
        if n >= div and n % div == 0:
            return f'{n // div}{suf}'
    return str(n)


def section_machine(res):
    m = (res.get('machine.json') or {})
    lines = ['| key | value |', '|---|---|']
    for k in ('cpu', 'cores', 'mem_gib', 'hugepages_2m', 'os', 'kernel', 'dpdk', 'git', 'hostname'):
        if k in m:
            lines.append(f'| {k} | {m[k]} |')
    tp = res.get('testpmd-null.json')
    if R(tp):
        lines.append(f"| framework ceiling | dpdk-testpmd io fwd {R(tp)['source']}, 1 core: "
                     f"**{R(tp)['testpmd_io_mpps']:.1f} Mpps** (`{cmd_of(tp)}`) |")
    return lines


def section_scenarios(res, scen_dir):
    lines = ['| scenario | what | testpmd io ceiling, pcap replay → net_null (Mpps) | '
             'flowgate, pcap replay → net_null (Mpps) | Pktgen-DPDK → flowgate over net_memif (Mpps) | '
             'Pktgen → testpmd io over net_memif (Mpps) |',
             '|---|---|---|---|---|---|']
    cmds = []
    for p in sorted(glob.glob(os.path.join(scen_dir, '*.scn'))):
        s = scenario_load(p)
        name = s.get('name', os.path.basename(p)[:-4])
        tp = res.get(f'testpmd-{name}.json')
        fg = res.get(f'scenario-{name}.json')
        pk = res.get(f'pktgen-{name}.json')
        cells = []
        for rec, key in ((tp, 'testpmd_io_mpps'), (fg, 'mpps')):
            r = R(rec)
            cells.append(fmt(r.get(key)) if r and key in r else na(rec))
        r = R(pk)
        cells.append(fmt(r.get('dut_mpps')) if r and r.get('dut_mpps') is not None else na(pk))
        cells.append(fmt(r.get('testpmd_mpps')) if r and r.get('testpmd_mpps') is not None else na(pk))
        lines.append(f"| `{name}` | {s.get('description', '')} | " + ' | '.join(cells) + ' |')
        for rec in (tp, fg, pk):
            if rec and rec.get('command'):
                # one line per kind of run, the scenario's name as S
                c = cmd_of(rec).replace(name, 'S')
                if c not in cmds:
                    cmds.append(c)
    return lines + ([''] + ['Commands (S: the scenario):'] + [f"- `{c}`" for c in cmds]
                    if cmds else [])


def section_conntrack(res):
    lines = ['| flows | fill | lookup Mpps | rte_hash lookup Mpps | ratio | insert Mpps | '
             'rte_hash insert Mpps | ratio | miss Mpps | delete Mpps | expire ns/entry | bytes/flow | status |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    cmds = []
    # run records only (fg_results run); a bench's bare JSON kept beside them
    # (e.g. conntrack-onemiss-*.json, session 6's prototype) is not a row
    recs = [(k, v) for k, v in res.items() if k.startswith('conntrack-') and 'status' in v]

    def key(kv):
        r = R(kv[1]) or {}
        return (r.get('flows', 0), r.get('fill', 0), kv[0])
    for k, rec in sorted(recs, key=key):
        r = R(rec)
        if r:
            lr = r['lookup_mpps'] / r['rte_hash_lookup_mpps'] if r.get('rte_hash_lookup_mpps') else None
            ir = r['insert_mpps'] / r['rte_hash_insert_mpps'] if r.get('rte_hash_insert_mpps') else None
            lines.append(f"| {human(r['flows'])} | {fmt(r.get('fill'))} | {fmt(r.get('lookup_mpps'))} | "
                         f"{fmt(r.get('rte_hash_lookup_mpps'))} | {fmt(lr)} | {fmt(r.get('insert_mpps'))} | "
                         f"{fmt(r.get('rte_hash_insert_mpps'))} | {fmt(ir)} | {fmt(r.get('miss_mpps'))} | "
                         f"{fmt(r.get('delete_mpps'))} | {fmt(r.get('expire_ns_per_entry'), 1)} | "
                         f"{fmt(r.get('bytes_per_flow'), 1)} | ok |")
        else:
            lines.append(f"| {k[10:-5]} | | | | | | | | | | | | {na(rec)} |")
        if rec.get('command'):
            cmds.append(f"`{cmd_of(rec)}`")
    return lines + ['', 'Commands: ' + ', '.join(cmds) if cmds else 'Not run.']


def section_dataplane(res):
    lines = ['| mode | flows | new flows | Mpps | testpmd io ceiling (same run) | ratio | new flows/s | status |',
             '|---|---|---|---|---|---|---|---|']
    cmds = []
    recs = [(k, v) for k, v in res.items() if k.startswith('dataplane-') and not k.startswith('device/')]
    order = {'dsr-ipip': 0, 'dsr-gue': 1, 'nat': 2}

    def key(kv):
        m = re.match(r'dataplane-([a-z-]+?)-(\d+)(-new)?\.json', kv[0])
        return (order.get(m.group(1), 9), int(m.group(2)), bool(m.group(3))) if m else (9, 0, kv[0])
    for k, rec in sorted(recs, key=key):
        m = re.match(r'dataplane-([a-z-]+?)-(\d+)(-new)?\.json', k)
        mode, flows, new = (m.group(1), int(m.group(2)), bool(m.group(3))) if m else (k, 0, False)
        r = R(rec)
        if r:
            ratio = r['mpps'] / r['testpmd_io_mpps'] if r.get('testpmd_io_mpps') else None
            lines.append(f"| {r.get('mode', mode)} | {human(r.get('flows', flows))} | {'yes' if new else 'no'} | "
                         f"{fmt(r.get('mpps'))} | {fmt(r.get('testpmd_io_mpps'))} | {fmt(ratio)} | "
                         f"{fmt(r.get('new_flows_mps'), 0) if r.get('new_flows_mps') is not None else '—'} | ok |")
        else:
            lines.append(f"| {mode} | {human(flows)} | {'yes' if new else 'no'} | | | | | {na(rec)} |")
        if rec.get('command') and len(cmds) < 3:
            cmds.append(f"`{cmd_of(rec)}`")
    return lines + ['', ('Commands (e.g.): ' + ', '.join(cmds)) if cmds else 'Not run.']


def section_control(res):
    rec = res.get('control.json')
    r = R(rec)
    lines = ['| list_s (≤ 2) | dataplane_drop_pct (≤ 5) | publish_ms (≤ 10) | flows | status |',
             '|---|---|---|---|---|']
    if r:
        lines.append(f"| {fmt(r.get('list_s'))} | {fmt(r.get('dataplane_drop_pct'))} | "
                     f"{fmt(r.get('publish_ms'))} | {human(r.get('flows', 0))} | ok |")
    else:
        lines.append(f'| | | | | {na(rec)} |')
    if rec and rec.get('command'):
        lines += ['', f"Command: `{cmd_of(rec)}`"]
    return lines


def latency_rows(block, who):
    rows = []
    if not block:
        return rows
    mx = block.get('max', {})
    rows.append((who, 'max (unpaced)', mx))
    for r in block.get('loads', []):
        rows.append((who, f"{r['load_pct']:.0f}%", r))
    return rows


def section_latency(res):
    lines = ['| path | load (of measured max) | offered Mpps | received Mpps | loss % | p50 µs | p99 µs | '
             'p99.9 µs | max µs | TX ring full | loop stalls > 20 µs (gen / fwd, total µs) |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    notes = []
    for k, rec in sorted(res.items()):
        if not k.startswith('latency-'):
            continue
        r = R(rec)
        if not r:
            lines.append(f'| {k[8:-5]} | | | | | | | | | | {na(rec)} |')
            continue
        rows = latency_rows(r.get('baseline'), f"{r['scenario']}: framework baseline ({r['baseline']['path']})")
        if r.get('dut_result'):
            dut = ', '.join(v.split(',')[0] for v in r['dut_result'].get('vdevs', []))
            rows += latency_rows(r['dut_result'], f"{r['scenario']}: through flowgate (DUT port {dut})")
        for who, load, x in rows:
            c = x.get('counters', {})
            lines.append(f"| {who} | {load} | {fmt(x.get('offered_mpps') or None)} | {fmt(x.get('rx_mpps'))} | "
                         f"{fmt(x.get('loss_pct'), 3)} | {fmt(x.get('p50_us'))} | {fmt(x.get('p99_us'))} | "
                         f"{fmt(x.get('p999_us'))} | {fmt(x.get('max_us'))} | {c.get('tx_full', '—')} | "
                         f"{c.get('gen_stalls', '—')} / {c.get('fwd_stalls', '—')} "
                         f"({c.get('gen_stall_us', '—')} / {c.get('fwd_stall_us', '—')}) |")
        notes.append(f"Command: `{cmd_of(rec)}`")
        if not r.get('dut_result'):
            notes.append('The flowgate DUT row appears when the daemon runs over net_memif '
                         '(scripts/bench.sh does this when build/dataplane/flowgate exists).')
    return lines + [''] + notes


def section_device(res):
    lines = []
    for k, rec in sorted(res.items()):
        if not k.startswith('device/'):
            continue
        r = rec.get('result', rec)
        lines.append(f"- `{k}` ({rec.get('machine', {}).get('cpu', r.get('device', 'device machine'))}"
                     f"{', ' + rec['date'] if rec.get('date') else ''}): command `{cmd_of(rec)}`")
        if 'workers' in r and 'mpps' in r:
            lines.append('')
            lines.append('| workers | aggregate Mpps | per worker | efficiency vs 1 worker |')
            lines.append('|---|---|---|---|')
            w1 = r['mpps'][0] / r['workers'][0] if r['workers'] else None
            for w, m in zip(r['workers'], r['mpps']):
                lines.append(f'| {w} | {fmt(m)} | {fmt(m / w)} | {fmt(100 * m / w / w1, 0) + " %" if w1 else "—"} |')
            lines.append('')
    return lines or ['No device-machine results committed yet (bench/results/device/*.json; '
                     'format in docs/BENCH.md). They are recorded, not rerun by make bench.']


def section_plots(plots, res):
    m = machine_line(res.get('machine.json'))
    lines = [f'Machine: {m}.', '']
    for p, caption in plots:
        lines.append(f'![{caption}](results/plots/{os.path.basename(p)})')
        lines.append(f'*{caption}*')
        lines.append('')
    return lines or ['No plots (matplotlib missing or no results).']


# ---------------------------------------------------------------- plots
def make_plots(res, outdir):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('fg_results: python3-matplotlib not installed, no plots', file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    mline = machine_line(res.get('machine.json'))
    plots = []

    def finish(fig, name, title, foot, caption):
        fig.suptitle(title + '\n' + mline, fontsize=9)
        fig.text(0.01, 0.005, foot, fontsize=6, ha='left', va='bottom', wrap=True)
        fig.tight_layout(rect=(0, 0.06, 1, 0.93))
        p = os.path.join(outdir, name)
        fig.savefig(p, dpi=110)
        plt.close(fig)
        plots.append((p, caption))

    # 1. Mpps vs flows per mode against the testpmd ceiling
    series = {}
    ceil = []
    cmd = None
    for k, rec in res.items():
        m = re.match(r'dataplane-([a-z-]+?)-(\d+)\.json', k)
        r = R(rec)
        if m and r:
            series.setdefault(r.get('mode', m.group(1)), []).append((r['flows'], r['mpps']))
            if r.get('testpmd_io_mpps'):
                ceil.append((r['flows'], r['testpmd_io_mpps']))
            cmd = cmd or rec.get('command')
    if series:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for mode, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], 'o-', label=f'flowgate {mode}')
        if ceil:
            ceil.sort()
            ax.plot([p[0] for p in ceil], [p[1] for p in ceil], 'k--', label='testpmd io (same run, same vdevs)')
        ax.set_xscale('log')
        ax.set_xlabel('concurrent flows')
        ax.set_ylabel('Mpps, 64 B, 1 worker core')
        ax.set_ylim(bottom=0)
        ax.grid(alpha=.3)
        ax.legend(fontsize=8)
        finish(fig, 'mpps_vs_flows.png', 'flowgate dataplane: Mpps vs flows per mode',
               f'command: {cmd}; baseline: dpdk-testpmd io forwarding in the same run',
               'Mpps vs flows per forwarding mode, against the testpmd io ceiling')

    # 2. latency CDF
    for k, rec in sorted(res.items()):
        r = R(rec)
        if not (k.startswith('latency-') and r):
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for blk, style, who in ((r.get('baseline'), '--', 'baseline'), (r.get('dut_result'), '-', 'flowgate')):
            if not blk:
                continue
            for x in blk.get('loads', []):
                # complementary CDF on a log axis so p99 / p99.9 are visible
                cdf = [c for c in x.get('cdf', []) if c[1] == c[1] and c[0] < 100]
                if cdf:
                    ax.plot([c[1] for c in cdf], [1 - c[0] / 100 for c in cdf], style, marker='.',
                            label=f"{who} {x['load_pct']:.0f}% ({x['rx_mpps']:.1f} Mpps)")
        ax.set_xscale('log')
        ax.set_yscale('log')
        ax.set_yticks([0.5, 0.1, 0.01, 0.001, 0.0001])
        ax.set_yticklabels(['p50', 'p90', 'p99', 'p99.9', 'p99.99'])
        ax.axvline(10, color='r', ls=':', label='target p99 10 µs')
        ax.set_xlabel('one-way latency, µs (TSC stamp in frame → sink)')
        ax.set_ylabel('fraction of packets slower (log)')
        ax.grid(alpha=.3)
        ax.legend(fontsize=7)
        finish(fig, f'latency_cdf_{os.path.basename(k)[8:-5]}.png', f'latency CDF, scenario {r["scenario"]}',
               f'command: {rec["command"]}; baseline: ring → io-fwd lcore → ring (framework only)',
               f'Latency CDF at 10/50/80/95% of the measured max rate ({r["scenario"]})')

    # 3. new-flow rate
    bars = []
    for k, rec in sorted(res.items()):
        r = R(rec)
        m = re.match(r'dataplane-([a-z-]+?)-(\d+)-new\.json', k)
        if m and r and r.get('new_flows_mps') is not None:
            bars.append((f"flowgate {r.get('mode', m.group(1))}", r['new_flows_mps'] / 1e6, rec['command']))
    ct = [(R(v)['flows'], R(v)) for k, v in res.items() if k.startswith('conntrack-') and R(v)
          and 'fill' not in k]
    for flows, r in sorted(ct, key=lambda x: x[0]):
        if flows == 1000000:
            bars.append(('conntrack insert (1M)', r['insert_mpps'], None))
            bars.append(('rte_hash insert (1M)', r['rte_hash_insert_mpps'], None))
    if bars:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.bar(range(len(bars)), [b[1] for b in bars], color=['C0' if b[0].startswith('flowgate') else 'C7' for b in bars])
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels([b[0] for b in bars], rotation=20, ha='right', fontsize=8)
        ax.set_ylabel('million new flows / s (1 core)')
        ax.axhline(2.0, color='r', ls=':', label='target 2 M/s')
        ax.legend(fontsize=8)
        ax.grid(alpha=.3, axis='y')
        cmds = sorted({b[2] for b in bars if b[2]})
        finish(fig, 'new_flow_rate.png', 'new-flow rate (every packet a new connection)',
               'commands: ' + '; '.join(cmds[:2]) + '; baseline: plain rte_hash insert, same run',
               'New-flow rate per mode, with conntrack / plain rte_hash insert rates as reference')

    # 4. conntrack vs rte_hash
    if ct:
        ct.sort(key=lambda x: x[0])
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = [c[0] for c in ct]
        for key, st, lab in (('lookup_mpps', 'o-', 'conntrack lookup'), ('rte_hash_lookup_mpps', 'o--', 'rte_hash lookup'),
                             ('insert_mpps', 's-', 'conntrack insert'), ('rte_hash_insert_mpps', 's--', 'rte_hash insert')):
            ax.plot(xs, [c[1].get(key, float('nan')) for c in ct], st, label=lab)
        ax.set_xscale('log')
        ax.set_xlabel('flows')
        ax.set_ylabel('M operations / s, 1 core')
        ax.set_ylim(bottom=0)
        ax.grid(alpha=.3)
        ax.legend(fontsize=8)
        c0 = next((v['command'] for k, v in res.items() if k.startswith('conntrack-') and R(v)), '')
        finish(fig, 'conntrack.png', 'conntrack shard vs plain rte_hash',
               f'command: {c0}; baseline: plain rte_hash, same keys and size, same run',
               'Conntrack lookup/insert vs flows against plain rte_hash')

    # 5. multi-core scaling (device machine)
    for k, rec in sorted(res.items()):
        r = rec.get('result', rec) if k.startswith('device/') else None
        if not r or 'workers' not in r or 'mpps' not in r:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        w, m = r['workers'], r['mpps']
        ax.plot(w, m, 'o-', label='flowgate aggregate')
        if w:
            ax.plot(w, [m[0] / w[0] * x for x in w], 'k:', label='linear from 1 worker')
        ax.axhline(148.8, color='r', ls='--', label='100 GbE, 64 B (148.8 Mpps)')
        ax.set_xlabel('worker cores')
        ax.set_ylabel('Mpps')
        ax.grid(alpha=.3)
        ax.legend(fontsize=8)
        dm = rec.get('machine', {})
        fig.suptitle('multi-core scaling (device machine)\n' + (dm.get('cpu', '') if isinstance(dm, dict) else str(dm)), fontsize=9)
        fig.text(0.01, 0.005, f"command: {rec.get('command', '?')}", fontsize=6)
        fig.tight_layout(rect=(0, 0.06, 1, 0.93))
        p = os.path.join(outdir, 'scaling_' + os.path.basename(k)[:-5] + '.png')
        fig.savefig(p, dpi=110)
        plt.close(fig)
        plots.append((p, 'Multi-core scaling on the device machine'))
    return plots


def replace_section(md, name, lines):
    begin, end = f'<!-- BEGIN generated:{name} -->', f'<!-- END generated:{name} -->'
    body = begin + '\n' + '\n'.join(lines) + '\n' + end
    if begin in md and end in md:
        pre, rest = md.split(begin, 1)
        _, post = rest.split(end, 1)
        return pre + body + post
    return md.rstrip('\n') + '\n\n' + body + '\n'


SKELETON = """# flowgate benchmark results

Generated by `make bench` (scripts/bench.sh → bench/tools/fg_results.py report) from
`bench/results/*.json`.  Text between `<!-- BEGIN generated:X -->` and `<!-- END generated:X -->`
is rewritten on every run; everything else is kept.  How to reproduce: docs/BENCH.md.
Every figure is listed with the command that produced it and the baseline measured in the same
run; a sub-benchmark that is not built shows "not available", never a number.
"""

SECTIONS = [
    ('machine', '## Machine and framework ceiling'),
    ('scenarios', '## Scenarios: flowgate vs the testpmd ceiling, built-in rig vs Pktgen-DPDK'),
    ('conntrack', '## Connection table (`flowgate-bench conntrack`)'),
    ('dataplane', '## Dataplane, one worker core (`flowgate-bench dataplane`)'),
    ('control', '## Control plane (`flowgate-bench control`)'),
    ('latency', '## Latency (`flowgate-bench latency`)'),
    ('device', '## Device machine (recorded, not rerun)'),
    ('plots', '## Plots'),
]


def cmd_report(a):
    res = load_results(a.results)
    plots = make_plots(res, os.path.join(a.results, 'plots'))
    md = open(a.md).read() if os.path.exists(a.md) else SKELETON
    gen = {
        'machine': section_machine(res),
        'scenarios': section_scenarios(res, a.scenarios),
        'conntrack': section_conntrack(res),
        'dataplane': section_dataplane(res),
        'control': section_control(res),
        'latency': section_latency(res),
        'device': section_device(res),
        'plots': section_plots(plots, res),
    }
    for name, title in SECTIONS:
        if f'<!-- BEGIN generated:{name} -->' not in md:
            md = md.rstrip('\n') + f'\n\n{title}\n'
        md = replace_section(md, name, gen[name])
    with open(a.md, 'w') as f:
        f.write(md)
    print(f'fg_results: {a.md}: {len(res)} result files, {len(plots)} plots')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='what', required=True)
    p = sub.add_parser('machine')
    p.add_argument('--out', required=True)
    p = sub.add_parser('run')
    p.add_argument('--out', required=True)
    p.add_argument('--timeout', type=float, default=600)
    p.add_argument('--label', default='')
    p.add_argument('--machine', default=os.path.join(ROOT, 'bench', 'results', 'machine.json'))
    p.add_argument('cmd', nargs=argparse.REMAINDER)
    p = sub.add_parser('report')
    p.add_argument('--results', default=os.path.join(ROOT, 'bench', 'results'))
    p.add_argument('--md', default=os.path.join(ROOT, 'bench', 'RESULTS.md'))
    p.add_argument('--scenarios', default=os.path.join(ROOT, 'bench', 'scenarios'))
    p = sub.add_parser('scenario')
    p.add_argument('file')
    a = ap.parse_args()
    if a.what == 'machine':
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, 'w') as f:
            json.dump(machine_info(), f, indent=1)
            f.write('\n')
        return 0
    if a.what == 'run':
        return cmd_run(a)
    if a.what == 'report':
        return cmd_report(a)
    print(json.dumps(scenario_load(a.file)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
