// Fetches a site's page itself, without running JavaScript: for machines without Splash and
// for sites that serve their headlines in plain HTML. Follows redirects (http and https only),
// all within the request's one deadline.
//
// The same fetch reads feeds (the "feed" renderer): it asks for feed types and polls
// conditionally, keeping each feed's ETag, Last-Modified and body, so a feed that has not
// changed answers 304 and costs its server no body.
#pragma once

#include "server/render/renderer.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace newsdesk::server {

class http_client;
struct renderer_descriptor;

// Its registrations (renderers.cpp): direct, always made, the automatic choice when nothing else
// is available; and feed, always made, which feed sites choose.
const renderer_descriptor& direct_descriptor();
const renderer_descriptor& feed_descriptor();

class direct_renderer final : public renderer {
 public:
  enum class mode { page, feed };
  explicit direct_renderer(http_client& client, mode m = mode::page)
      : client_(client)
      , mode_(m) {}

  std::string_view name() const override;
  void render(render_request request, std::function<void(render_result)> done) override;

  // Browsers stop at 20; news sites use one or two (http -> https -> www). Five catches loops
  // without giving up on a real chain.
  static constexpr int max_redirects = 5;
  // Feeds remembered for conditional polling; past this, an arbitrary one is forgotten (it is
  // then fetched whole once). A newsdesk reads tens of feeds, not thousands.
  static constexpr std::size_t max_remembered_feeds = 1000;

  // Polls answered 304 Not Modified (feed mode).
  std::uint64_t not_modified() const { return not_modified_; }

  // What a feed's last full answer said, for the next conditional poll.
  struct remembered_feed {
    std::string etag;
    std::string last_modified;
    std::string body;
    std::string url;          // where it ended after redirects: the base of its links
    std::string content_type; // as the full answer gave it: a 304 repeats the body, not it
  };
  // Conditional GET bookkeeping, used by the fetch in direct_renderer.cpp.
  std::optional<remembered_feed> recall(const std::string& url) const;
  void remember(const std::string& url, remembered_feed feed);
  void count_not_modified() { ++not_modified_; }
  bool conditional() const { return mode_ == mode::feed; }

 private:
  http_client& client_;
  mode mode_;
  mutable std::mutex mutex_;
  std::map<std::string, remembered_feed> feeds_; // by the URL asked for
  std::atomic<std::uint64_t> not_modified_{0};
};

} // namespace newsdesk::server
