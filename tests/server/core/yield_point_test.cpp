#include "server/core/yield_point.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using namespace newsdesk::server;
using clock_type = std::chrono::steady_clock;

TEST_CASE("yield_point yields on a background thread, at most every 100 us, and elsewhere never") {
  // A background thread calling it in a busy loop until it has yielded 20 times (each yield may
  // hand the core to another task until a timer tick on a busy machine: counted, not timed).
  unsigned long yields = 0;
  clock_type::duration took{};
  std::thread([&] {
    mark_background_thread();
    const auto started = clock_type::now();
    while (yields_on_this_thread() < 20 && clock_type::now() - started < std::chrono::seconds(10))
      yield_point();
    took = clock_type::now() - started;
    yields = yields_on_this_thread();
  }).join();
  CHECK(yields == 20);
  CHECK(took >= 20 * std::chrono::microseconds(100)); // never two within 100 us

  // Any other thread: never, however long it calls.
  std::thread([&] {
    const auto end = clock_type::now() + std::chrono::milliseconds(20);
    while (clock_type::now() < end)
      yield_point();
    yields = yields_on_this_thread();
  }).join();
  CHECK(yields == 0);
  CHECK(yields_on_this_thread() == 0); // the test's own thread was never marked
}
