#include "server/core/yield_point.hpp"

#include <sched.h>

#include <chrono>

namespace newsdesk::server {

namespace {
using clock_type = std::chrono::steady_clock;

// Often enough that a waiting request loses at most this much, rarely enough that the checks
// cost nothing measurable (a clock read through the vDSO; a yield with nobody waiting ~1 us).
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
