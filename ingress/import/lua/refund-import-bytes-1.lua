--[[
  Gives back bytes an account was charged against its import byte budget (rate-limiter-flexible's
  counter for the window) beyond what its request's body held. Never below zero, and never into a
  window that has ended: a counter that is gone is left so, where rate-limiter-flexible's reward
  would create it negative, a credit for the next window.

  Input:
    KEYS[1] the account's counter (string: an integer, expiring with its window)
    ARGV[1] the bytes to give back (a positive integer)
  Output:
    the counter after it, or -1 when it is gone (its window ended): nothing was given back
]]
local counted = tonumber(redis.call('GET', KEYS[1]))
if counted == nil then
  return -1
end
return redis.call('DECRBY', KEYS[1], math.min(tonumber(ARGV[1]), math.max(counted, 0)))
