-- wrk script: durable single-attribute writes, every request a real change (values never repeat).
--   BENCH_TARGET=bindery : PUT /objects/Employee/<1..32>/salary with a JSON integer body
--   BENCH_TARGET=etcd    : PUT /v2/keys/bench/k<1..32> with a form body value=<n>
--   BENCH_LIMIT=N        : each wrk thread stops after N requests (default: no limit)
local target = os.getenv("BENCH_TARGET") or "bindery"
local limit = tonumber(os.getenv("BENCH_LIMIT") or "")
local threads = 0

function setup(thread)
    threads = threads + 1
    thread:set("offset", threads * 100000000)
end

function init(args)
    counter = 0
end

function request()
    counter = counter + 1
    local value = offset + counter
    local key = counter % 32 + 1
    if target == "etcd" then
        return wrk.format("PUT", "/v2/keys/bench/k" .. key,
            {["Content-Type"] = "application/x-www-form-urlencoded"}, "value=" .. value)
    end
    return wrk.format("PUT", "/objects/Employee/" .. key .. "/salary",
        {["Content-Type"] = "application/json"}, tostring(value))
end

-- Only defined with a limit: a `response` function makes wrk copy every response's headers and body into Lua,
-- which costs the client CPU that it shares with the server measured.
if limit then
    function response(status, headers, body)
        if counter >= limit then
            wrk.thread:stop()
        end
    end
end

function done(summary, latency, requests)
    local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write
        + summary.errors.timeout
    io.write(string.format("non-2xx or socket errors: %d\n", errors))
end
