// The news service's changes as the embedded broker carries them to network subscribers (the
// frame protocol and MQTT): the application hands it each update, after the live events.
#pragma once

#include "server/news/site_change.hpp"

#include <mutex>
#include <string>
#include <unordered_set>

namespace newsdesk::broker {
class server;
}

namespace newsdesk::server {

class headline_publisher {
 public:
  explicit headline_publisher(broker::server& broker)
      : broker_(broker) {}

  // Publishes what `update` added (each headline's JSON made once):
  //   /topic/headlines                  the added headlines, one array per update
  //   newsdesk/headlines/<site>         each headline, the site's latest retained
  //   newsdesk/stories/<id>             a headline that joined a story another one started
  // and keeps each site's newest headline retained the first time the site has any. Each kind
  // goes on its own: one the broker refuses (a batch over its frame size) keeps the others.
  // Safe to call from any thread.
  void publish(const headline_update& update);

 private:
  void retain_first_headlines(const headline_update& update);

  broker::server& broker_;
  std::mutex retained_mutex_;
  std::unordered_set<std::string> retained_sites_; // sites with a retained headline
};

} // namespace newsdesk::server
