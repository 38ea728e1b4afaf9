// Hears every change committed to a shared store, on every instance.
//
// One dedicated PostgreSQL connection LISTENs on cluster_store::notify_channel and is driven by
// Asio on libpq's socket, non-blocking: no thread waits on it. A notification is only a hint
// (it carries the event's seq, never rows): on each one, and on a slow poll that covers a
// notification that never came, the listener reads the store's events after the last one it
// handed on and hands them on, in seq order, one batch at a time. After any (re)connect it
// LISTENs first, then catches up, then goes live, so nothing committed while it was away is
// missed. A lost connection is retried with backoff from 100 ms to 5 s.
//
// The connection must reach PostgreSQL directly or through a session-pooling proxy: a
// transaction-pooling proxy (PgBouncer's transaction mode) drops LISTEN between transactions.
//
// Threads: the handler runs on the worker pool, never two at once; a handler that throws
// leaves the events to be read again at the next hint or poll.
#pragma once

#include "server/news/headline_store.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace boost::asio {
class io_context;
class thread_pool;
} // namespace boost::asio

namespace newsdesk::server {

class change_listener {
 public:
  using handler = std::function<void(const std::vector<store_event>&)>;

  // `store` must outlive the listener; `on_events` gets each batch of new events.
  change_listener(boost::asio::io_context& ioc, boost::asio::thread_pool& pool,
                  cluster_store& store, handler on_events);
  ~change_listener();
  change_listener(const change_listener&) = delete;
  change_listener& operator=(const change_listener&) = delete;

  // Connects and hands on every event with seq > `after_seq` from then on.
  void start(std::int64_t after_seq);
  // Closes the connection and stops the timers; a batch being handled finishes.
  void stop();

  // True while the LISTEN connection is up (readiness reports it).
  bool connected() const;
  // The newest seq handed on.
  std::int64_t last_seq() const;

  // The slow poll behind the notifications.
  static constexpr std::chrono::seconds poll_period{5};
  // Events read per query while catching up.
  static constexpr std::size_t batch = 1000;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

} // namespace newsdesk::server
