#include "server/alerts/alerts.hpp"

#include "server/core/log.hpp"
#include "server/news/headline.hpp"
#include "server/news/news_query.hpp"

#include <nlohmann/json.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>

namespace newsdesk::server::alerts {

bool usable_name(std::string_view name) {
  return !name.empty() && name.size() <= max_name_bytes &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
         });
}

std::string topic_of(std::string_view name) {
  return "newsdesk/alerts/" + std::string(name);
}

std::string channel_of(std::string_view name) {
  return "/topic/" + topic_of(name);
}

namespace {

// A header value from text that came from a page or a file: control characters (CR and LF would
// end the header) become spaces, and text outside ASCII becomes one RFC 2047 encoded word.
std::string header_value(std::string_view text) {
  std::string clean(text.substr(0, 1024));
  bool ascii = true;
  for (auto& c : clean) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      c = ' ';
    ascii = ascii && u < 0x80;
  }
  if (ascii)
    return clean;
  std::string encoded(4 * ((clean.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  encoded.resize(static_cast<std::size_t>(std::max(n, 0)));
  return "=?UTF-8?B?" + encoded + "?=";
}

std::string_view display_name(const std::vector<site_report>& sites, const std::string& site) {
  for (const auto& s : sites)
    if (s.name == site)
      return s.display_name;
  return site;
}

} // namespace

std::string match_json(const news_item& item, std::string_view name) {
  nlohmann::json j = item;
  j["alert"] = std::string(name);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

webhook_message webhook_message_of(const news_item& item, std::string_view alert,
                                   webhook_format format, std::string_view site_name) {
  webhook_message m;
  m.headline_id = item.id;
  if (format == webhook_format::json) {
    m.content_type = "application/json";
    m.body = match_json(item, alert);
    return m;
  }
  m.content_type = "text/plain; charset=utf-8";
  m.body = item.headline.title;
  m.headers = {{"Title", header_value(site_name)},
               {"Click", header_value(item.headline.url)},
               {"Tags", header_value(alert)}};
  return m;
}

struct alert_service::entry {
  alert_config cfg;
  news_query query; // q= and site= as /news reads them
  std::unique_ptr<webhook_queue> webhook;
  std::atomic<std::uint64_t> matches{0};
};

alert_service::alert_service(boost::asio::io_context& ioc, http_client& client,
                             std::vector<alert_config> alerts, publisher publish)
    : publish_(std::move(publish)) {
  for (auto& a : alerts) {
    auto e = std::make_unique<entry>();
    if (a.webhook)
      e->webhook = std::make_unique<webhook_queue>(ioc, client, a.name, *a.webhook);
    e->query.q = a.q;
    e->query.words = a.words;
    e->query.sites = a.sites;
    e->cfg = std::move(a);
    alerts_.push_back(std::move(e));
  }
}

alert_service::~alert_service() = default;

void alert_service::match(const std::vector<news_item>& added,
                          const std::vector<site_report>& sites) {
  for (const auto& a : alerts_)
    for (const auto& item : added) {
      if (!a->query.matches(item))
        continue;
      a->matches.fetch_add(1, std::memory_order_relaxed);
      if (publish_)
        try {
          publish_(channel_of(a->cfg.name), match_json(item, a->cfg.name));
        } catch (const std::exception& e) {
          log_warn("msg=\"cannot publish an alert\" alert=" + logfmt_quoted(a->cfg.name) +
                   " error=" + logfmt_quoted(e.what()));
        }
      if (a->webhook)
        a->webhook->push(webhook_message_of(item, a->cfg.name, a->cfg.webhook->format,
                                            display_name(sites, item.headline.site)));
    }
}

std::vector<alert_stats> alert_service::stats() const {
  std::vector<alert_stats> out;
  for (const auto& a : alerts_) {
    alert_stats s{.name = a->cfg.name,
                  .matches = a->matches.load(std::memory_order_relaxed),
                  .has_webhook = a->webhook != nullptr};
    if (a->webhook)
      s.webhook = a->webhook->stats();
    out.push_back(std::move(s));
  }
  return out;
}

void alert_service::stop() {
  for (const auto& a : alerts_)
    if (a->webhook)
      a->webhook->stop();
}

} // namespace newsdesk::server::alerts
