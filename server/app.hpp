// newsdesk's routes: the pages people open and the endpoints operators probe.
//   GET /            -> 302 to /news
//   GET /news        -> the headlines page (HTML)
//   GET /news.json   -> the same data as JSON
//   GET /static/...  -> files from the static folder
//   GET /healthz     -> {"status":"ok"} while the process serves
//   GET /api/broker  -> the broker's counters (when the broker runs)
// HEAD works wherever GET does; other methods get 405 with Allow, unknown paths 404.
#pragma once

#include "server/http_message.hpp"

#include <functional>
#include <string>

namespace newsdesk::server {

class news_service;
class news_page;
class static_files;

class app {
 public:
  app(news_service& news, const news_page& page, const static_files& files)
      : news_(news)
      , page_(page)
      , files_(files) {}

  // Adds GET `path` answering with JSON from `body` (for component status endpoints).
  void add_json_endpoint(std::string path, std::function<std::string()> body);

  void handle(http_request request, responder respond);

 private:
  news_service& news_;
  const news_page& page_;
  const static_files& files_;
  std::vector<std::pair<std::string, std::function<std::string()>>> json_endpoints_;
};

} // namespace newsdesk::server
