// What the C++ benchmarks share: timing a piece of work as the median of N runs, and reading a
// saved page. Benchmarks report numbers; they are not tests.
#pragma once

#include "server/core/read_file.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace newsdesk::bench {

// The median wall time of `runs` calls of `work`, in milliseconds: robust to the odd run that
// a shared machine slows down.
template <typename F> double median_ms(int runs, F&& work) {
  using clock_type = std::chrono::steady_clock;
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    auto start = clock_type::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The whole file, or nullopt when it cannot be opened.
inline std::optional<std::string> read_file(const std::string& path) {
  return server::read_whole_file(path);
}

} // namespace newsdesk::bench
