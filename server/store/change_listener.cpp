#include "server/store/change_listener.hpp"

#include "server/core/log.hpp"
#include "server/store/postgres_notices.hpp"
#include "server/store/postgres_refusals.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <string>

namespace newsdesk::server {

namespace net = boost::asio;
using error_code = boost::system::error_code;

namespace {
constexpr std::chrono::milliseconds first_backoff{100};
constexpr std::chrono::milliseconds max_backoff{5000};

std::string message_of(PGconn* conn) {
  std::string text = conn ? PQerrorMessage(conn) : "out of memory";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}
} // namespace

// The connection and the socket live on `strand`; connecting (blocking) runs on the pool while
// the strand holds no connection. Catching up runs on the pool, one pass at a time.
struct change_listener::state : std::enable_shared_from_this<change_listener::state> {
  state(net::io_context& ioc, net::thread_pool& pool_, cluster_store& store_, handler on_events_)
      : pool(pool_)
      , store(store_)
      , on_events(std::move(on_events_))
      , strand(net::make_strand(ioc))
      , socket(strand)
      , poll_timer(strand)
      , reconnect_timer(strand) {}
  ~state() { PQfinish(conn); } // when the io_context went away before stop() ran

  net::thread_pool& pool;
  cluster_store& store;
  handler on_events;
  net::strand<net::io_context::executor_type> strand;

  // On the strand:
  PGconn* conn = nullptr;
  net::posix::stream_descriptor socket; // a dup of libpq's socket, for waiting only
  net::steady_timer poll_timer, reconnect_timer;
  std::chrono::milliseconds backoff = first_backoff;
  bool stopped = false;
  bool catching = false, again = false;
  bool failing = false; // a connection failure was logged; log the recovery once

  std::atomic<bool> up{false};
  std::atomic<std::int64_t> last{0};

  void connect() {
    net::post(pool, [self = shared_from_this()] {
      // The URL is expanded into its parts; the name shows in pg_stat_activity, and keepalives
      // find a peer that vanished without closing the connection.
      const auto& info = self->store.conninfo();
      const char* keys[] = {"dbname",
                            "application_name",
                            "connect_timeout",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            nullptr};
      // The pid names the instance's listener in pg_stat_activity (operators, and tests that
      // cut it with pg_terminate_backend).
      const auto name = "newsdesk-listen-" + std::to_string(::getpid());
      const char* values[] = {info.c_str(), name.c_str(), "5", "10", "5", "3", nullptr};
      PGconn* c = PQconnectdbParams(keys, values, 1);
      log_notices(c, "listener");
      std::string error;
      if (!c || PQstatus(c) != CONNECTION_OK) {
        const auto cause = message_of(c);
        error = "cannot connect: " + cause;
        // The store's pool may hold the slot this connection needs: it hands one back.
        if (out_of_connection_slots(cause)) {
          error = out_of_slots_message(cause, self->store.connection_budget());
          self->store.yield_connection();
        }
      } else {
        std::string sql = std::string("LISTEN ") + cluster_store::notify_channel;
        PGresult* r = PQexec(c, sql.c_str());
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
          error = "cannot LISTEN: " + message_of(c);
        PQclear(r);
        if (error.empty() && PQsetnonblocking(c, 1) != 0)
          error = "cannot switch to non-blocking mode: " + message_of(c);
      }
      int fd = error.empty() ? ::dup(PQsocket(c)) : -1;
      if (error.empty() && fd < 0)
        error = "cannot duplicate the connection's socket";
      if (!error.empty()) {
        PQfinish(c);
        c = nullptr;
      }
      net::dispatch(self->strand, [self, c, fd, error] { self->connected(c, fd, error); });
    });
  }

