-- wrk script for scripts/bench-ab.sh: every request is a distinct URL (its own cb:), and each wrk
-- thread walks its own share of the photographs (thread k takes photos k, k+T, k+2T, ...), so two
-- requests in flight never name the same photograph and no server can share one decode between them.
local photos = {"autumn", "bythewater", "coldripple", "colorfulcups", "darkesthour", "eveningglow",
                "fallenleaf", "grey", "kite", "onestandsout", "path", "summer_1am"}
local threads = 0
function setup(thread) threads = threads + 1; thread:set("id", threads) end
local counter, tag, mine = 0, 0, {}
-- SOURCE_BASE (say http://127.0.0.1:8081) fetches the photographs from an origin instead of local files.
local source = os.getenv("SOURCE_BASE") or ""
if source == "" then source = "local://" end
function init(args)
  math.randomseed(os.time() * 1000 + id); tag = math.random(1, 1000000000)
  local count = tonumber(os.getenv("WRK_THREADS"))
  for i = 1, #photos do if (i - 1) % count == id - 1 then mine[#mine + 1] = photos[i] end end
end
request = function()
  counter = counter + 1
  local photo = mine[(counter % #mine) + 1]
  return wrk.format("GET", "/insecure/rs:fit:512:512/cb:" .. tag .. "x" .. counter .. "/plain/" .. source .. "/photo-" ..
    photo .. "." .. os.getenv("SRC_EXT") .. "@" .. os.getenv("OUT_EXT"))
end
