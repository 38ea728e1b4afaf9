#include "server/store/change_listener.hpp"

#include "server/core/log.hpp"
#include "server/store/postgres_call.hpp"
#include "server/store/postgres_notices.hpp"
#include "server/store/postgres_refusals.hpp"
#include "server/store/postgres_store.hpp"

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
// A database that went away is tried every 2 s at most: it is back within that of returning.
constexpr std::chrono::milliseconds max_backoff{2000};

std::string message_of(PGconn* conn) {
  return conn ? pg::one_line(PQerrorMessage(conn)) : "out of memory";
}
} // namespace

// Everything but the counters lives on `strand`: the connection, its socket (a dup of libpq's,
// for waiting only), the timers and the phase. Catching up runs on the pool, one pass at a time.
struct change_listener::state : std::enable_shared_from_this<change_listener::state> {
  state(net::io_context& ioc, net::thread_pool& pool_, cluster_store& store_, handler on_events_,
        status_handler on_status_)
      : pool(pool_)
      , store(store_)
      , on_events(std::move(on_events_))
      , on_status(std::move(on_status_))
      , timeout(store_.call_timeout())
      // The pid names the instance's listener in pg_stat_activity (operators, and tests that
      // cut it with pg_terminate_backend).
      , info(store_.conninfo(), "newsdesk-listen-" + std::to_string(::getpid()), timeout)
      , strand(net::make_strand(ioc))
      , socket(strand)
      , poll_timer(strand)
      , probe_timer(strand)
      , deadline_timer(strand)
      , reconnect_timer(strand) {}
  ~state() { PQfinish(conn); } // when the io_context went away before stop() ran

  net::thread_pool& pool;
  cluster_store& store;
  handler on_events;
  status_handler on_status;
  const std::chrono::milliseconds timeout;
  const pg::conninfo info;
  net::strand<net::io_context::executor_type> strand;

  // On the strand:
  PGconn* conn = nullptr;
  net::posix::stream_descriptor socket;
  net::steady_timer poll_timer, probe_timer, deadline_timer, reconnect_timer;
  enum class phase { closed, connecting, listening, live } now = phase::closed;
  bool asking = false;          // the LISTEN or a probe is in flight, bounded by deadline_timer
  std::string query_error;      // what the server said to it, if it refused
  std::uint64_t generation = 0; // one per connection: handlers of an older one do nothing
  std::chrono::milliseconds backoff = first_backoff;
  bool stopped = false;
  bool catching = false, again = false;
  bool failing = false; // a connection failure was logged; log the recovery once
  // What on_status was last told: whether the database answered, and why not.
  bool told = false, told_answering = false;
  std::string told_refusal;

  std::atomic<bool> up{false};
  std::atomic<std::int64_t> last{0};

  template <class Fn> auto on_this_connection(Fn fn) {
    return [self = shared_from_this(), gen = generation, fn](error_code ec) {
      if (!ec && !self->stopped && self->conn && gen == self->generation)
        fn(*self);
    };
  }

  // Watches libpq's socket as it is now: while connecting libpq may open another for each
  // address it tries, so it is looked at again before every wait until the connection is up.
  bool watch_socket() {
    error_code ignored;
    socket.close(ignored);
    const int fd = ::dup(PQsocket(conn));
    if (fd < 0)
      return false;
    error_code ec;
    socket.assign(fd, ec);
    if (ec)
      ::close(fd);
    return !ec;
  }

  void arm_deadline() {
    deadline_timer.expires_after(timeout);
    deadline_timer.async_wait(on_this_connection([](state& st) { st.timed_out(); }));
  }

  void close_connection() {
    ++generation;
    up = false;
    now = phase::closed;
    asking = false;
    error_code ignored;
    deadline_timer.cancel();
    socket.close(ignored);
    PQfinish(conn);
    conn = nullptr;
  }

  // Tells on_status when the database starts or stops answering (or refusing the login).
  void report(const std::string& error, const std::string& refusal) {
    const bool answering = error.empty();
    if (told && answering == told_answering && refusal == told_refusal)
      return;
    told = true;
    told_answering = answering;
    told_refusal = refusal;
    if (on_status)
      on_status(error, refusal);
  }

  void connect() {
    close_connection();
    conn = PQconnectStartParams(info.keys(), info.values(), 1);
    if (!conn || PQstatus(conn) == CONNECTION_BAD)
      return connect_failed(message_of(conn));
    log_notices(conn, "listener");
    now = phase::connecting;
    arm_deadline(); // the whole start-up within the timeout
    // Before the first PQconnectPoll libpq is as if it had said "writing".
    await_connect(PGRES_POLLING_WRITING);
  }

  void await_connect(PostgresPollingStatusType want) {
    if (!watch_socket())
      return connect_failed("cannot watch the connection's socket");
    socket.async_wait(want == PGRES_POLLING_READING ? net::posix::stream_descriptor::wait_read
                                                    : net::posix::stream_descriptor::wait_write,
                      on_this_connection([](state& st) { st.poll_connect(); }));
  }

  void poll_connect() {
    switch (PQconnectPoll(conn)) {
    case PGRES_POLLING_OK:
      return listen();
    case PGRES_POLLING_FAILED:
      return connect_failed(message_of(conn));
    case PGRES_POLLING_READING:
      return await_connect(PGRES_POLLING_READING);
    default:
      return await_connect(PGRES_POLLING_WRITING);
    }
  }

