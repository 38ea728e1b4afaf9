#include "server/render/splash_renderer.hpp"
#include "server/render/render_support.hpp"

#include "scrapers/url.hpp"
#include "server/core/log.hpp"
#include "server/render/http_client.hpp"
#include "server/render/renderer_descriptor.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>

namespace newsdesk::server {

std::string format_seconds(double seconds) {
  char buf[32];
  if (std::fabs(seconds - std::round(seconds)) < 0.005)
    std::snprintf(buf, sizeof buf, "%.0f", seconds);
  else
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
  return buf;
}

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

std::string param_seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", seconds_of(ms));
  return buf;
}

} // namespace

std::string splash_render_url(std::string_view splash_url, const render_request& request) {
  std::string url(splash_url);
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  url += "/render.html?url=" + percent_encode(request.url);
  url += "&timeout=" + param_seconds(request.timeout);
  url += "&wait=" + param_seconds(request.wait);
  url += "&images=0"; // headlines are text; skipping images makes renders faster
  return url;
}

bool is_empty_page(std::string_view html) {
  auto lower_find = [&](std::string_view needle, std::size_t from) {
    for (std::size_t i = from; i + needle.size() <= html.size(); ++i) {
      bool match = true;
      for (std::size_t k = 0; k < needle.size() && match; ++k)
        match = std::tolower(static_cast<unsigned char>(html[i + k])) == needle[k];
      if (match)
        return i;
    }
    return std::string_view::npos;
  };
  auto blank = [](std::string_view s) {
    return s.find_first_not_of(" \t\r\n\f") == std::string_view::npos;
  };
  if (blank(html))
    return true;
  auto open = lower_find("<body", 0);
  if (open == std::string_view::npos)
    return false;
  auto content = html.find('>', open);
  auto close = lower_find("</body", open);
  if (content == std::string_view::npos || close == std::string_view::npos || close < content)
    return false;
  return blank(html.substr(content + 1, close - content - 1));
}

render_result interpret_splash_answer(unsigned status, std::string body,
                                      const render_request& request) {
  if (status == 200) {
    if (is_empty_page(body))
      return render_failed(failure_kind::empty,
                           "Splash returned an empty page (is the site's URL right?)");
    render_result ok;
    ok.html = std::move(body);
    ok.url = request.url;
    return ok;
  }
  // Splash's errors are JSON: {"error": N, "type": ..., "description": ..., "info": {...}}.
  auto error = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto type = string_field(error, "type");
  nlohmann::json info =
      error.is_object() && error.contains("info") ? error["info"] : nlohmann::json{};

  switch (status) {
  case 400: {
    auto argument = string_field(info, "argument");
    if (string_field(info, "type") == "argument_required")
      return render_failed(failure_kind::renderer_refused,
                           "Splash rejected the request: '" + argument + "' is missing");
    if (!argument.empty())
      return render_failed(failure_kind::renderer_refused,
                           "Splash rejected the request: bad value for '" + argument + "'");
    return render_failed(failure_kind::renderer_refused, "Splash rejected the request (400)");
  }
  case 502: {
    auto text = string_field(info, "text");
    if (text.empty())
      text = string_field(error, "description");
    return render_failed(failure_kind::site_unreachable,
                         "Splash could not load the page" +
                             (text.empty() ? std::string{} : ": " + text));
  }
  case 503:
    return render_failed(failure_kind::renderer_busy, "Splash is overloaded (503)");
  case 504: {
    double limit = seconds_of(request.timeout);
    if (info.is_object() && info.contains("timeout") && info["timeout"].is_number())
      limit = info["timeout"].get<double>();
    return render_failed(failure_kind::timeout,
                         "Splash timed out after " + format_seconds(limit) + " s");
  }
  case 520:
    return render_failed(failure_kind::renderer_error, "Splash cancelled the render");
  case 404:
    return render_failed(failure_kind::renderer_down,
                         "Splash answered 404: is SPLASH_URL pointing at a Splash server?");
  default:
    return render_failed(failure_kind::renderer_error, "Splash answered HTTP " +
                                                           std::to_string(status) +
                                                           (type.empty() ? "" : " (" + type + ")"));
  }
}

