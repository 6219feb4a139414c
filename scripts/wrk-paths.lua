-- wrk script of the fleet benchmarks: requests the paths of the file given after `--`, in order, round and round.
local paths = {}
local n = 0
init = function(args)
    for line in io.lines(args[1]) do paths[#paths + 1] = line end
end
request = function()
    n = n + 1
    return wrk.format("GET", paths[(n - 1) % #paths + 1])
end
