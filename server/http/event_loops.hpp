// Threads that each run an event loop (an io_context) of their own, for connections that live
// on one thread from accept to close, as nginx's workers serve theirs: a connection needs no
// strand, and no thread wakes another to run its handlers. An http_server given event loops
// hands its accepted connections to them in turn.
//
// Threads: next() and stop() from any thread; the loops run until stop(). What is still queued
// on a loop then (connections past the shutdown's deadline, answers from workers for them) is
// destroyed with this object, so it must outlive whatever may still post to a loop (in newsdesk:
// declared before the routes, the news service and the worker pools' users).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace newsdesk::server {

class event_loops {
 public:
  explicit event_loops(unsigned count);
  ~event_loops();
  event_loops(const event_loops&) = delete;
  event_loops& operator=(const event_loops&) = delete;

  // The loop for the next connection (round robin).
  boost::asio::any_io_executor next();
  // Stops every loop and returns once their threads have ended. Idempotent.
  void stop();

 private:
  struct loop {
    boost::asio::io_context ioc{1}; // one thread: Asio skips the wake-ups between threads
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
    std::thread thread;
  };
  std::vector<std::unique_ptr<loop>> loops_;
  std::atomic<std::size_t> next_{0};
};

} // namespace newsdesk::server
