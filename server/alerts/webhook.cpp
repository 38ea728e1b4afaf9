#include "server/alerts/webhook.hpp"

#include "server/core/log.hpp"
#include "server/render/http_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <deque>
#include <optional>
#include <stdexcept>

namespace newsdesk::server::alerts {

namespace net = boost::asio;

std::string sign(std::string_view secret, std::string_view timestamp, std::string_view body) {
  std::string material;
  material.reserve(timestamp.size() + 1 + body.size());
  material.append(timestamp).append(".").append(body);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(material.data()), material.size(), digest,
            &length))
    throw std::runtime_error("HMAC-SHA256 failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

namespace {

// Retry-After in seconds ("120"); an HTTP date or anything else: none (the back-off applies).
std::optional<std::chrono::milliseconds> retry_after(const http_fetch_result& result) {
  const auto text = result.header("Retry-After");
  long long seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || seconds < 0)
    return std::nullopt;
  return std::chrono::seconds(std::min(seconds, 24LL * 3600));
}

std::string failure_text(const http_fetch_result& result) {
  return result.error.empty() ? "the request failed" : result.error;
}

} // namespace

verdict judge(const http_fetch_result& result, unsigned attempt, const webhook_config& cfg) {
  verdict v;
  bool transient = false;
  const bool accepted = result.status >= 200 && result.status < 300;
  // A receiver that accepted the delivery and said more than we read (max_answer_bytes) still
  // accepted it: its answer's body is not ours to judge.
  if (accepted && (result.ok() || result.failure == fetch_failure::too_large))
    return v;
  if (result.ok()) {
    v.why = "HTTP " + std::to_string(result.status);
    if (result.status >= 300 && result.status < 400)
      v.why += " (redirects are not followed)";
    transient = result.status == 429 || result.status >= 500;
  } else {
    v.why = failure_text(result);
    switch (result.failure) {
    case fetch_failure::bad_url:
    case fetch_failure::refused_address:
    case fetch_failure::too_large: // it answered; asking again would get the same answer
      transient = false;
      break;
    default: // resolve, connect, TLS, timeout, too slow, protocol and I/O errors
      transient = true;
    }
  }
  if (!transient) {
    v.what = verdict::give_up;
    return v;
  }
  if (attempt >= cfg.attempts) {
    v.what = verdict::give_up;
    v.why += " (after " + std::to_string(attempt) + " attempts)";
    return v;
  }
  v.what = verdict::retry;
  auto wait = cfg.retry_base;
  for (unsigned i = 1; i < attempt && wait < cfg.retry_max; ++i)
    wait *= 2;
  if (result.ok())
    if (auto asked = retry_after(result))
      wait = std::max(wait, *asked);
  v.wait = std::min(wait, cfg.retry_max);
  return v;
}

struct webhook_queue::state : std::enable_shared_from_this<state> {
  state(net::io_context& ioc, http_client& c, std::string a, webhook_config w)
      : strand(net::make_strand(ioc))
      , timer(strand)
      , client(c)
      , alert(std::move(a))
      , cfg(std::move(w)) {}

  // Starts the next waiting match when none is in flight. On the strand.
  void next() {
    if (stopped || sending || waiting.empty())
      return;
    sending = std::move(waiting.front());
    waiting.pop_front();
    attempt = 0;
    send();
  }

  void send() {
    ++attempt;
    if (attempt > 1)
      retries.fetch_add(1, std::memory_order_relaxed);
    http_fetch_options options;
    options.timeout = cfg.timeout;
    options.max_body_bytes = max_answer_bytes;
    options.headers = sending->headers;
    options.headers.emplace_back("X-Newsdesk-Alert", alert);
    options.headers.emplace_back("X-Newsdesk-Delivery",
                                 alert + ":" + std::to_string(sending->headline_id));
    if (!cfg.secret.empty()) {
      const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      const auto timestamp = std::to_string(now);
      options.headers.emplace_back("X-Newsdesk-Timestamp", timestamp);
      options.headers.emplace_back("X-Newsdesk-Signature",
                                   "sha256=" + sign(cfg.secret, timestamp, sending->body));
    }
    // The client calls back on some io_context thread: back to the strand.
    client.post(cfg.url, sending->content_type, sending->body, std::move(options),
                [self = shared_from_this()](http_fetch_result result) {
                  net::post(self->strand, [self, result = std::move(result)]() mutable {
                    self->on_answer(std::move(result));
                  });
                });
  }

  void on_answer(http_fetch_result result) {
    if (stopped)
      return;
    auto v = judge(result, attempt, cfg);
    if (v.what == verdict::delivered) {
      delivered.fetch_add(1, std::memory_order_relaxed);
      return finished();
    }
    if (v.what == verdict::give_up) {
      failed.fetch_add(1, std::memory_order_relaxed);
      log_warn("msg=\"webhook delivery failed\" alert=" + logfmt_quoted(alert) +
               " headline=" + std::to_string(sending->headline_id) +
               " attempts=" + std::to_string(attempt) + " error=" + logfmt_quoted(v.why));
      return finished();
    }
    timer.expires_after(v.wait);
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->stopped)
        return;
      self->send();
    });
  }

  void finished() {
    sending.reset();
    count.fetch_sub(1, std::memory_order_relaxed);
    next();
  }

  void push(webhook_message message) {
    if (stopped)
      return;
    if (waiting.size() >= std::max<std::size_t>(cfg.queue, 1)) {
      waiting.pop_front();
      count.fetch_sub(1, std::memory_order_relaxed);
      dropped.fetch_add(1, std::memory_order_relaxed);
    }
    waiting.push_back(std::move(message));
    count.fetch_add(1, std::memory_order_relaxed);
    next();
  }

  void stop() {
    if (stopped)
      return;
    stopped = true;
    timer.cancel();
    count.fetch_sub(waiting.size() + (sending ? 1 : 0), std::memory_order_relaxed);
    waiting.clear();
    sending.reset();
  }

  net::strand<net::io_context::executor_type> strand;
  // Everything below but the counters is the strand's only.
  net::steady_timer timer; // the wait before a retry
  http_client& client;
  const std::string alert;
  const webhook_config cfg;
  std::deque<webhook_message> waiting;    // oldest first, the one in flight not among them
  std::optional<webhook_message> sending; // in flight, or waiting to be retried
  unsigned attempt = 0;                   // of `sending`, from 1
  bool stopped = false;
  // Read by stats() on any thread.
  std::atomic<std::uint64_t> delivered{0}, failed{0}, dropped{0}, retries{0}, count{0};
};

webhook_queue::webhook_queue(net::io_context& ioc, http_client& client, std::string alert,
                             webhook_config cfg)
    : state_(std::make_shared<state>(ioc, client, std::move(alert), std::move(cfg))) {}

webhook_queue::~webhook_queue() {
  stop();
}

void webhook_queue::push(webhook_message message) {
  net::post(state_->strand,
            [s = state_, message = std::move(message)]() mutable { s->push(std::move(message)); });
}

void webhook_queue::stop() {
  net::post(state_->strand, [s = state_] { s->stop(); });
}

webhook_stats webhook_queue::stats() const {
  const auto& s = *state_;
  return {.delivered = s.delivered.load(std::memory_order_relaxed),
          .failed = s.failed.load(std::memory_order_relaxed),
          .dropped = s.dropped.load(std::memory_order_relaxed),
          .retries = s.retries.load(std::memory_order_relaxed),
          .waiting = s.count.load(std::memory_order_relaxed)};
}

} // namespace newsdesk::server::alerts
