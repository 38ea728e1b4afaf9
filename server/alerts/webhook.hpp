// Delivery of one alert's matches to its webhook: a bounded queue, one POST in flight at a time
// (so a receiver gets an alert's matches in order), retries with exponential back-off.
//
// Each attempt goes through the project's http_client (one connection, one deadline, redirects
// not followed, the answer's body bounded) with the webhook's own timeout. Connection errors,
// timeouts, 429 and 5xx are tried again after retry_base, then twice that, ... capped at
// retry_max (a Retry-After in seconds is honoured within the same cap), at most `attempts` times
// in all; any other answer outside 2xx (a redirect, 4xx) gives the match up at once: asking
// again would get the same answer. A match given up is counted and logged once (level=warn).
// With a secret, every attempt carries
//   X-Newsdesk-Timestamp: <unix seconds of the attempt>
//   X-Newsdesk-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
// and every attempt carries X-Newsdesk-Alert (the alert's name) and X-Newsdesk-Delivery (the
// alert's name and the headline's id: the same on a retry, so a receiver can drop duplicates
// that a lost answer causes).
//
// Threads: push(), stop() and stats() may be called from any thread; the queue's state lives on
// a strand of the io_context. Nothing here blocks: push() posts and returns. Lifetime: the
// queue's state is owned by its pending operations as well as by this handle, so destroying the
// handle (which stops it) while an attempt is in flight is safe.
#pragma once

#include "server/alerts/alert.hpp"
#include "server/http/http_message.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {
class http_client;
struct http_fetch_result;
} // namespace newsdesk::server

namespace newsdesk::server::alerts {

// What one match sends: the body and how to label it. Built once, sent on every attempt.
struct webhook_message {
  std::string content_type;
  std::string body;
  header_list headers; // the format's own (ntfy's Title, Click, Tags), besides the signature's
  std::int64_t headline_id = 0;
};

// How a queue has done since start.
struct webhook_stats {
  std::uint64_t delivered = 0; // answered 2xx
  std::uint64_t failed = 0;    // given up: a final answer, or out of attempts
  std::uint64_t dropped = 0;   // pushed out of a full queue before their first attempt
  std::uint64_t retries = 0;   // attempts after a match's first
  std::uint64_t waiting = 0;   // in the queue now, the one in flight included
};

// Lowercase hex HMAC-SHA256 of `timestamp + "." + body` under `secret` (OpenSSL's HMAC()).
std::string sign(std::string_view secret, std::string_view timestamp, std::string_view body);

// What to do after an attempt: the rule above as a function, so it is tested without a network.
struct verdict {
  enum outcome { delivered, retry, give_up };
  outcome what = delivered;
  std::chrono::milliseconds wait{0}; // before the next attempt (retry only)
  std::string why;                   // the failure, for the log ("HTTP 404", "Connection refused")
};
// `attempt` counts from 1 (the attempt whose answer `result` is).
verdict judge(const http_fetch_result& result, unsigned attempt, const webhook_config& cfg);

// A receiver's answer is read up to this many bytes: it is only looked at for its status, and
// the bound keeps a hostile or broken receiver from filling memory.
inline constexpr std::size_t max_answer_bytes = 64 * 1024;

class webhook_queue {
 public:
  webhook_queue(boost::asio::io_context& ioc, http_client& client, std::string alert,
                webhook_config cfg);
  ~webhook_queue(); // stop()
  webhook_queue(const webhook_queue&) = delete;
  webhook_queue& operator=(const webhook_queue&) = delete;

  // Queues a match; when `cfg.queue` are waiting, the oldest waiting one (not the one in
  // flight) is dropped and counted. Returns at once.
  void push(webhook_message message);
  // Gives up what waits (not counted as failed: the process is going away) and stops retrying.
  // An attempt in flight ends by its deadline, unanswered. Idempotent.
  void stop();
  webhook_stats stats() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

} // namespace newsdesk::server::alerts