namespace {

// Run by Splash's /execute for every render. Unlike render.html it reports only the main
// document's fate: a subframe that fails (an advert's host) no longer fails the site, and the
// site's own HTTP status comes back, so a 404 is reported as one rather than as a page with no
// headlines. splash:go returns nil and a reason ("http404", "network3") when the main document
// fails; the status is that of the last main-frame response.
constexpr std::string_view execute_script = R"lua(
function main(splash, args)
  splash.images_enabled = false
  local ok, reason = splash:go(args.url)
  if ok then
    splash:wait(args.wait)
  end
  local status
  local entries = splash:history()
  if #entries > 0 and entries[#entries].response then
    status = entries[#entries].response.status
  end
  return {html = splash:html(), url = splash:url(), status = status, error = reason}
end
)lua";

// Qt's network error codes, as splash:go reports them ("network3"), in words.
std::string network_error_text(std::string_view reason) {
  int code = 0;
  auto digits = reason.substr(std::string_view("network").size());
  std::from_chars(digits.data(), digits.data() + digits.size(), code);
  switch (code) {
  case 1:
    return "Connection refused";
  case 2:
    return "the server closed the connection";
  case 3:
    return "host not found";
  case 4:
    return "the connection timed out";
  case 5:
    return "the load was cancelled";
  case 6:
    return "TLS handshake failed";
  case 301:
    return "unsupported address";
  default:
    return "network error " + std::to_string(code);
  }
}

// After /execute answered 404, renders use render.html and try /execute again this often, so a
// Splash restarted with Lua enabled is used without restarting newsdesk.
constexpr auto execute_retry_interval = std::chrono::minutes(10);

} // namespace

std::string splash_execute_body(const render_request& request) {
  nlohmann::json body = {{"lua_source", execute_script},
                         {"url", request.url},
                         {"wait", seconds_of(request.wait)},
                         {"timeout", seconds_of(request.timeout)}};
  return body.dump();
}

render_result interpret_splash_execute_answer(unsigned status, std::string body,
                                              const render_request& request) {
  if (status != 200) {
    auto error = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (status == 400 && string_field(error, "type") == "ScriptError") {
      nlohmann::json info =
          error.contains("info") ? error["info"] : nlohmann::json{}; // is_object: type matched
      auto message = string_field(info, "message");
      return render_failed(failure_kind::renderer_refused,
                           "Splash could not run newsdesk's render script" +
                               (message.empty() ? std::string{} : ": " + message));
    }
    return interpret_splash_answer(status, std::move(body), request);
  }
  auto answer = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object())
    return render_failed(failure_kind::renderer_error,
                         "Splash's answer is not the JSON newsdesk asked for");
  int site_status = 0;
  if (auto it = answer.find("status"); it != answer.end() && it->is_number_integer())
    site_status = it->get<int>();
  auto reason = string_field(answer, "error");
  auto html = string_field(answer, "html");
  if (site_status >= 400)
    return render_failed(site_status == 404 ? failure_kind::not_found : failure_kind::site_error,
                         "the site answered HTTP " + std::to_string(site_status));
  if (reason.rfind("network", 0) == 0)
    return render_failed(failure_kind::site_unreachable,
                         "Splash could not load the page: " + network_error_text(reason));
  if (!reason.empty() && is_empty_page(html))
    return render_failed(failure_kind::site_unreachable,
                         "Splash could not load the page: " + reason);
  if (is_empty_page(html))
    return render_failed(failure_kind::empty,
                         "Splash returned an empty page (is the site's URL right?)");
  render_result ok;
  ok.html = std::move(html);
  auto final_url = string_field(answer, "url");
  ok.url = scrapers::url::is_http_url(final_url) ? final_url : request.url;
  return ok;
}

splash_renderer::splash_renderer(http_client& client, std::string splash_url)
    : client_(client)
    , base_(std::move(splash_url)) {
  while (!base_.empty() && base_.back() == '/')
    base_.pop_back();
}

bool splash_renderer::use_execute() const {
  auto missing = execute_missing_since_.load();
  return missing == 0 || std::chrono::steady_clock::now().time_since_epoch().count() - missing >
                             std::chrono::steady_clock::duration(execute_retry_interval).count();
}

