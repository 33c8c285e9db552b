-- wrk script for scripts/bench case 2: every request asks for one random 4 KiB range of a file.
--
--   wrk -t2 -c64 -d20s -s bench/random-range.lua http://127.0.0.1:PORT/files/big.bin -- SIZE [SEED]
--
-- SIZE is the file's length in bytes (default 1 GiB). Offsets are uniform over [0, SIZE - 4096], not aligned,
-- so the server cannot lean on page-aligned reads. Each wrk thread seeds its own generator, so runs are
-- repeatable for a given SEED. done() prints one JSON line (prefixed "BENCH-JSON ") that the driver parses.

local size = 1073741824
local span = 4096
local seed = 1
local counter = 0

function init(args)
    if args[1] then size = tonumber(args[1]) end
    if args[2] then seed = tonumber(args[2]) end
    counter = counter + 1
end

local thread_index = 0
function setup(thread)
    thread_index = thread_index + 1
    thread:set("thread_seed", seed * 1000 + thread_index)
end

local initialized = false
function request()
    if not initialized then
        math.randomseed(thread_seed or seed)
        initialized = true
    end
    local first = math.random(0, size - span)
    local last = first + span - 1
    return wrk.format("GET", nil, { ["Range"] = "bytes=" .. first .. "-" .. last })
end

function done(summary, latency, requests)
    local seconds = summary.duration / 1e6
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write
        + summary.errors.status + summary.errors.timeout
    io.write(string.format(
        'BENCH-JSON {"requests":%d,"seconds":%.3f,"rps":%.1f,"bytes":%d,"errors":%d,"statusErrors":%d,'
            .. '"timeouts":%d,"p50us":%d,"p90us":%d,"p99us":%d,"maxus":%d,"meanus":%.1f}\n',
        summary.requests, seconds, summary.requests / seconds, summary.bytes, errors, summary.errors.status,
        summary.errors.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
        latency.max, latency.mean))
end
