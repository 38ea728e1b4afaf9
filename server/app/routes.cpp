#include "server/app/routes.hpp"

#include "server/core/log.hpp"
#include "server/http/static_files.hpp"
#include "server/news/feeds.hpp"
#include "server/news/news_page.hpp"
#include "server/news/news_query.hpp"
#include "server/news/news_service.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>

namespace newsdesk::server {

namespace {

http_response page_response(std::string content_type, std::string body) {
  http_response res;
  res.content_type = std::move(content_type);
  res.body = std::move(body);
  res.with_header("Cache-Control", "no-store");
  res.with_header("X-Content-Type-Options", "nosniff");
  return res;
}

// Scraped markup never reaches the page, but if a template edit ever let it, the browser would
// still refuse inline scripts and foreign resources.
constexpr const char* content_security_policy =
    "default-src 'none'; style-src 'self' 'unsafe-inline'; script-src 'self'; img-src 'self' "
    "data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// How long a rendered page is reused: its relative ages ("3 min ago") stay right to the minute.
constexpr std::chrono::seconds page_cache_lifetime{15};

// Host header characters allowed into feed URLs: a name or address and a port, nothing else.
bool plain_host(std::string_view host) {
  return !host.empty() && host.size() <= 255 && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '[' || c == ']';
  });
}

std::string sites_title(const news_snapshot& s) {
  std::string names;
  for (const auto& site : s.sites)
    names += (names.empty() ? "" : ", ") + site.display_name;
  return "newsdesk: " + (names.empty() ? std::string("no sites") : names);
}

} // namespace

routes::routes(news_service& news, std::shared_ptr<const news_page> page, const static_files& files,
               std::string public_url)
    : news_(news)
    , files_(files)
    , public_url_(std::move(public_url))
    , page_(std::move(page)) {
  while (!public_url_.empty() && public_url_.back() == '/')
    public_url_.pop_back();
}

void routes::set_page(std::shared_ptr<const news_page> page) {
  std::lock_guard lock(cache_mutex_);
  page_ = std::move(page);
  cached_body_.reset(); // rendered with the old template
}

std::shared_ptr<const news_page> routes::page() const {
  std::lock_guard lock(cache_mutex_);
  return page_;
}

void routes::add_json_endpoint(std::string path, std::function<std::string()> body) {
  json_endpoints_.emplace_back(std::move(path), std::move(body));
}

void routes::add_route(std::string path, request_handler handler) {
  routes_.emplace_back(std::move(path), std::move(handler));
}

std::string routes::base_url(const http_request& request) const {
  if (!public_url_.empty())
    return public_url_;
  auto host = request.header("Host");
  return "http://" + std::string(host && plain_host(*host) ? *host : std::string_view("localhost"));
}

void routes::handle(http_request request, responder respond) {
  const auto path = std::string(request.path());
  const bool readable = request.method == "GET" || request.method == "HEAD";
  const bool news_path =
      path == "/news" || path == "/news.json" || path == "/news.atom" || path == "/news.feed.json";

  if (path == "/api/refresh") {
    if (request.method != "POST")
      return respond(text_response(405).with_header("Allow", "POST"));
    return serve_refresh(request, std::move(respond));
  }
  for (auto& [p, handler] : routes_)
    if (p == path) {
      if (!readable)
        return respond(text_response(405).with_header("Allow", "GET, HEAD"));
      return handler(std::move(request), std::move(respond));
    }
  auto json_endpoint = std::find_if(json_endpoints_.begin(), json_endpoints_.end(),
                                    [&](const auto& e) { return e.first == path; });
  const bool known = news_path || path == "/" || path == "/healthz" ||
                     path.rfind("/static/", 0) == 0 || json_endpoint != json_endpoints_.end();
  if (!known)
    return respond(text_response(404));
  if (!readable)
    return respond(text_response(405).with_header("Allow", "GET, HEAD"));

  if (path == "/")
    return respond(text_response(302).with_header("Location", "/news"));
  if (path == "/healthz")
    return respond(page_response(json_content_type, "{\"status\":\"ok\"}\n"));
  if (path.rfind("/static/", 0) == 0)
    return respond(files_.serve(std::string_view(path).substr(8), request));
  if (json_endpoint != json_endpoints_.end())
    return respond(page_response(json_content_type, json_endpoint->second()));
  serve_news(request, path, std::move(respond));
}

