// Hears every change committed to a shared store, on every instance, and watches whether the
// database answers.
//
// One dedicated PostgreSQL connection LISTENs on cluster_store::notify_channel and is driven by
// Asio on libpq's socket, non-blocking from its start (PQconnectStartParams) on: no thread ever
// waits on it. A notification is only a hint (it carries the event's seq, never rows): on each
// one, and on a slow poll that covers a notification that never came, the listener reads the
// store's events after the last one it handed on and hands them on, in seq order, one batch at a
// time. After any (re)connect it LISTENs first, then catches up, then goes live, so nothing
// committed while it was away is missed. A lost connection is retried with backoff from 100 ms to
// 2 s.
//
// The store's health: every probe_period the connection asks the server a trivial query. An
// answer within the store's call timeout (cluster_store::call_timeout) says the database answers;
// none (a frozen server, a partition), or a connection that cannot be opened, says it does not:
// the connection is dropped and `on_status` told, once per change. This is the store check
// readiness, the page's notice and /metrics read: it holds no worker thread and no pooled
// connection, so it never waits behind (or holds up) claims and writes. A lost connection that
// reconnects at once is not an outage; a refused login is told as such.
//
// The connection must reach PostgreSQL directly or through a session-pooling proxy: a
// transaction-pooling proxy (PgBouncer's transaction mode) drops LISTEN between transactions.
//
// Threads: `on_events` runs on the worker pool, never two at once; a handler that throws leaves
// the events to be read again at the next hint or poll. `on_status` runs on the io_context (it
// must not block).
#pragma once

#include "server/news/headline_store.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
class thread_pool;
} // namespace boost::asio

namespace newsdesk::server {

class change_listener {
 public:
  using handler = std::function<void(const std::vector<store_event>&)>;
  // "" when the database answers again; else why not, and (a refused login) the server's words.
  using status_handler =
      std::function<void(const std::string& error, const std::string& login_refusal)>;

  // `store` must outlive the listener; `on_events` gets each batch of new events.
  change_listener(boost::asio::io_context& ioc, boost::asio::thread_pool& pool,
                  cluster_store& store, handler on_events, status_handler on_status = {});
  ~change_listener();
  change_listener(const change_listener&) = delete;
  change_listener& operator=(const change_listener&) = delete;

  // Connects and hands on every event with seq > `after_seq` from then on.
  void start(std::int64_t after_seq);
  // Closes the connection and stops the timers; a batch being handled finishes.
  void stop();

  // True while the LISTEN connection is up and its last probe was answered in time.
  bool connected() const;
  // The newest seq handed on.
  std::int64_t last_seq() const;

  // The slow poll behind the notifications.
  static constexpr std::chrono::seconds poll_period{5};
  // How often the database is asked whether it answers: with the call timeout (3 s), a hung
  // database is told within 4 s.
  static constexpr std::chrono::seconds probe_period{1};
  // Events read per query while catching up.
  static constexpr std::size_t batch = 1000;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

} // namespace newsdesk::server
