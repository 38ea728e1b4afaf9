// Time for the news service, as a seam: wall-clock and steady "now", and timers ("call me after
// D"). In production asio_clock reads the system clocks and runs timers on the io_context; in
// tests manual_clock stands still until the test advances it, then runs the timers that came due,
// in order of their due time, on the test's thread. So a refresh policy (intervals, retry
// back-off, rate limits) is tested without sleeping and without depending on the machine's load.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
} // namespace boost::asio

namespace newsdesk::server {

class news_clock {
 public:
  // One timer: at most one wait pending at a time.
  class timer {
   public:
    virtual ~timer() = default; // cancels the pending wait
    // Calls `fn` once, `delay` from now, replacing a wait that has not come due. Where `fn` runs
    // depends on the clock (an io_context thread; the thread calling manual_clock::advance()).
    virtual void wait(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
    // The pending wait is dropped: `fn` does not run, unless it came due and is already on its
    // way (as with an asio timer whose handler is queued).
    virtual void cancel() = 0;
  };

  virtual ~news_clock() = default;
  virtual std::chrono::system_clock::time_point system_now() const = 0; // for timestamps
  virtual std::chrono::steady_clock::time_point steady_now() const = 0; // for durations
  virtual std::unique_ptr<timer> make_timer() = 0;
};

// The real clocks; timers are asio steady_timers on `ioc`, which must outlive the clock and every
// timer made by it. Thread-safe as asio timers are: each timer from one thread at a time.
class asio_clock final : public news_clock {
 public:
  explicit asio_clock(boost::asio::io_context& ioc)
      : ioc_(ioc) {}
  std::chrono::system_clock::time_point system_now() const override;
  std::chrono::steady_clock::time_point steady_now() const override;
  std::unique_ptr<timer> make_timer() override;

 private:
  boost::asio::io_context& ioc_;
};

// A clock for tests that moves only when told. All members may be called from any thread;
// timer callbacks run inside advance(), outside the clock's lock (so they may set timers).
// Timers must not outlive the clock.
class manual_clock final : public news_clock {
 public:
  // Starts at `start` on the wall clock (a fixed date by default, so tests do not depend on
  // today; far from 0, which callers may use as "never").
  explicit manual_clock(std::chrono::system_clock::time_point start =
                            std::chrono::system_clock::time_point(std::chrono::hours(480'000)));
  ~manual_clock() override;

  std::chrono::system_clock::time_point system_now() const override;
  std::chrono::steady_clock::time_point steady_now() const override;
  std::unique_ptr<timer> make_timer() override;

  // Moves time forward by `by`, running every wait that comes due on the way, earliest first
  // (ties in the order they were set), each with "now" at its due time. Waits set by those
  // callbacks run too if they come due within `by`.
  void advance(std::chrono::milliseconds by);
  // Waits pending now, as delays from now, earliest first.
  std::vector<std::chrono::milliseconds> pending() const;
  // Time passed since the clock was made.
  std::chrono::milliseconds elapsed() const;

 private:
  class manual_timer;
  struct entry {
    std::uint64_t timer_id;
    std::function<void()> fn;
  };
  void set(std::uint64_t timer_id, std::chrono::milliseconds delay, std::function<void()> fn);
  void drop(std::uint64_t timer_id);

  mutable std::mutex mutex_;
  std::chrono::system_clock::time_point system_start_;
  std::chrono::milliseconds now_{0};
  std::uint64_t next_timer_id_ = 1;
  std::uint64_t next_seq_ = 0;
  // (due, order set) -> wait: earliest first, ties by the order they were set.
  std::map<std::pair<std::chrono::milliseconds, std::uint64_t>, entry> waits_;
};

} // namespace newsdesk::server
