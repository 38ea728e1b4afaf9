#include "server/core/yield_point.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace newsdesk::server;
using clock_type = std::chrono::steady_clock;

namespace {
// Calls yield_point() in a busy loop for `span`, on a thread of its own (marked background when
// asked); returns how many times it yielded.
unsigned long yields_while_busy(bool background, std::chrono::milliseconds span) {
  unsigned long yields = 0;
  std::thread([&] {
    if (background)
      mark_background_thread();
    const auto end = clock_type::now() + span;
    while (clock_type::now() < end)
      yield_point();
    yields = yields_on_this_thread();
  }).join();
  return yields;
}
} // namespace

TEST_CASE("yield_point yields on a background thread at most every 100 us, elsewhere never") {
  const auto span = std::chrono::milliseconds(50);
  const auto background = yields_while_busy(true, span);
  CHECK(background >= 10); // a busy machine may take the core away, but not for most of 50 ms
  CHECK(background <= 501); // 50 ms / 100 us, and the first
  CHECK(yields_while_busy(false, span) == 0);
  CHECK(yields_on_this_thread() == 0); // the test's own thread was never marked
}
