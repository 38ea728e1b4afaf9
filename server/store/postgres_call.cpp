#include "server/store/postgres_call.hpp"

#include "server/core/thread_name.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

namespace newsdesk::server::pg {

using clock = std::chrono::steady_clock;

namespace {

// Waits until `fd` is ready for `events` or `deadline` passes: > 0 ready, 0 timed out, < 0 an
// error (errno).
int wait_for(int fd, short events, clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0)
      return 0;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
    if (n < 0 && errno == EINTR)
      continue;
    if (n != 0)
      return n;
  }
}

std::string timed_out_after(std::chrono::milliseconds timeout) {
  return "PostgreSQL did not answer within " + std::to_string(timeout.count()) + " ms";
}

bool is_error(const PGresult* r) {
  const auto status = PQresultStatus(r);
  return status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE;
}

std::atomic<int> cancels_in_flight{0};

} // namespace

std::string one_line(const char* text) {
  std::string out = text ? text : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
    out.pop_back();
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

conninfo::conninfo(const std::string& url, std::string application_name,
                   std::chrono::milliseconds timeout, std::string options) {
  const auto seconds = std::max<long long>(
      2, std::chrono::ceil<std::chrono::seconds>(timeout).count()); // libpq's least
  // Keepalives find an idle connection whose peer is gone (probes every 5 s after 10 s idle);
  // tcp_user_timeout drops one whose sent data goes unacknowledged for the timeout.
  owned_ = {"dbname",
            url,
            "application_name",
            std::move(application_name),
            "connect_timeout",
            std::to_string(seconds),
            "keepalives",
            "1",
            "keepalives_idle",
            "10",
            "keepalives_interval",
            "5",
            "keepalives_count",
            "3",
            "tcp_user_timeout",
            std::to_string(timeout.count())};
  if (!options.empty()) {
    owned_.push_back("options");
    owned_.push_back(std::move(options));
  }
  for (std::size_t i = 0; i < owned_.size(); i += 2) {
    keys_.push_back(owned_[i].c_str());
    values_.push_back(owned_[i + 1].c_str());
  }
  keys_.push_back(nullptr);
  values_.push_back(nullptr);
}

PGconn* connect_within(const conninfo& info, std::chrono::milliseconds timeout,
                       std::string& error) {
  const auto deadline = clock::now() + timeout;
  PGconn* c = PQconnectStartParams(info.keys(), info.values(), 1);
  if (!c) {
    error = "out of memory";
    return nullptr;
  }
  // Before the first PQconnectPoll libpq is as if it had said "writing" (its documentation).
  auto state = PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK && state != PGRES_POLLING_FAILED) {
    const int ready =
        wait_for(PQsocket(c), state == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
    if (ready == 0) {
      error = "timed out after " + std::to_string(timeout.count()) +
              " ms: PostgreSQL accepted no connection in that time";
      PQfinish(c);
      return nullptr;
    }
    if (ready < 0) {
      error = std::string("cannot wait for the connection: ") + std::strerror(errno);
      PQfinish(c);
      return nullptr;
    }
    state = PQconnectPoll(c);
  }
  if (state == PGRES_POLLING_FAILED || PQsetnonblocking(c, 1) != 0) {
    error = one_line(PQerrorMessage(c));
    PQfinish(c);
    return nullptr;
  }
  return c;
}

answer exec_within(PGconn* conn, const char* sql, const std::vector<std::string>* params,
                   std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  answer out;
  const auto broken = [&] {
    out.how = outcome::broken;
    out.error = one_line(PQerrorMessage(conn));
    out.last.reset();
    return std::move(out);
  };
  const auto timed_out = [&] {
    cancel_in_background(conn);
    out.how = outcome::timed_out;
    out.error = timed_out_after(timeout);
    out.last.reset();
    return std::move(out);
  };
  int sent = 0;
  if (params) {
    std::vector<const char*> values;
    values.reserve(params->size());
    for (const auto& p : *params)
      values.push_back(p.c_str());
    sent = PQsendQueryParams(conn, sql, static_cast<int>(values.size()), nullptr, values.data(),
                             nullptr, nullptr, 0);
  } else {
    sent = PQsendQuery(conn, sql);
  }
  if (!sent)
    return broken();
  // A large query (thousands of headlines) may not fit in the socket at once: flush as the
  // server reads, taking in what it sends meanwhile (libpq's documented loop).
  for (;;) {
    const int flushed = PQflush(conn);
    if (flushed == 0)
      break;
    if (flushed < 0)
      return broken();
    const int ready = wait_for(PQsocket(conn), POLLIN | POLLOUT, deadline);
    if (ready == 0)
      return timed_out();
    if (ready < 0 || !PQconsumeInput(conn))
      return broken();
  }
  // Every result, as PQexec would read them; the first error is the one that counts.
  result first_error;
  for (;;) {
    while (PQisBusy(conn)) {
      const int ready = wait_for(PQsocket(conn), POLLIN, deadline);
      if (ready == 0)
        return timed_out();
      if (ready < 0 || !PQconsumeInput(conn))
        return broken();
    }
    result r(PQgetResult(conn));
    if (!r)
      break;
    if (is_error(r.get()) && !first_error)
      first_error = std::move(r);
    else if (!first_error)
      out.last = std::move(r);
  }
  if (PQstatus(conn) != CONNECTION_OK)
    return broken();
  out.how = outcome::answered;
  if (first_error)
    out.last = std::move(first_error);
  return out;
}

void cancel_in_background(PGconn* conn) {
  PGcancel* cancel = PQgetCancel(conn);
  if (!cancel)
    return;
  if (cancels_in_flight.fetch_add(1) >= max_cancels_in_flight) {
    --cancels_in_flight;
    PQfreeCancel(cancel);
    return;
  }
  try {
    // Detached: a frozen server holds it until it runs again (or the process ends); it owns
    // nothing but the cancel object.
    std::thread([cancel] {
      name_this_thread("nd-pg-cancel");
      char error[256];
      (void)PQcancel(cancel, error, sizeof error);
      PQfreeCancel(cancel);
      --cancels_in_flight;
    }).detach();
  } catch (const std::system_error&) {
    --cancels_in_flight;
    PQfreeCancel(cancel);
  }
}

} // namespace newsdesk::server::pg
