// The tests' one way to wait for something another process or thread does: poll a condition
// until it holds or a deadline passes. A test asserts on the result, so a slow machine makes a
// test wait longer, never pass without checking.
#pragma once

#include <chrono>
#include <thread>

namespace newsdesk::testing {

// Whether `condition` holds within `timeout`, asked every 10 ms (and once more at the deadline).
template <class Condition>
[[nodiscard]] bool eventually(Condition condition,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

} // namespace newsdesk::testing
