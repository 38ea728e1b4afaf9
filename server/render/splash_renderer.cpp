#include "server/render/splash_renderer.hpp"
#include "server/render/render_support.hpp"

#include "server/render/http_client.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace newsdesk::server {

std::string_view to_string(render_failure f) {
  switch (f) {
  case render_failure::none:
    return "none";
  case render_failure::unreachable:
    return "unreachable";
  case render_failure::timeout:
    return "timeout";
  case render_failure::rejected:
    return "rejected";
  case render_failure::upstream:
    return "upstream";
  case render_failure::empty:
    return "empty";
  case render_failure::too_large:
    return "too_large";
  }
  return "unknown";
}

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
      return render_failed(render_failure::empty,
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
      return render_failed(render_failure::rejected,
                           "Splash rejected the request: '" + argument + "' is missing");
    if (!argument.empty())
      return render_failed(render_failure::rejected,
                           "Splash rejected the request: bad value for '" + argument + "'");
    return render_failed(render_failure::rejected, "Splash rejected the request (400)");
  }
  case 502: {
    auto text = string_field(info, "text");
    if (text.empty())
      text = string_field(error, "description");
    return render_failed(render_failure::upstream,
                         "Splash could not load the page" +
                             (text.empty() ? std::string{} : ": " + text));
  }
  case 503:
    return render_failed(render_failure::upstream, "Splash is overloaded (503)");
  case 504: {
    double limit = seconds_of(request.timeout);
    if (info.is_object() && info.contains("timeout") && info["timeout"].is_number())
      limit = info["timeout"].get<double>();
    return render_failed(render_failure::timeout,
                         "Splash timed out after " + format_seconds(limit) + " s");
  }
  case 520:
    return render_failed(render_failure::upstream, "Splash cancelled the render");
  case 404:
    return render_failed(render_failure::unreachable,
                         "Splash answered 404: is SPLASH_URL pointing at a Splash server?");
  default:
    return render_failed(render_failure::upstream, "Splash answered HTTP " +
                                                       std::to_string(status) +
                                                       (type.empty() ? "" : " (" + type + ")"));
  }
}

splash_renderer::splash_renderer(http_client& client, std::string splash_url)
    : client_(client)
    , base_(std::move(splash_url)) {}

void splash_renderer::render(render_request request, std::function<void(render_result)> done) {
  http_fetch_options options;
  options.timeout = request.timeout + grace_for(request.timeout);
  auto url = splash_render_url(base_, request);
  client_.get(
      url, std::move(options),
      [this, request = std::move(request), done = std::move(done)](http_fetch_result answer) {
        render_result result;
        switch (answer.failure) {
        case fetch_failure::none:
          result = interpret_splash_answer(answer.status, std::move(answer.body), request);
          break;
        case fetch_failure::timeout:
          result = render_failed(
              render_failure::timeout,
              "Splash did not answer within " +
                  format_seconds(seconds_of(request.timeout + grace_for(request.timeout))) + " s");
          break;
        case fetch_failure::too_large:
          result = render_failed(render_failure::too_large, "page too large: " + answer.error);
          break;
        case fetch_failure::resolve:
        case fetch_failure::connect:
        case fetch_failure::bad_url:
        case fetch_failure::tls:
          result = render_failed(render_failure::unreachable,
                                 "cannot reach Splash at " + base_ + " (" + answer.error + ")");
          break;
        default:
          result =
              render_failed(render_failure::upstream, "Splash connection failed: " + answer.error);
        }
        result.elapsed = answer.elapsed;
        done(std::move(result));
      });
}

} // namespace newsdesk::server
