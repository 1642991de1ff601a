# SPDX-License-Identifier: BSD-3-Clause
"""TRex STL profile for every flowgate benchmark scenario.

    start -f pktgen-scripts/trex/fg_stl.py -t scenario=steady-1m -m 100%
    start -f pktgen-scripts/trex/fg_stl.py -t scenario=syn-flood,vip=10.100.0.1 -m 40mpps

Reads bench/scenarios/<scenario>.scn (the same file fg-pcapgen, flowgate-bench
and the Pktgen scripts read) and builds, per traffic class, one continuous
stream whose field engine varies the client tuple per packet:

  established flows   source IP over client_net4 (+ source port) so that
                      #addresses x #ports = flows (fg_scen.h's mapping:
                      address = net + 1 + c % 65536, port = 1024 + c / 65536)
                      TCP ACK packets
  new connections     flow_packets = 1 (new-flows): random source IP and
                      port over the whole client range: TCP SYN, fresh tuples
  churn               flow_packets = n: SYN / ACK / FIN streams with the
                      shares 1/n, (n-2)/n, 1/n over the same tuples
  spoofed SYN flood   random source IP in spoof_net4, random port, TCP SYN,
                      share syn_flood_share of the packets
  IPv6 share          the same established stream in IPv6 to vip6
  IMIX                one stream per size, packet-rate shares by weight

Stream rates are percentages of the port rate set by -m, split by share;
with the tunable mpps=X they are absolute (X Mpps in all, -m 1).
lat_pps=P adds a latency stream (pg_id lat_pg_id, default 7) at P pps.
Tunables: scenario, vip, flows, mpps, lat_pps, lat_pg_id.
The field engine's checksum fix (STLVmFixIpv4 / fix_chksum_hw) keeps the
IPv4 and TCP checksums right.
"""
import argparse
import os
import sys

from trex_stl_lib.api import *  # noqa: F401,F403  (TRex profile convention)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fg_scenario  # noqa: E402

L4_TCP = CTRexVmInsFixHwCs.L4_TYPE_TCP  # noqa: F405


def _pkt(s, v6, flags, size, flood=False):
    l2 = Ether(src=s['src_mac'], dst=s['dst_mac'])
    if v6:
        src = str(fg_scenario.ipaddress.ip_network(s['client_net6'], strict=False).network_address + 1)
        l3 = IPv6(src=src, dst=s['vip6'], hlim=64)
    else:
        src = fg_scenario.spoof_range4(s)[0] if flood else fg_scenario.client_range4(s, 1)[0]
        l3 = IP(src=src, dst=s['vip4'], ttl=64, flags='DF')
    base = l2 / l3 / TCP(sport=1024, dport=s.vport, flags=flags, seq=1, window=65535)
    pad = max(0, size - 4 - len(base))          # size is on the wire incl. FCS
    return base / Raw(b'\x00' * pad)


