#include "server/render/browserless_renderer.hpp"
#include "server/render/render_support.hpp"

#include "server/render/cdp_client.hpp"
#include "server/render/renderer_descriptor.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <nlohmann/json.hpp>

#include <charconv>

namespace newsdesk::server {

namespace {

constexpr std::string_view browserless_name = "browserless";

// The same cap as the other renderers: a front page runs to ~4 MB.
constexpr std::size_t max_page_bytes = 16 * 1024 * 1024;

std::string header_of(const header_list& headers, std::string_view name) {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return {};
}

// browserless's errors are short plain text ("Timed out", "net::ERR_NAME_NOT_RESOLVED at ...");
// the first line, capped, reads well in a notice.
std::string snippet(std::string_view body) {
  auto line = body.substr(0, body.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
    line.remove_suffix(1);
  if (line.size() > 160)
    return std::string(line.substr(0, 160)) + "...";
  return std::string(line);
}

} // namespace

std::string browserless_content_url(const std::string& base_url, const render_request& request) {
  std::string base = base_url;
  std::string query;
  if (auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q + 1);
    base.erase(q);
  }
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  std::string url = base + "/content?timeout=" + std::to_string(request.timeout.count());
  if (!query.empty())
    url += "&" + query;
  return url;
}

std::string browserless_request_body(const render_request& request) {
  nlohmann::json body = {
      {"url", request.url},
      {"gotoOptions", {{"waitUntil", "load"}, {"timeout", request.timeout.count()}}},
      {"waitForTimeout", request.wait.count()},
      // Headlines are text; images only slow the render down.
      {"rejectResourceTypes", {"image", "media", "font"}}};
  return body.dump();
}

render_result interpret_browserless_answer(unsigned status, const header_list& headers,
                                           std::string body, const render_request& request) {
  if (status == 200) {
    auto code_text = header_of(headers, "X-Response-Code");
    int code = 0;
    std::from_chars(code_text.data(), code_text.data() + code_text.size(), code);
    if (code >= 400)
      return render_failed(code == 404 ? failure_kind::not_found : failure_kind::site_error,
                           "site answered HTTP " + std::to_string(code));
    if (body.size() > max_page_bytes)
      return render_failed(failure_kind::too_large,
                           "page too large: " + std::to_string(body.size()) + " bytes");
    if (is_empty_page(body))
      return render_failed(failure_kind::empty, "browserless returned an empty page");
    render_result ok;
    ok.html = std::move(body);
    ok.url = header_of(headers, "X-Response-URL");
    if (ok.url.empty())
      ok.url = request.url;
    return ok;
  }
  auto text = snippet(body);
  auto with_text = [&](std::string message) {
    return text.empty() ? message : message + ": " + text;
  };
  switch (status) {
  case 400:
    return render_failed(failure_kind::renderer_refused,
                         with_text("browserless rejected the request"));
  case 401:
  case 403:
    return render_failed(failure_kind::renderer_refused,
                         "browserless refused the request (HTTP " + std::to_string(status) +
                             "): is the token in browserless_url right?");
  case 404:
    return render_failed(
        failure_kind::renderer_down,
        "browserless answered 404: is browserless_url pointing at a browserless server?");
  case 408:
    return render_failed(failure_kind::timeout, "browserless timed out after " +
                                                    format_seconds(seconds_of(request.timeout)) +
                                                    " s");
  case 429:
  case 503:
    return render_failed(failure_kind::renderer_busy,
                         "browserless is at capacity (" + std::to_string(status) + ")");
  default:
    // Chromium's navigation errors (net::ERR_NAME_NOT_RESOLVED, ...) come back as a 500 that
    // quotes them: the site, not browserless, failed.
    return render_failed(text.find("net::ERR_") != std::string::npos
                             ? failure_kind::site_unreachable
                             : failure_kind::renderer_error,
                         with_text("browserless answered HTTP " + std::to_string(status)));
  }
}

browserless_renderer::browserless_renderer(boost::asio::io_context& ioc, std::string base_url)
    : ioc_(ioc)
    , base_(std::move(base_url)) {}

void browserless_renderer::render(render_request request, std::function<void(render_result)> done) {
  auto limit = request.timeout + grace_for(request.timeout);
  auto url = browserless_content_url(base_, request);
  auto body = browserless_request_body(request);
  cdp::http_post(
      boost::asio::make_strand(ioc_), url, "application/json", std::move(body), limit,
      max_page_bytes + 1,
      [this, limit, request = std::move(request), done = std::move(done)](cdp::post_result answer) {
        render_result result;
        if (answer.ok)
          result = interpret_browserless_answer(answer.status, answer.headers,
                                                std::move(answer.body), request);
        else if (answer.timed_out)
          result =
              render_failed(failure_kind::timeout, "browserless did not answer within " +
                                                       format_seconds(seconds_of(limit)) + " s");
        else if (answer.error.find("too large") != std::string::npos)
          result = render_failed(failure_kind::too_large, "page too large: " + answer.error);
        else
          result =
              render_failed(failure_kind::renderer_down,
                            "cannot reach browserless at " + base_ + " (" + answer.error + ")");
        result.elapsed = answer.elapsed;
        done(std::move(result));
      });
}

std::string_view browserless_renderer::name() const {
  return browserless_name;
}

const renderer_descriptor& browserless_descriptor() {
  static const renderer_descriptor descriptor{
      .name = browserless_name,
      .options = browserless_options{},
      .rows = option_rows<browserless_options>({
          settings::field(&browserless_options::url,
                          {.path = "browserless_url",
                           .flag = "--browserless-url URL",
                           .alias = "BROWSERLESS_URL",
                           .help = "a browserless server, e.g. http://browserless:3000"}),
      }),
      .resolve =
          [](renderer_options& all) {
            // The client speaks plain HTTP only: browserless runs as a local container.
            const auto& url = all.of<browserless_options>().url;
            if (!url.empty() && url.rfind("http://", 0) != 0)
              throw settings::error("browserless_url: expected an http:// URL, got '" + url + "'");
          },
      .missing =
          [](const renderer_options& all) {
            return all.of<browserless_options>().url.empty()
                       ? "no browserless_url or BROWSERLESS_URL is set"
                       : std::string();
          },
      .address = [](const renderer_options& all) { return all.of<browserless_options>().url; },
      .make = [](const renderer_context& context,
                 const renderer_options& all) -> std::unique_ptr<renderer> {
        return std::make_unique<browserless_renderer>(context.ioc,
                                                      all.of<browserless_options>().url);
      },
  };
  return descriptor;
}

} // namespace newsdesk::server
