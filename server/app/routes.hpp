// newsdesk's routes: the pages people open and the endpoints operators probe.
//   GET /                -> 302 to /news
//   GET /news            -> the headlines page (HTML)
//   GET /news.json       -> the same data as JSON
//   GET /news.atom       -> Atom 1.0 feed
//   GET /news.feed.json  -> JSON Feed 1.1
//       (all four take ?site=a,b&q=words&limit=N)
//   POST /api/refresh[?site=NAME] -> refresh now (rate limited per site)
//   GET /static/...      -> files from the static folder
//   GET /healthz         -> {"status":"ok"} while the process serves
//   GET /api/broker      -> the broker's counters (when the broker runs)
// HEAD works wherever GET does; other methods get 405 with Allow, unknown paths 404.
#pragma once

#include "server/http/http_message.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace newsdesk::server {

class news_service;
class news_page;
class static_files;
struct news_snapshot;

class routes {
 public:
  // `public_url` ("https://news.example.org") makes feed links absolute; empty: taken from
  // the request's Host header.
  routes(news_service& news, std::shared_ptr<const news_page> page, const static_files& files,
         std::string public_url = {});

  // Serves pages from `page` from now on (a template reload). Thread-safe.
  void set_page(std::shared_ptr<const news_page> page);

  // Adds GET `path` answering with JSON from `body` (for component status endpoints).
  void add_json_endpoint(std::string path, std::function<std::string()> body);
  // Adds a route handled elsewhere (e.g. the /events stream); it gets the whole request.
  void add_route(std::string path, request_handler handler);

  void handle(http_request request, responder respond);

 private:
  void serve_news(const http_request& request, const std::string& path, responder respond);
  void serve_refresh(const http_request& request, responder respond);
  std::string base_url(const http_request& request) const;
  std::shared_ptr<const news_page> page() const;
  std::shared_ptr<const memory_file>
  cached_page(const std::shared_ptr<const news_snapshot>& snapshot);

  news_service& news_;
  const static_files& files_;
  std::string public_url_;
  std::vector<std::pair<std::string, std::function<std::string()>>> json_endpoints_;
  std::vector<std::pair<std::string, request_handler>> routes_;

  // The unfiltered page is rendered once per snapshot (and at most every few seconds, so its
  // "updated 3 min ago" texts stay true) and served from here.
  mutable std::mutex cache_mutex_; // guards page_ and the cache
  std::shared_ptr<const news_page> page_;
  std::uint64_t cached_version_ = 0;
  std::chrono::steady_clock::time_point cached_at_;
  std::shared_ptr<const memory_file> cached_body_;
};

} // namespace newsdesk::server