std::shared_ptr<const memory_file>
routes::cached_page(const std::shared_ptr<const news_snapshot>& snapshot) {
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(cache_mutex_);
    if (cached_body_ && cached_version_ == snapshot->version &&
        now - cached_at_ < page_cache_lifetime)
      return cached_body_;
  }
  auto template_used = page();
  std::shared_ptr<const memory_file> body;
  try {
    body = memory_file::create(template_used->render(*snapshot));
  } catch (const std::system_error& e) {
    log_warn(std::string("msg=\"cannot keep the page in memory, rendering it per view\" error=\"") +
             e.what() + "\"");
    return nullptr;
  }
  std::lock_guard lock(cache_mutex_);
  if (template_used != page_)
    return body; // a reload came in meanwhile: do not cache a page from the old template
  cached_version_ = snapshot->version;
  cached_at_ = now;
  cached_body_ = body;
  return body;
}

void routes::serve_news(const http_request& request, const std::string& path, responder respond) {
  auto parsed = parse_news_query(request.query(), news_.snapshot()->sites);
  if (auto* error = std::get_if<std::string>(&parsed))
    return respond(text_response(400, "Bad Request: " + *error));
  auto query = std::get<news_query>(std::move(parsed));
  // Only the feeds name their own and the page's address; /news, the hot path, skips building
  // them.
  std::string self_url, page_url;
  if (path == "/news.atom" || path == "/news.feed.json") {
    self_url = base_url(request) + request.target;
    page_url = base_url(request) + "/news" +
               (request.query().empty() ? std::string() : "?" + std::string(request.query()));
  }

  news_.when_ready([this, path, query = std::move(query), self_url, page_url,
                    respond = std::move(respond)](std::shared_ptr<const news_snapshot> snapshot) {
    try {
      if (path == "/news") {
        http_response res;
        if (query.empty()) {
          res = page_response("text/html; charset=utf-8", {});
          res.file_body = cached_page(snapshot); // sent without a copy per view
          if (!res.file_body)
            res.body = page()->render(*snapshot);
        } else {
          res = page_response("text/html; charset=utf-8",
                              page()->render(apply_query(*snapshot, query), query));
        }
        res.with_header("Content-Security-Policy", content_security_policy);
        res.with_header("Referrer-Policy", "no-referrer");
        return respond(std::move(res));
      }
      auto view = apply_query(*snapshot, query);
      if (path == "/news.json")
        return respond(page_response(json_content_type, news_json(view)));

      std::map<std::string, const site_report*> sites;
      for (const auto& s : view.sites)
        sites[s.name] = &s;
      std::vector<feed_entry> entries;
      std::int64_t updated = 0;
      for (const auto& item : view.headlines) {
        const auto* site = sites.at(item.headline.site);
        auto last_seen = std::max(site->last_success_ms, item.first_seen_ms);
        entries.push_back({"", item.headline.title, item.headline.url, item.headline.site,
                           site->display_name, item.first_seen_ms, last_seen});
        updated = std::max(updated, last_seen);
      }
      // Newest first, as feed readers expect.
      std::stable_sort(entries.begin(), entries.end(),
                       [](const feed_entry& a, const feed_entry& b) {
                         return a.first_seen_ms > b.first_seen_ms;
                       });
      feed_info info{sites_title(view), self_url, page_url, updated};
      if (path == "/news.atom")
        return respond(
            page_response("application/atom+xml; charset=utf-8", atom_feed(info, entries)));
      respond(page_response("application/feed+json; charset=utf-8", json_feed(info, entries)));
    } catch (const std::exception& e) {
      log_error(std::string("msg=\"rendering failed\" path=") + path + " error=\"" + e.what() +
                "\"");
      respond(text_response(500));
    }
  });
}

void routes::serve_refresh(const http_request& request, responder respond) {
  std::optional<std::string> site;
  auto query = request.query();
  if (!query.empty()) {
    if (query.rfind("site=", 0) != 0 || query.find('&') != std::string_view::npos)
      return respond(text_response(400, "Bad Request: expected ?site=NAME or nothing"));
    site = form_decode(query.substr(5));
  }
  nlohmann::json started = nlohmann::json::array(), running = nlohmann::json::array(),
                 too_soon = nlohmann::json::array();
  for (const auto& [name, outcome] : news_.refresh_now(site)) {
    switch (outcome) {
    case news_service::trigger::started:
      started.push_back(name);
      break;
    case news_service::trigger::already_running:
      running.push_back(name);
      break;
    case news_service::trigger::too_soon:
      too_soon.push_back(name);
      break;
    case news_service::trigger::unknown_site:
      return respond(text_response(404, "Not Found: no such site"));
    }
  }
  nlohmann::json body = {
      {"started", started}, {"already_running", running}, {"rate_limited", too_soon}};
  auto res = page_response(json_content_type, body.dump() + "\n");
  res.status = started.empty() && running.empty() && !too_soon.empty() ? 429 : 202;
  if (res.status == 429)
    res.with_header("Retry-After", "10");
  respond(std::move(res));
}

} // namespace newsdesk::server
