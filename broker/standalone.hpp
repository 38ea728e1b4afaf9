// Runs the broker as a process of its own: `newsdesk-broker ...` and `newsdesk broker ...`.
#pragma once

#include <string>
#include <vector>

namespace newsdesk::broker {

// Parses `args` (--listen ADDR:PORT, --config FILE, --threads N, --help), listens, prints
// "listening on ADDR:PORT" (flushed) and serves until SIGINT/SIGTERM, then shuts down
// gracefully. Returns the exit code: 0 after shutdown, 1 on a usage or configuration error,
// 2 when it cannot listen. `program` names the command in messages.
int run_standalone(const std::vector<std::string>& args, const std::string& program);

} // namespace newsdesk::broker