  // On the strand, after a connection attempt.
  void connected(PGconn* c, int fd, const std::string& error) {
    if (stopped) {
      if (fd >= 0)
        ::close(fd);
      PQfinish(c);
      return;
    }
    if (!error.empty()) {
      if (!failing)
        log_warn("msg=\"change listener: cannot listen\" error=" + logfmt_quoted(error) +
                 " retry_ms=" + std::to_string(backoff.count()));
      failing = true;
      retry();
      return;
    }
    conn = c;
    error_code ec;
    socket.assign(fd, ec);
    if (ec) {
      ::close(fd);
      drop("cannot watch the connection's socket: " + ec.message());
      return;
    }
    backoff = first_backoff;
    up = true;
    log_info(std::string("msg=\"change listener: listening\" channel=") +
             cluster_store::notify_channel + (failing ? " recovered=true" : ""));
    failing = false;
    // LISTEN is in place: whatever committed before it is read now, whatever commits after it
    // is notified.
    catch_up();
    wait_readable();
  }

  void retry() {
    reconnect_timer.expires_after(backoff);
    backoff = std::min(backoff * 2, max_backoff);
    reconnect_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec && !self->stopped)
        self->connect();
    });
  }

  // On the strand: the connection is gone or broken.
  void drop(const std::string& why) {
    up = false;
    error_code ignored;
    socket.close(ignored);
    PQfinish(conn);
    conn = nullptr;
    if (stopped)
      return;
    log_warn("msg=\"change listener: connection lost\" error=" + logfmt_quoted(why) +
             " retry_ms=" + std::to_string(backoff.count()));
    failing = true;
    retry();
  }

  void wait_readable() {
    socket.async_wait(net::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](error_code ec) {
                        if (ec || self->stopped || !self->conn)
                          return;
                        self->read_notifications();
                      });
  }

  // On the strand: non-blocking, it only takes in what the socket holds.
  void read_notifications() {
    if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
      return drop(message_of(conn));
    bool newer = false;
    while (PGnotify* n = PQnotifies(conn)) {
      std::int64_t seq = 0;
      std::string_view payload(n->extra ? n->extra : "");
      auto [end, ec] = std::from_chars(payload.data(), payload.data() + payload.size(), seq);
      // A payload that is not a number still means "something changed".
      if (ec != std::errc{} || seq > last.load())
        newer = true;
      PQfreemem(n);
    }
    if (newer)
      catch_up();
    wait_readable();
  }

  // On the strand: reads and hands on the events after `last`, on the pool. A pass asked for
  // while one runs is run once more after it.
  void catch_up() {
    if (catching) {
      again = true;
      return;
    }
    catching = true;
    net::post(pool, [self = shared_from_this()] {
      try {
        for (;;) {
          auto events = self->store.events_after(self->last.load(), batch);
          if (events.empty())
            break;
          self->on_events(events);
          self->last = events.back().seq;
          if (events.size() < batch)
            break;
        }
      } catch (const std::exception& e) {
        log_warn("msg=\"change listener: catching up failed\" error=" + logfmt_quoted(e.what()));
      }
      net::dispatch(self->strand, [self] {
        self->catching = false;
        if (self->again && !self->stopped) {
          self->again = false;
          self->catch_up();
        }
      });
    });
  }

  void poll() {
    poll_timer.expires_after(poll_period);
    poll_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->stopped)
        return;
      self->catch_up();
      self->poll();
    });
  }
};

change_listener::change_listener(net::io_context& ioc, net::thread_pool& pool, cluster_store& store,
                                 handler on_events)
    : state_(std::make_shared<state>(ioc, pool, store, std::move(on_events))) {}

change_listener::~change_listener() {
  stop();
}

void change_listener::start(std::int64_t after_seq) {
  state_->last = after_seq;
  net::dispatch(state_->strand, [st = state_] {
    st->connect();
    st->poll();
  });
}

void change_listener::stop() {
  net::dispatch(state_->strand, [st = state_] {
    if (st->stopped)
      return;
    st->stopped = true;
    st->poll_timer.cancel();
    st->reconnect_timer.cancel();
    st->up = false;
    error_code ignored;
    st->socket.close(ignored);
    PQfinish(st->conn);
    st->conn = nullptr;
  });
}

bool change_listener::connected() const {
  return state_->up;
}

std::int64_t change_listener::last_seq() const {
  return state_->last;
}

} // namespace newsdesk::server
