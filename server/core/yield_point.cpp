#include "server/core/yield_point.hpp"

#include <sched.h>

#include <chrono>

namespace newsdesk::server {

namespace {
using clock_type = std::chrono::steady_clock;

// How often a background thread may yield: a waiting thread gets the core at the end of the
// step under way (yield_point() runs between steps), and the checks cost nothing measurable (a
// clock read through the vDSO; a yield with nobody waiting takes about a microsecond).
constexpr auto yield_every = std::chrono::microseconds(100);

thread_local bool background = false;
thread_local clock_type::time_point last_yield{};
thread_local unsigned long yields = 0;
} // namespace

void mark_background_thread() {
  background = true;
  last_yield = clock_type::now();
}

void yield_point() {
  if (!background)
    return;
  const auto now = clock_type::now();
  if (now - last_yield < yield_every)
    return;
  ::sched_yield();
  ++yields;
  last_yield = clock_type::now();
}

unsigned long yields_on_this_thread() {
  return yields;
}

} // namespace newsdesk::server
