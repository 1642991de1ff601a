-- SPDX-License-Identifier: BSD-3-Clause
-- run_scenario.lua: runs one flowgate benchmark scenario headless from
-- Pktgen-DPDK (23.03): configure, start, wait, stop, print totals, quit.
--
--   FG_SCENARIO=bench/scenarios/steady-1m.scn FG_MODE=pcap \
--   pktgen -l 0-1 --file-prefix pg --single-file-segments \
--     --no-pci --vdev net_memif0,role=client,socket=/tmp/fg-memif.sock -- \
--     -P -m 1.0 -s 0:/tmp/flowgate-bench/steady-1m.pcap \
--     -f pktgen-scripts/run_scenario.lua
--
-- Environment:
--   FG_SCENARIO  scenario file (required)
--   FG_MODE      pcap (default): replay the pcap given with -s P:FILE, made by
--                  fg-pcapgen from the same scenario (exact scenario: flags,
--                  IPv6 share, spoofed share, IMIX, any number of flows);
--                range: Pktgen's range mode from the scenario's fields
--                  (steady IPv4 single-size scenarios only; distinct tuples
--                  are bounded by Pktgen's mbuf pool, see README.md)
--   FG_PORT      Pktgen port that sends (default 0)
--   FG_RX_PORT   Pktgen port that counts what the DUT forwards (default
--                  FG_PORT: one-armed; a two-port testbed gives the other)
--   FG_DURATION  seconds of measurement (default: scenario duration_s)
--   FG_RATE      % of the port's line rate (default: scenario rate_pct)
--   FG_WARMUP    seconds sent before measuring (default 1)
--   FG_RESULT    also write the JSON result to this file
-- Prints one line "FG_RESULT {json}" with tx/rx packets and Mpps.

local function script_dir()
  local src = debug.getinfo(1, "S").source
  return src:sub(1, 1) == "@" and src:sub(2):match("^(.*)/[^/]*$") or "."
end
package.path = script_dir() .. "/?.lua;" .. package.path
local S = require("fg_scenario")

local function fail(msg)
  print("FG_RESULT " .. string.format('{"status":"failed","reason":"%s"}', msg:gsub('"', "'")))
  io.stderr:write("run_scenario: " .. msg .. "\n")
  pktgen.quit()
  error(msg)
end

local path = os.getenv("FG_SCENARIO") or fail("FG_SCENARIO not set")
local s, err = S.load(path)
if not s then fail(err) end
local mode = os.getenv("FG_MODE") or "pcap"
local port = os.getenv("FG_PORT") or "0"
local pidx = tonumber(port) or fail("FG_PORT must be a single port number")
local rxport = os.getenv("FG_RX_PORT") or port
local ridx = tonumber(rxport) or fail("FG_RX_PORT must be a single port number")
local secs = tonumber(os.getenv("FG_DURATION") or "") or S.num(s.duration_s)
local rate = tonumber(os.getenv("FG_RATE") or "") or S.num(s.rate_pct)
local warm = tonumber(os.getenv("FG_WARMUP") or "") or 1

pktgen.screen("off")
pktgen.stop(port)
pktgen.set_mac(port, "dst", s.dst_mac)
pktgen.set_mac(port, "src", s.src_mac)

local plan
if mode == "pcap" then
  -- the pcap carries the scenario's exact packets; Pktgen replays it in a loop
  pktgen.pcap(port, "on")
elseif mode == "range" then
  local why = S.range_unsupported(s)
  if why then fail(s.name .. ": range mode: " .. why .. " (use FG_MODE=pcap)") end
  plan = S.range_plan(s)
  local size = math.floor(S.num(s.pkt_size))
  pktgen.range.dst_mac(port, "start", s.dst_mac)
  pktgen.range.src_mac(port, "start", s.src_mac)
  pktgen.range.dst_ip(port, "start", s.vip4)
  pktgen.range.dst_ip(port, "inc", "0.0.0.0")
  pktgen.range.dst_ip(port, "min", s.vip4)
  pktgen.range.dst_ip(port, "max", s.vip4)
  pktgen.range.src_ip(port, "start", plan.src_ip_min)
  pktgen.range.src_ip(port, "inc", "0.0.0.1")
  pktgen.range.src_ip(port, "min", plan.src_ip_min)
  pktgen.range.src_ip(port, "max", plan.src_ip_max)
  pktgen.range.ip_proto(port, s.proto)
  pktgen.range.dst_port(port, "start", math.floor(S.num(s.vport)))
  pktgen.range.dst_port(port, "inc", 0)
  pktgen.range.dst_port(port, "min", math.floor(S.num(s.vport)))
  pktgen.range.dst_port(port, "max", math.floor(S.num(s.vport)))
  pktgen.range.src_port(port, "start", plan.sport_min)
  pktgen.range.src_port(port, "inc", plan.nport > 1 and 1 or 0)
  pktgen.range.src_port(port, "min", plan.sport_min)
  pktgen.range.src_port(port, "max", plan.sport_max)
  pktgen.range.pkt_size(port, "start", size)
  pktgen.range.pkt_size(port, "inc", 0)
  pktgen.range.pkt_size(port, "min", size)
  pktgen.range.pkt_size(port, "max", size)
  pktgen.set_range(port, "on")
else
  fail("FG_MODE must be pcap or range")
end
pktgen.set(port, "rate", rate)

pktgen.clr()
pktgen.start(port)
pktgen.delay(math.floor(warm * 1000))
local a = pktgen.portStats(port, "port")[pidx]
local ra = pktgen.portStats(rxport, "port")[ridx]
pktgen.delay(math.floor(secs * 1000))
local b = pktgen.portStats(port, "port")[pidx]
local rb = pktgen.portStats(rxport, "port")[ridx]
pktgen.stop(port)
pktgen.delay(300)
local c = pktgen.portStats(port, "port")[pidx]
local rc = pktgen.portStats(rxport, "port")[ridx]

local tx, rx = b.opackets - a.opackets, rb.ipackets - ra.ipackets
local res = string.format(
  '{"bench":"pktgen","scenario":"%s","gen_mode":"%s","port":%d,"rx_port":%d,"seconds":%.1f,' ..
  '"rate_pct":%.1f,"tx_pkts":%d,"rx_pkts":%d,"tx_mpps":%.3f,"rx_mpps":%.3f,' ..
  '"tx_total":%d,"rx_total":%d,"rx_nombuf":%d,"ierrors":%d,"oerrors":%d,"imissed":%d%s}',
  s.name, mode, pidx, ridx, secs, rate, tx, rx, tx / secs / 1e6, rx / secs / 1e6,
  c.opackets, rc.ipackets, rc.rx_nombuf, rc.ierrors, c.oerrors, rc.imissed,
  plan and string.format(',"range_distinct_tuples":%d', plan.distinct) or "")
print("FG_RESULT " .. res)
local out = os.getenv("FG_RESULT")
if out then
  local f = io.open(out, "w")
  if f then f:write(res .. "\n"); f:close() end
end
pktgen.quit()
