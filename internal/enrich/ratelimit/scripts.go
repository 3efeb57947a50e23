package ratelimit

import "github.com/redis/go-redis/v9"

// The shared state of one vendor key is one Redis hash, "<Options.Key>:state". Every script reads the clock
// with TIME, so all processes share the Redis server's clock and never compare their own clocks
// with each other; times are integer microseconds since the Unix epoch, which a Lua double holds
// exactly. Rates are requests per second. Scripts that call TIME and then write need effects
// replication, the default since Redis 5.
//
// Fields of the hash:
//
//	tat      GCRA theoretical arrival time (µs)
//	rate     current adaptive rate (req/s); absent means the configured rate
//	until    end of the shared cool-down (µs); absent or past means none
//	strikes  consecutive counted 429s; absent means 0
//	hold     429s before this time (µs) belong to the episode already counted
//	grow     successes before this time (µs), the end of the cool-down, are stale; the
//	         rate increase is credited from it

// luaPrelude is shared by the scripts: the clock and the clamped current rate.
const luaPrelude = `
local key = KEYS[1]
local conf = tonumber(ARGV[1])
local minr = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function clamp(r)
  return math.min(math.max(r or conf, minr), conf)
end
local function us(x)
  return string.format('%.0f', x)
end
local function num(x)
  return string.format('%.17g', x)
end
`

// takeScript is the hot path of Wait: one round trip that honours the cool-down and takes cost
// slots from the GCRA at the current rate. A slot up to horizon µs ahead is reserved at once and
// the caller sleeps until it: waiters queue on the shared timeline instead of all asking for the
// next free slot, so no slot is lost between two asks and no herd wakes at once.
//
// ARGV: conf, minr, ttl (ms), burst, cost, horizon (µs).
// Reply: {granted 0|1, wait µs (granted: sleep this long, then send; else: ask again after), rate, strikes, cooling 0|1}.
var takeScript = redis.NewScript(luaPrelude + `
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local horizon = tonumber(ARGV[6])
local s = redis.call('HMGET', key, 'tat', 'rate', 'until', 'strikes')
local rate = clamp(tonumber(s[2]))
local strikes = tonumber(s[4]) or 0
local untl = tonumber(s[3]) or 0
if untl > now then
  return {0, untl - now, num(rate), strikes, 1}
end
local step = 1000000 / rate
local tat = math.max(tonumber(s[1]) or now, now)
local newtat = tat + cost * step
local allow = newtat - burst * step
if allow - now > horizon then
  return {0, math.ceil(allow - now - horizon), num(rate), strikes, 0}
end
redis.call('HSET', key, 'tat', us(newtat))
redis.call('PEXPIRE', key, ttl)
return {1, math.max(0, math.ceil(allow - now)), num(rate), strikes, 0}
`)

// throttleScript records a 429. The first 429 after the hold time is counted: the strike counter
// goes up, the rate is cut, the cool-down is set (Retry-After, else full-jitter backoff on the
// strike count, the formula of Backoff) and the GCRA restarts empty at the end of the cool-down.
// Later 429s before the hold time come from requests already in flight: they only extend the
// cool-down when the vendor sent a later Retry-After.
//
// ARGV: conf, minr, ttl (ms), burst, retry-after µs (0: none), base µs, max µs, rnd in [0,1), decrease factor.
// Reply: {counted 0|1, cool-down left µs, rate, strikes}.
var throttleScript = redis.NewScript(luaPrelude + `
local burst = tonumber(ARGV[4])
local retry = tonumber(ARGV[5])
local base = tonumber(ARGV[6])
local cap = tonumber(ARGV[7])
local rnd = tonumber(ARGV[8])
local factor = tonumber(ARGV[9])
local s = redis.call('HMGET', key, 'tat', 'rate', 'until', 'strikes', 'hold')
local rate = clamp(tonumber(s[2]))
local untl = tonumber(s[3]) or 0
local strikes = tonumber(s[4]) or 0
local hold = tonumber(s[5]) or 0
local counted = 0
if now >= hold then
  counted = 1
  strikes = strikes + 1
  if retry <= 0 then
    retry = rnd * math.min(cap, base * 2 ^ (strikes - 1))
  end
  rate = math.max(minr, rate * factor)
  redis.call('HSET', key, 'rate', num(rate), 'strikes', strikes, 'hold', us(now + math.max(retry, base)))
end
if counted == 1 or (retry > 0 and now + retry > untl) then
  untl = math.max(untl, now + retry)
  local tat = math.max(tonumber(s[1]) or 0, untl + (burst - 1) * 1000000 / rate)
  redis.call('HSET', key, 'until', us(untl), 'tat', us(tat), 'grow', us(untl))
end
redis.call('PEXPIRE', key, ttl + math.ceil(math.max(0, untl - now) / 1000))
return {counted, math.max(0, untl - now), num(rate), strikes}
`)

// succeedScript records successes: it resets the strike counter and raises the rate by step×conf
// per second elapsed since grow (at most maxcredit of it per call), never above conf. Successes
// before grow (the end of the last counted cool-down) are replies to requests sent before the
// 429 and change nothing.
//
// ARGV: conf, minr, ttl (ms), step (fraction of conf per second), maxcredit µs.
// Reply: {rate, strikes}.
var succeedScript = redis.NewScript(luaPrelude + `
local step = tonumber(ARGV[4])
local maxcredit = tonumber(ARGV[5])
local s = redis.call('HMGET', key, 'rate', 'grow', 'strikes')
local rate = clamp(tonumber(s[1]))
local grow = tonumber(s[2]) or 0
if now < grow then
  return {num(rate), tonumber(s[3]) or 0}
end
if s[3] then
  redis.call('HDEL', key, 'strikes')
end
if rate < conf then
  rate = math.min(conf, rate + step * conf * math.min(now - grow, maxcredit) / 1000000)
  if rate < conf then
    redis.call('HSET', key, 'rate', num(rate), 'grow', us(now))
  else
    redis.call('HDEL', key, 'rate', 'grow')
  end
  redis.call('PEXPIRE', key, ttl)
end
return {num(rate), 0}
`)
