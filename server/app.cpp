#include "server/app.hpp"

#include "server/log.hpp"
#include "server/news_page.hpp"
#include "server/news_service.hpp"
#include "server/static_files.hpp"

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

} // namespace

void app::add_json_endpoint(std::string path, std::function<std::string()> body) {
  json_endpoints_.emplace_back(std::move(path), std::move(body));
}

void app::handle(http_request request, responder respond) {
  const auto path = std::string(request.path());
  const bool readable = request.method == "GET" || request.method == "HEAD";

  auto route_exists = [&] {
    if (path == "/" || path == "/news" || path == "/news.json" || path == "/healthz" ||
        path.rfind("/static/", 0) == 0)
      return true;
    for (const auto& [p, body] : json_endpoints_)
      if (p == path)
        return true;
    return false;
  };
  if (!route_exists())
    return respond(text_response(404));
  if (!readable)
    return respond(text_response(405).with_header("Allow", "GET, HEAD"));

  if (path == "/")
    return respond(text_response(302).with_header("Location", "/news"));
  if (path == "/healthz")
    return respond(page_response("application/json", "{\"status\":\"ok\"}\n"));
  if (path.rfind("/static/", 0) == 0)
    return respond(files_.serve(std::string_view(path).substr(8), request));
  for (const auto& [p, body] : json_endpoints_)
    if (p == path)
      return respond(page_response("application/json", body()));

  const bool as_json = path == "/news.json";
  news_.collect(
      [this, as_json, respond = std::move(respond)](std::shared_ptr<const news_snapshot> snapshot) {
        if (as_json)
          return respond(page_response("application/json", news_json(*snapshot)));
        try {
          auto res = page_response("text/html; charset=utf-8", page_.render(*snapshot));
          res.with_header("Content-Security-Policy", content_security_policy);
          res.with_header("Referrer-Policy", "no-referrer");
          respond(std::move(res));
        } catch (const std::exception& e) {
          log_error(std::string("msg=\"rendering the page failed\" error=\"") + e.what() + "\"");
          respond(text_response(500));
        }
      });
}

} // namespace newsdesk::server
