// Alerts at work: every new headline a change announces (headline_update::added, never the whole
// snapshot again) is matched against each configured alert with the /news?q=&site= matcher
// (news_query::matches); each match goes out on the broker's channel for MQTT topic
// newsdesk/alerts/<name> as one JSON object (a /news.json item and "alert": the alert's name),
// not retained, and to the alert's webhook when it has one (webhook.hpp).
//
// Not retained: a match is an event, not a state. Retained, the last match would come again to
// every client that (re)subscribes, and a phone notifier or a Home Assistant automation would
// fire for old news on every reconnect; a client that must not miss matches while away keeps an
// MQTT session (QoS 1, clean start off), which the broker queues for.
//
// Threads: every member may be called from any thread. match() costs O(alerts x headlines) word
// comparisons on the caller's thread and never waits: publishing posts to the broker's strand,
// webhooks queue on their own strands.
#pragma once

#include "server/alerts/alert.hpp"
#include "server/alerts/webhook.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {
class http_client;
struct news_item;
struct site_report;
} // namespace newsdesk::server

namespace newsdesk::server::alerts {

struct alert_stats {
  std::string name;
  std::uint64_t matches = 0;
  bool has_webhook = false;
  webhook_stats webhook; // zeros without a webhook
};

// The JSON an alert's match is told in: the headline's /news.json shape and "alert": `name`.
std::string match_json(const news_item& item, std::string_view name);
// What the webhook of `format` is sent for a match; `site_name` is the headline's site's display
// name (ntfy's Title). ntfy's headers are sent as text, words outside ASCII encoded as RFC 2047
// (=?UTF-8?B?...?=), which ntfy decodes.
webhook_message webhook_message_of(const news_item& item, std::string_view alert,
                                   webhook_format format, std::string_view site_name);

class alert_service {
 public:
  // Sends a message to a broker channel (the broker's publish); empty when the broker is off.
  using publisher = std::function<void(const std::string& channel, const std::string& payload)>;

  // `client` and the io_context outlive this object's pending work (webhook.hpp).
  alert_service(boost::asio::io_context& ioc, http_client& client, std::vector<alert_config> alerts,
                publisher publish);
  ~alert_service();
  alert_service(const alert_service&) = delete;
  alert_service& operator=(const alert_service&) = delete;

  bool empty() const { return alerts_.empty(); }

  // Tells every alert that `added` (new headlines, ids ascending) match. `sites` (the snapshot's)
  // give the sites' display names. A publish that throws (a payload over the broker's limit) is
  // logged and skipped; the webhook is still told.
  void match(const std::vector<news_item>& added, const std::vector<site_report>& sites);

  std::vector<alert_stats> stats() const;
  // Stops every webhook queue (shutdown); later matches are still published, never POSTed.
  void stop();

 private:
  struct entry;
  std::vector<std::unique_ptr<entry>> alerts_;
  publisher publish_;
};

} // namespace newsdesk::server::alerts