def _vm_established(s, v6, count, random=False):
    """Client tuple variation over `count` connections.

    IPv4, sequential: STLVmTupleGen walks every address of the range and
    steps the port when the addresses wrap, so #addresses x #ports distinct
    tuples (= flows) repeat in a fixed cycle (fg_scen.h's mapping: address
    net + 1 + c % 65536, port 1024 + c / 65536).  Independent inc variables
    would only give lcm(#addresses, #ports) tuples.
    IPv4, random (new connections): independent random address and port.
    IPv6: the low 32 bits of the source address walk 1..count.
    """
    ins = []
    if v6:
        ins += [STLVmFlowVar(name='h', min_value=1, max_value=min(count, 0xffffffff), size=4,
                             op='random' if random else 'inc'),
                STLVmWrFlowVar(fv_name='h', pkt_offset='IPv6.src', offset_fixup=12)]
        ins.append(STLVmFixChecksumHw(l3_offset='IPv6', l4_offset='TCP', l4_type=L4_TCP))
        return STLScVmRaw(ins)
    net = fg_scenario.ipaddress.ip_network(s['client_net4'], strict=False)
    if random:
        first, last = str(net.network_address + 1), str(net.broadcast_address - 1)
        ins += [STLVmFlowVar(name='ip', min_value=first, max_value=last, size=4, op='random'),
                STLVmWrFlowVar(fv_name='ip', pkt_offset='IP.src'),
                STLVmFlowVar(name='sp', min_value=1024, max_value=65535, size=2, op='random'),
                STLVmWrFlowVar(fv_name='sp', pkt_offset='TCP.sport')]
    else:
        nip = min(count, 65536)
        nport = max(1, (count + nip - 1) // nip)
        first, last = fg_scenario.client_range4(s, nip)
        ins += [STLVmTupleGen(ip_min=first, ip_max=last, port_min=1024,
                              port_max=1024 + nport - 1, limit_flows=count, name='t'),
                STLVmWrFlowVar(fv_name='t.ip', pkt_offset='IP.src'),
                STLVmWrFlowVar(fv_name='t.port', pkt_offset='TCP.sport')]
    ins.append(STLVmFixChecksumHw(l3_offset='IP', l4_offset='TCP', l4_type=L4_TCP))
    return STLScVmRaw(ins)


def _vm_flood(s):
    first, last = fg_scenario.spoof_range4(s)
    return STLScVmRaw([
        STLVmFlowVar(name='ip', min_value=first, max_value=last, size=4, op='random'),
        STLVmWrFlowVar(fv_name='ip', pkt_offset='IP.src'),
        STLVmFlowVar(name='sp', min_value=1024, max_value=65535, size=2, op='random'),
        STLVmWrFlowVar(fv_name='sp', pkt_offset='TCP.sport'),
        STLVmFixChecksumHw(l3_offset='IP', l4_offset='TCP', l4_type=L4_TCP),
    ])


def _latency_stream(s, size, pps, pg_id):
    """One flow (the first client tuple, established) at `pps` with TRex's
    latency trailer (STLFlowLatencyStats): the last 16 bytes of the TCP
    payload, which flowgate's encapsulation (DSR-IPIP/GUE) and NAT leave in
    place, so a software-mode port finds it in what comes back.  At least
    128 B on the wire so the trailer sits in the payload, not the headers."""
    return STLStream(packet=STLPktBuilder(pkt=_pkt(s, False, 'A', max(size, 128))),
                     flow_stats=STLFlowLatencyStats(pg_id=pg_id),
                     mode=STLTXCont(pps=pps))


def _args(tunables, kw):
    """Tunables: TRex 3.x passes `-t a=1,b=2` as tunables=['--a', '1', ...]
    (argparse); older versions pass keyword arguments."""
    p = argparse.ArgumentParser(prog='fg_stl.py', add_help=False)
    p.add_argument('--scenario', default=kw.get('scenario', 'steady-1m'))
    p.add_argument('--vip', default=kw.get('vip'))
    p.add_argument('--flows', type=int, default=kw.get('flows'))
    p.add_argument('--mpps', type=float, default=kw.get('mpps'),
                   help='total packet rate of the scenario streams (default: shares of the port rate, -m scales)')
    p.add_argument('--lat_pps', type=float, default=kw.get('lat_pps', 0),
                   help='add a latency stream (STLFlowLatencyStats) at this rate')
    p.add_argument('--lat_pg_id', type=int, default=kw.get('lat_pg_id', 7))
    return p.parse_args(tunables or [])


class FlowgateScenario(object):
    def get_streams(self, direction=0, port_id=0, tunables=None, **kwargs):
        a = _args(tunables, kwargs)
        s = fg_scenario.load(a.scenario)
        if a.vip:
            s['vip4'] = a.vip
        if a.flows:
            s['flows'] = str(a.flows)
        sizes = s.sizes()
        wsum = sum(w for _, w in sizes)
        legit = 1.0 - s.flood_share
        streams = []

        def add(pkt, vm, share):
            if share <= 0:
                return
            mode = STLTXCont(pps=a.mpps * 1e6 * share) if a.mpps else STLTXCont(percentage=100.0 * share)
            streams.append(STLStream(packet=STLPktBuilder(pkt=pkt, vm=vm), mode=mode))

        for size, w in sizes:
            sh = legit * w / wsum
            for v6, fam in ((False, 1.0 - s.v6_share), (True, s.v6_share)):
                if fam <= 0:
                    continue
                part = sh * fam
                fp = s.flow_packets
                if fp == 0:
                    add(_pkt(s, v6, 'A', size), _vm_established(s, v6, s.flows), part)
                elif fp == 1:
                    # every packet a new connection: random tuples over the
                    # whole client space (2^16 hosts x 64512 ports)
                    add(_pkt(s, v6, 'S', size), _vm_established(s, v6, 65536 * 64512, True), part)
                else:
                    add(_pkt(s, v6, 'S', size), _vm_established(s, v6, s.flows), part / fp)
                    add(_pkt(s, v6, 'A', size), _vm_established(s, v6, s.flows), part * (fp - 2) / fp)
                    add(_pkt(s, v6, 'FA', size), _vm_established(s, v6, s.flows), part / fp)
        if s.flood_share > 0:
            add(_pkt(s, False, 'S', sizes[0][0], flood=True), _vm_flood(s), s.flood_share)
        if a.lat_pps > 0:
            streams.append(_latency_stream(s, sizes[0][0], a.lat_pps, a.lat_pg_id))
        return streams


def register():
    return FlowgateScenario()