  // Connected: LISTEN, bounded like a probe; live once it is answered.
  void listen() {
    if (PQsetnonblocking(conn, 1) != 0)
      return connect_failed("cannot switch to non-blocking mode: " + message_of(conn));
    now = phase::listening;
    ask((std::string("LISTEN ") + cluster_store::notify_channel).c_str());
    if (conn)
      wait_readable();
  }

  void connect_failed(const std::string& cause) {
    close_connection();
    if (stopped)
      return;
    std::string error = "cannot connect: " + cause;
    const bool slots = out_of_connection_slots(cause);
    const auto refused = login_refusal(cause);
    // The store's pool may hold the slot this connection needs: it hands one back. The store
    // answers its own queries meanwhile: not an outage.
    if (slots) {
      error = out_of_slots_message(cause, store.connection_budget());
      store.yield_connection();
    } else if (!refused.empty()) {
      error = login_refusal_message(refused);
    }
    if (!failing)
      log_warn("msg=\"change listener: cannot listen\" error=" + logfmt_quoted(error) +
               " retry_ms=" + std::to_string(backoff.count()));
    failing = true;
    if (!slots)
      report("cannot connect to " + without_password(store.conninfo()) + ": " + error, refused);
    retry();
  }

  void retry() {
    reconnect_timer.expires_after(backoff);
    backoff = std::min(backoff * 2, max_backoff);
    reconnect_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec && !self->stopped)
        self->connect();
    });
  }

  // The connection is gone or broken (not by itself an outage: the next connect says).
  void drop(const std::string& why) {
    close_connection();
    if (stopped)
      return;
    log_warn("msg=\"change listener: connection lost\" error=" + logfmt_quoted(why) +
             " retry_ms=" + std::to_string(backoff.count()));
    failing = true;
    retry();
  }

  // The LISTEN, or a probe, or the start-up took longer than the timeout: the database does not
  // answer.
  void timed_out() {
    if (now == phase::connecting)
      return connect_failed("timed out after " + std::to_string(timeout.count()) +
                            " ms: PostgreSQL finished no start-up in that time");
    if (!asking)
      return;
    // Told once, as the store's outage (news_service's line); the reconnects that follow are
    // quiet until one works ("listening recovered=true").
    report("PostgreSQL did not answer within " + std::to_string(timeout.count()) + " ms", {});
    close_connection();
    failing = true;
    retry();
  }

  // Sends one query on the connection, bounded by the timeout (its answer: read_input).
  void ask(const char* sql) {
    if (!PQsendQuery(conn, sql))
      return drop(message_of(conn));
    asking = true;
    query_error.clear();
    arm_deadline();
    flush();
  }

  void flush() {
    const int left = PQflush(conn);
    if (left < 0)
      return drop(message_of(conn));
    if (left > 0)
      socket.async_wait(net::posix::stream_descriptor::wait_write,
                        on_this_connection([](state& st) { st.flush(); }));
  }

  void wait_readable() {
    socket.async_wait(net::posix::stream_descriptor::wait_read,
                      on_this_connection([](state& st) { st.read_input(); }));
  }

  // Takes in what the socket holds (never waits): notifications, and the answer being waited for.
  void read_input() {
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
    while (asking && !PQisBusy(conn)) {
      pg::result r(PQgetResult(conn));
      if (!r) {
        answered();
        if (!conn)
          return; // the LISTEN was refused
        break;
      }
      const auto status = PQresultStatus(r.get());
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && query_error.empty())
        query_error = pg::one_line(PQresultErrorMessage(r.get()));
    }
    if (newer && now == phase::live)
      catch_up();
    wait_readable();
  }

  // The query in flight was answered.
  void answered() {
    asking = false;
    deadline_timer.cancel();
    if (now == phase::listening) {
      if (!query_error.empty())
        return drop("cannot LISTEN: " + query_error);
      now = phase::live;
      up = true;
      backoff = first_backoff;
      log_info(std::string("msg=\"change listener: listening\" channel=") +
               cluster_store::notify_channel + (failing ? " recovered=true" : ""));
      failing = false;
      // LISTEN is in place: whatever committed before it is read now, whatever commits after it
      // is notified.
      catch_up();
    }
    report({}, {});
  }

  // Every probe_period: is the database answering? Also the pool's idle connections the server
  // closed are let go here.
  void probe() {
    probe_timer.expires_after(probe_period);
    probe_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->stopped)
        return;
      (void)self->store.close_dead_connections();
      if (self->now == phase::live && !self->asking)
        self->ask("SELECT 1");
      self->probe();
    });
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
                                 handler on_events, status_handler on_status)
    : state_(
          std::make_shared<state>(ioc, pool, store, std::move(on_events), std::move(on_status))) {}

change_listener::~change_listener() {
  stop();
}

void change_listener::start(std::int64_t after_seq) {
  state_->last = after_seq;
  net::dispatch(state_->strand, [st = state_] {
    st->connect();
    st->poll();
    st->probe();
  });
}

void change_listener::stop() {
  net::dispatch(state_->strand, [st = state_] {
    if (st->stopped)
      return;
    st->stopped = true;
    st->poll_timer.cancel();
    st->probe_timer.cancel();
    st->reconnect_timer.cancel();
    st->close_connection();
  });
}

bool change_listener::connected() const {
  return state_->up;
}

std::int64_t change_listener::last_seq() const {
  return state_->last;
}

} // namespace newsdesk::server
