# SPDX-License-Identifier: BSD-3-Clause
"""Reads flowgate benchmark scenarios (bench/scenarios/*.scn) for the TRex
STL profiles.  Same format and defaults as bench/tools/fg_scen.h and
pktgen-scripts/fg_scenario.lua: flat "key = value", '#' comments."""
import ipaddress
import os

DEFAULTS = {
    'name': 'unnamed', 'description': '', 'mode': 'dsr-ipip',
    'vip4': '10.100.0.1', 'vip6': 'fd00:100::1', 'vport': '80', 'proto': 'tcp',
    'pkt_size': '64', 'imix': '', 'flows': '1000', 'flow_packets': '0',
    'syn_flood_share': '0', 'ipv6_share': '0', 'duration_s': '10', 'rate_pct': '100',
    'client_net4': '172.16.0.0/12', 'client_net6': 'fd00:0:0:1::/64',
    'spoof_net4': '198.18.0.0/15', 'spoof_net6': '2001:2::/48',
    'src_mac': '02:00:00:00:00:01', 'dst_mac': '02:00:00:00:00:02',
    'seed': '1', 'pcap_packets': '0',
}

SCENARIO_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            '..', '..', 'bench', 'scenarios'))


def num(v):
    v = str(v).strip()
    mult = 1
    if v[-1:] in 'kK':
        mult, v = 1000, v[:-1]
    elif v[-1:] in 'mM':
        mult, v = 1000000, v[:-1]
    elif v.endswith('%'):
        return float(v[:-1]) / 100
    x = float(v) * mult
    return int(x) if x == int(x) else x


class Scenario(dict):
    """Scenario values (strings) with typed accessors."""

    @property
    def flows(self):
        return int(num(self['flows']))

    @property
    def flow_packets(self):
        return int(num(self['flow_packets']))

    @property
    def flood_share(self):
        return float(num(self['syn_flood_share']))

    @property
    def v6_share(self):
        return float(num(self['ipv6_share']))

    @property
    def vport(self):
        return int(num(self['vport']))

    def sizes(self):
        """[(wire size incl. FCS, weight)]: one entry, or the IMIX list."""
        if self['pkt_size'] == 'imix':
            out = []
            for tok in self['imix'].replace(',', ' ').split():
                s, w = tok.split(':')
                out.append((int(s), int(w)))
            if not out:
                raise ValueError(f"{self['name']}: pkt_size = imix needs an imix list")
            return out
        return [(int(num(self['pkt_size'])), 1)]


def load(name_or_path):
    path = name_or_path
    if not os.path.sep in path and not path.endswith('.scn'):
        path = os.path.join(SCENARIO_DIR, path + '.scn')
    s = Scenario(DEFAULTS)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            l = line.strip()
            if not l or l.startswith('#'):
                continue
            if '=' not in l:
                raise ValueError(f'{path}:{n}: expected key = value')
            k, v = (x.strip() for x in l.split('=', 1))
            if v.startswith('"'):
                if len(v) < 2 or not v.endswith('"'):
                    raise ValueError(f'{path}:{n}: unterminated quote')
                v = v[1:-1]
            else:
                v = v.split('#', 1)[0].strip()
            if k not in DEFAULTS:
                raise ValueError(f"{path}:{n}: unknown key '{k}'")
            s[k] = v
    return s


def client_range4(s, count):
    """First/last client address of `count` hosts (fg_scen.h: net + 1 + c)."""
    net = ipaddress.ip_network(s['client_net4'], strict=False)
    first = int(net.network_address) + 1
    return str(ipaddress.IPv4Address(first)), str(ipaddress.IPv4Address(first + count - 1))


def spoof_range4(s):
    net = ipaddress.ip_network(s['spoof_net4'], strict=False)
    return str(net.network_address + 1), str(net.broadcast_address - 1)
