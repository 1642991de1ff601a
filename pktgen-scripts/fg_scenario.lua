-- SPDX-License-Identifier: BSD-3-Clause
-- fg_scenario.lua: reads flowgate's benchmark scenarios
-- (bench/scenarios/*.scn, flat "key = value", '#' comments; format in
-- bench/scenarios/README.md) for the Pktgen-DPDK scripts.  Plain Lua 5.3,
-- no Pktgen calls, so it can be tested with the stand-alone lua5.3.

local M = {}

M.defaults = {
  name = "unnamed", description = "", mode = "dsr-ipip",
  vip4 = "10.100.0.1", vip6 = "fd00:100::1", vport = "80", proto = "tcp",
  pkt_size = "64", imix = "", flows = "1000", flow_packets = "0",
  syn_flood_share = "0", ipv6_share = "0", duration_s = "10", rate_pct = "100",
  client_net4 = "172.16.0.0/12", client_net6 = "fd00:0:0:1::/64",
  spoof_net4 = "198.18.0.0/15", spoof_net6 = "2001:2::/48",
  src_mac = "02:00:00:00:00:01", dst_mac = "02:00:00:00:00:02",
  seed = "1", pcap_packets = "0",
}

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Returns a table of strings (every key present, defaults filled in) or
-- nil, "file:line: reason".
function M.load(path)
  local f, err = io.open(path, "r")
  if not f then return nil, err end
  local s = {}
  for k, v in pairs(M.defaults) do s[k] = v end
  local n = 0
  for line in f:lines() do
    n = n + 1
    local l = trim(line)
    if l ~= "" and l:sub(1, 1) ~= "#" then
      local k, v = l:match("^([%w_]+)%s*=%s*(.-)$")
      if not k then f:close(); return nil, string.format("%s:%d: expected 'key = value'", path, n) end
      if v:sub(1, 1) == '"' then
        local q = v:match('^"(.*)"$')
        if not q then f:close(); return nil, string.format("%s:%d: unterminated quote", path, n) end
        v = q
      else
        v = trim((v:gsub("#.*$", "")))
      end
      if M.defaults[k] == nil then
        f:close(); return nil, string.format("%s:%d: unknown key '%s'", path, n, k)
      end
      s[k] = v
    end
  end
  f:close()
  return s
end

-- Numeric value with the K/M suffixes and '%' shares the C parser accepts.
function M.num(v)
  local x, suf = tostring(v):match("^([%d%.]+)([kKmM%%]?)$")
  x = tonumber(x)
  if not x then return nil end
  if suf == "k" or suf == "K" then x = x * 1000
  elseif suf == "m" or suf == "M" then x = x * 1000000
  elseif suf == "%" then x = x / 100 end
  return x
end

-- IPv4 dotted quad <-> integer
function M.ip4(s)
  local a, b, c, d = s:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if not a then return nil end
  return ((tonumber(a) * 256 + tonumber(b)) * 256 + tonumber(c)) * 256 + tonumber(d)
end

function M.ip4str(n)
  return string.format("%d.%d.%d.%d", (n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255)
end

-- What Pktgen's range mode can express of a scenario: steady IPv4 flows of
-- one size (no SYN/FIN sequences, no spoofed share, no IPv6 mix, no IMIX).
-- Returns nil (ok) or the reason to use pcap replay instead.
function M.range_unsupported(s)
  if s.pkt_size == "imix" then return "IMIX needs pcap replay" end
  if M.num(s.flow_packets) ~= 0 then return "SYN/FIN connection sequences need pcap replay" end
  if M.num(s.syn_flood_share) ~= 0 then return "a spoofed-SYN share needs pcap replay" end
  if M.num(s.ipv6_share) ~= 0 then return "an IPv4/IPv6 mix needs pcap replay" end
  return nil
end

-- Range plan: the same client addresses and ports fg_scen.h uses
-- (client_net + 1 + c % 65536, port 1024 + c / 65536).  Pktgen increments
-- every range field on every packet, so the number of distinct tuples is
-- lcm(#addresses, #ports): with more than 65536 flows the address range is
-- cut to 65521 (prime) so that lcm = 65521 x #ports ~ flows.
function M.range_plan(s)
  local flows = math.floor(M.num(s.flows))
  local base = M.ip4(s.client_net4:match("^([^/]+)"))
  local nip, nport = flows, 1
  if flows > 65536 then
    nip = 65521
    nport = (flows + nip - 1) // nip
  end
  return {
    src_ip_min = M.ip4str(base + 1), src_ip_max = M.ip4str(base + nip),
    sport_min = 1024, sport_max = 1024 + nport - 1,
    distinct = nip * nport, nip = nip, nport = nport,
  }
end

return M
