#include "server/app/headline_publisher.hpp"

#include "broker/broker.hpp"
#include "server/core/log.hpp"
#include "server/news/headline.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace newsdesk::server {

namespace {

// The topic new headlines go out on, for any broker client to follow.
constexpr std::string_view headlines_topic = "/topic/headlines";
// Each site's headlines, one message each, the latest retained: MQTT's newsdesk/headlines/<site>
// (the broker maps MQTT topic T to channel /topic/T; only newsdesk may publish under it).
constexpr std::string_view site_headlines_prefix = "/topic/newsdesk/headlines/";
// A story's growth, when a new headline joins a story another one started: MQTT's
// newsdesk/stories/<id>, not retained (one topic per story ever told would fill the retained
// store; the story's state is in /news.json?story=ID).
constexpr std::string_view story_prefix = "/topic/newsdesk/stories/";

template <class Publish> void publish_or_warn(const char* what, Publish&& publish) {
  try {
    publish();
  } catch (const std::exception& e) {
    log_warn(std::string("msg=\"cannot publish ") + what + "\" error=" + logfmt_quoted(e.what()));
  }
}

} // namespace

void headline_publisher::publish(const headline_update& update) {
  if (!update.added.empty()) {
    std::vector<std::string> json;
    json.reserve(update.added.size());
    for (const auto& item : update.added)
      json.push_back(headline_json(item));
    publish_or_warn("headlines", [&] {
      std::string batch = "[";
      for (const auto& one : json)
        batch.append(batch.size() > 1 ? "," : "").append(one);
      broker_.publish(headlines_topic, batch + "]");
    });
    publish_or_warn("site headlines", [&] {
      // Ids ascend, so each site's last one, the one kept, is its latest.
      for (std::size_t i = 0; i < json.size(); ++i)
        broker_.publish_retained(std::string(site_headlines_prefix) + update.added[i].headline.site,
                                 json[i]);
    });
    publish_or_warn("story updates", [&] {
      for (std::size_t i = 0; i < json.size(); ++i) {
        const auto& item = update.added[i];
        if (auto found = update.story_sources.find(item.story);
            found != update.story_sources.end() && item.story != item.id)
          broker_.publish(std::string(story_prefix) + std::to_string(item.story),
                          story_update_json(item.story, json[i], found->second));
      }
    });
  }
  retain_first_headlines(update);
}

// A site's first refresh is shown, not announced (nothing is published for it), yet an MQTT
// subscriber should see every site at once: each site's newest headline is kept as its retained
// message, without publishing it, the first time the site has headlines. Later ones replace it
// as they are published. Only the sites the update changed are looked at: with thousands of
// sites, a look at every headline held per update made a cold start quadratic.
void headline_publisher::retain_first_headlines(const headline_update& update) {
  std::lock_guard lock(retained_mutex_);
  for (const auto& item : update.added)
    retained_sites_.insert(item.headline.site);
  for (const auto& items : update.changed_sites) {
    if (items->empty() || retained_sites_.contains(items->front().headline.site))
      continue;
    const auto& newest =
        *std::max_element(items->begin(), items->end(),
                          [](const news_item& a, const news_item& b) { return a.id < b.id; });
    const auto& site = newest.headline.site;
    try {
      broker_.retain(std::string(site_headlines_prefix) + site, headline_json(newest));
      retained_sites_.insert(site);
    } catch (const std::exception& e) {
      log_warn("msg=\"cannot keep a retained headline\" site=" + logfmt_quoted(site) +
               " error=" + logfmt_quoted(e.what()));
    }
  }
}

} // namespace newsdesk::server