void splash_renderer::render(render_request request, std::function<void(render_result)> done) {
  if (!use_execute())
    return render_html(std::move(request), std::move(done));
  http_fetch_options options;
  options.timeout = request.timeout + grace_for(request.timeout);
  options.use_proxy = false; // the operator's own service, beside newsdesk
  auto body = splash_execute_body(request);
  client_.post(base_ + "/execute", "application/json", std::move(body), std::move(options),
               [this, request = std::move(request),
                done = std::move(done)](http_fetch_result answer) mutable {
                 if (answer.ok() && answer.status == 404) {
                   // No /execute: Splash runs with --disable-lua (or this is not Splash, which
                   // render.html's own 404 will say).
                   if (execute_missing_since_.exchange(
                           std::chrono::steady_clock::now().time_since_epoch().count()) == 0)
                     log_warn("msg=\"splash has no /execute (Lua disabled?); rendering with "
                              "render.html\" effect=\"a failing subframe fails the site and a "
                              "site's 404 looks like a page without headlines\"");
                   return render_html(std::move(request), std::move(done));
                 }
                 execute_missing_since_ = 0;
                 finish(std::move(answer), request, done, interpret_splash_execute_answer);
               });
}

void splash_renderer::render_html(render_request request, std::function<void(render_result)> done) {
  http_fetch_options options;
  options.timeout = request.timeout + grace_for(request.timeout);
  options.use_proxy = false; // the operator's own service, beside newsdesk
  auto url = splash_render_url(base_, request);
  client_.get(
      url, std::move(options),
      [this, request = std::move(request), done = std::move(done)](http_fetch_result answer) {
        finish(std::move(answer), request, done, interpret_splash_answer);
      });
}

void splash_renderer::finish(http_fetch_result answer, const render_request& request,
                             const std::function<void(render_result)>& done,
                             render_result (*interpret)(unsigned, std::string,
                                                        const render_request&)) const {
  render_result result;
  switch (answer.failure) {
  case fetch_failure::none:
    result = interpret(answer.status, std::move(answer.body), request);
    break;
  case fetch_failure::timeout:
    result = render_failed(
        failure_kind::timeout,
        "Splash did not answer within " +
            format_seconds(seconds_of(request.timeout + grace_for(request.timeout))) + " s");
    break;
  case fetch_failure::too_large:
    result = render_failed(failure_kind::too_large, "page too large: " + answer.error);
    break;
  case fetch_failure::resolve:
  case fetch_failure::connect:
  case fetch_failure::bad_url:
  case fetch_failure::tls:
    result = render_failed(failure_kind::renderer_down,
                           "cannot reach Splash at " + base_ + " (" + answer.error + ")");
    break;
  default:
    result =
        render_failed(failure_kind::renderer_down, "Splash connection failed: " + answer.error);
  }
  result.elapsed = answer.elapsed;
  done(std::move(result));
}

namespace {
constexpr std::string_view splash_name = "splash";
} // namespace

std::string_view splash_renderer::name() const {
  return splash_name;
}

const renderer_descriptor& splash_descriptor() {
  static const renderer_descriptor descriptor{
      .name = splash_name,
      .proper_name = "Splash",
      .automatic = true,
      .available_when = "when a Splash URL is set",
      .options = splash_options{},
      .rows = option_rows<splash_options>({
          settings::field(&splash_options::url,
                          {.path = "splash_url",
                           .flag = "--splash-url URL",
                           .alias = "SPLASH_URL",
                           .help = "Splash's address, e.g. http://splash:8050"}),
          settings::field(&splash_options::max_timeout,
                          {.path = "splash_max_timeout",
                           .unit = "seconds",
                           .min = 0.001,
                           .help = "Splash's --max-timeout: sites may not ask for longer renders"}),
      }),
      .resolve =
          [](renderer_options& all) {
            const auto& url = all.of<splash_options>().url;
            if (!url.empty() && !scrapers::url::is_http_url(url))
              throw settings::error("splash_url: expected an http:// or https:// URL, got '" + url +
                                    "'");
          },
      .missing =
          [](const renderer_options& all) {
            return all.of<splash_options>().url.empty() ? "no splash_url or SPLASH_URL is set"
                                                        : std::string();
          },
      .refuse_timeout =
          [](const renderer_options& all, double timeout) {
            const double most = all.of<splash_options>().max_timeout;
            return timeout > most ? "Splash refuses timeouts above its --max-timeout (" +
                                        format_seconds(most) + " s, splash_max_timeout)"
                                  : std::string();
          },
      .address = [](const renderer_options& all) { return all.of<splash_options>().url; },
      .make = [](const renderer_context& context,
                 const renderer_options& all) -> std::unique_ptr<renderer> {
        return std::make_unique<splash_renderer>(context.client, all.of<splash_options>().url);
      },
  };
  return descriptor;
}

} // namespace newsdesk::server
