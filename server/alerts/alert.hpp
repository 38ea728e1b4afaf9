// Alerts: saved searches from the settings ("alerts": [...]), each matched against every new
// headline and told on MQTT topic newsdesk/alerts/<name>, and, when it has one, to a webhook.
// These are the plain values the configuration resolves an entry into (resolve_alerts in
// server/app/config.cpp checks them and names the entry when one is wrong); alerts.hpp matches
// and delivers.
#pragma once

#include "server/news/search.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace newsdesk::server::alerts {

// What a webhook's POST carries.
enum class webhook_format {
  json, // the match as JSON (a /news.json item and "alert"), Content-Type application/json
  ntfy, // the title as a text body, Title/Click/Tags headers (how an ntfy server takes a message)
};

struct webhook_config {
  std::string url; // http:// or https://; operator-configured, so internal addresses are allowed
  webhook_format format = webhook_format::json;
  // Non-empty: every POST is signed with HMAC-SHA256 under this key (webhook.hpp, sign()).
  std::string secret;
  // Each attempt's deadline: connect, send and read the answer. A receiver is expected to answer
  // quickly and do its work afterwards; 10 s leaves room for a slow one across the Internet.
  std::chrono::milliseconds timeout{10'000};
  // Attempts per match, the first included: 6 spans 1 + 2 + 4 + 8 + 16 s of back-off (about half
  // a minute: a receiver restarting comes back within it). Then the match is given up, counted
  // and logged.
  unsigned attempts = 6;
  std::chrono::milliseconds retry_base{1'000}; // the first retry's wait; each one doubles it
  // The longest wait between attempts, Retry-After included: a receiver asking for an hour does
  // not hold every later match for an hour.
  std::chrono::milliseconds retry_max{60'000};
  // Matches waiting for delivery at most; past it the oldest waiting one is dropped (counted). It
  // bounds the memory a receiver that is down for long can cost: 1,000 matches of about 1 KB.
  std::size_t queue = 1'000;
};

struct alert_config {
  std::string name; // unique; one MQTT topic level (no '/', '+', '#')
  std::string q;    // as given; the search words are in `query`
  std::string site; // as given ("" or names separated by commas, as /news's site=)
  // The filter as parse_news_query reads q= and site=: q's words (search_query) and the sites
  // (none: any). alerts.cpp matches with news_query::matches, /news's own matcher.
  search_query words;
  std::vector<std::string> sites;
  std::optional<webhook_config> webhook;
};

// Whether `name` can be one MQTT topic level and an alert's name: non-empty, at most
// max_name_bytes, no '/', '+', '#', control characters or spaces.
inline constexpr std::size_t max_name_bytes = 64;
bool usable_name(std::string_view name);

// The MQTT topic of an alert's matches, and the broker channel it is (/topic/ + topic).
std::string topic_of(std::string_view name);
std::string channel_of(std::string_view name);

} // namespace newsdesk::server::alerts
