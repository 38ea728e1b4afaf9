// newsdesk-broker: the pub/sub broker as a process of its own.
//
//   newsdesk-broker [--listen ADDR:PORT] [--config FILE] [--threads N]
//
// Prints "listening on ADDR:PORT" (flushed) once it accepts connections, so a caller can
// start it on port 0. SIGINT/SIGTERM run the graceful shutdown; exits 0 after it, 1 on a
// usage or configuration error, 2 when it cannot listen. `newsdesk broker ...` is the same.
#include "broker/standalone.hpp"

int main(int argc, char** argv) {
  return newsdesk::broker::run_standalone({argv + 1, argv + argc}, argv[0]);
}
