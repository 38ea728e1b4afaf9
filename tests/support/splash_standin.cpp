#include "tests/support/splash_standin.hpp"

#include "server/http/http_message.hpp"
#include "server/http/http_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace newsdesk::testing {

namespace net = boost::asio;
using server::http_request;
using server::http_response;
using server::responder;
using json = nlohmann::json;

std::string read_file(const std::string& path, bool* found) {
  std::ifstream in(path, std::ios::binary);
  if (found)
    *found = static_cast<bool>(in);
  if (!in)
    return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string serve_files(splash_standin& standin, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    bool found = false;
    if (eq != std::string::npos) {
      auto html = read_file(arg.substr(eq + 1), &found);
      if (found)
        standin.set(arg.substr(0, eq), standin_page::page(std::move(html)));
    }
    if (!found)
      return arg;
  }
  return {};
}

namespace {

std::map<std::string, std::string> parse_query(std::string_view query) {
  std::map<std::string, std::string> params;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    auto eq = pair.find('=');
    params[server::form_decode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : server::form_decode(pair.substr(eq + 1));
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
  }
  return params;
}

http_response json_error(unsigned status, const json& body) {
  http_response res;
  res.status = status;
  res.content_type = "application/json";
  res.body = body.dump();
  return res;
}

// render.html's 502 for a page (or one of its frames) the engine could not load.
http_response network_error(int code, const std::string& text, const std::string& url) {
  return json_error(
      502, {{"error", 502},
            {"type", "RenderError"},
            {"description", "Error rendering page"},
            {"info", {{"type", "Network"}, {"code", code}, {"text", text}, {"url", url}}}});
}

http_response bad_option(const std::string& argument, const std::string& type,
                         const std::string& description) {
  return json_error(
      400, {{"error", 400},
            {"type", "BadOption"},
            {"description", "Incorrect HTTP API arguments"},
            {"info", {{"type", type}, {"argument", argument}, {"description", description}}}});
}

std::optional<double> number(const std::map<std::string, std::string>& params, const char* key,
                             double fallback) {
  auto it = params.find(key);
  if (it == params.end())
    return fallback;
  double v = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || end != it->second.data() + it->second.size() || v < 0)
    return std::nullopt;
  return v;
}

} // namespace

struct splash_standin::impl {
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  server::http_server http;
  std::thread thread;

  mutable std::mutex mutex;
  std::map<std::string, standin_page> pages;
  std::map<std::string, std::size_t> counts;
  std::map<std::string, std::string> origin_pages;
  std::map<std::string, std::pair<std::string, unsigned>> origin_redirects;
  std::map<std::string, std::string> root_files;
  std::map<std::string, std::size_t> path_requests;
  std::vector<responder> hung; // held until shutdown: a render that never finishes
  std::size_t rendering = 0;   // pages answered after their delay, not yet answered
  std::size_t peak_rendering = 0;
  bool lua_enabled = true;
  std::size_t origin_not_modified = 0; // /origin/ requests answered 304

  impl()
      : http(ioc,
             [this](http_request req, responder res) { handle(std::move(req), std::move(res)); }) {
    http.listen("127.0.0.1", 0);
    http.start();
    thread = std::thread([this] { ioc.run(); });
  }

  ~impl() {
    http.stop();
    work.reset();
    ioc.stop();
    thread.join();
  }

  void answer_later(std::chrono::milliseconds delay, http_response res, responder respond) {
    if (delay.count() == 0)
      return respond(std::move(res));
    auto timer = std::make_shared<net::steady_timer>(ioc, delay);
    timer->async_wait([timer, res = std::move(res), respond = std::move(respond)](
                          boost::system::error_code) mutable { respond(std::move(res)); });
  }

  void handle(http_request req, responder respond) {
    auto path = std::string(req.path());
    if (path == "/_ping")
      return respond(json_error(200, {{"status", "ok"}, {"maxrss", 123456789}}));
    {
      std::lock_guard lock(mutex);
      ++path_requests[path];
      if (auto it = root_files.find(path); it != root_files.end()) {
        http_response res;
        res.content_type = "application/octet-stream";
        res.body = it->second;
        return respond(std::move(res));
      }
    }
    if (path.rfind("/origin/", 0) == 0)
      return serve_origin(path.substr(8), req, std::move(respond));
    bool lua = false;
    {
      std::lock_guard lock(mutex);
      lua = lua_enabled;
    }
    if (path == "/render.html")
      return render(parse_query(req.query()), endpoint::render_html, std::move(respond));
    if (path == "/execute" && lua && req.method == "POST") {
      // Splash reads /execute's arguments from a JSON body; numbers stay numbers there.
      auto body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (!body.is_object())
        return respond(bad_option("body", "bad_argument", "a JSON object is required"));
      std::map<std::string, std::string> params;
      for (const auto& [key, value] : body.items())
        params[key] = value.is_string() ? value.get<std::string>() : value.dump();
      if (!params.count("lua_source"))
        return respond(bad_option("lua_source", "argument_required",
                                  "Required argument is missing: lua_source"));
      return render(params, endpoint::execute, std::move(respond));
    }
    http_response res;
    res.status = 404;
    res.content_type = "text/html";
    res.body = "<html><head><title>404 - No Such Resource</title></head><body><h1>No Such "
               "Resource</h1></body></html>";
    respond(std::move(res));
  }

  enum class endpoint { render_html, execute };

  // What /execute's script returns, as JSON: the DOM, the main document's final URL, its HTTP
  // status (absent when it never answered) and splash:go's reason for a failed load.
  static http_response execute_answer(const std::string& html, const std::string& url,
                                      unsigned status, const std::string& reason) {
    json answer = {{"html", html}, {"url", url}};
    if (status != 0)
      answer["status"] = status;
    if (!reason.empty())
      answer["error"] = reason;
    return json_error(200, answer);
  }

  void render(const std::map<std::string, std::string>& params, endpoint via, responder respond) {
    auto timeout = number(params, "timeout", 30);
    if (!timeout)
      return respond(bad_option("timeout", "bad_argument", "a non-negative number is required"));
    if (*timeout > max_timeout)
      return respond(bad_option("timeout", "bad_argument", "Maximum allowed timeout is 90.0"));
    auto wait = number(params, "wait", 0);
    if (!wait)
      return respond(bad_option("wait", "bad_argument", "a non-negative number is required"));
    if (*wait > *timeout)
      return respond(bad_option("wait", "bad_argument", "wait time is larger than timeout"));
    auto url_it = params.find("url");
    if (url_it == params.end())
      return respond(bad_option("url", "argument_required", "Required argument is missing: url"));
    const auto& url = url_it->second;
    const bool execute = via == endpoint::execute;

    standin_page page;
    bool known = false;
    {
      std::lock_guard lock(mutex);
      ++counts[url];
      if (auto it = pages.find(url); it != pages.end()) {
        page = it->second;
        known = true;
      }
    }
    const std::string blank = "<html><head></head><body></body></html>";
    if (url.find("://") == std::string::npos) {
      // Splash's trap: an empty, garbage or scheme-less URL is a 200 with an empty page.
      if (execute)
        return respond(execute_answer(blank, "about:blank", 0, "network301"));
      http_response res;
      res.content_type = "text/html; charset=utf-8";
      res.body = blank;
      return respond(std::move(res));
    }
    if (!known) {
      if (execute)
        return respond(execute_answer(blank, "about:blank", 0, "network3"));
      return respond(network_error(3, "Host " + url + " not found", url));
    }

    switch (page.what) {
    case standin_page::kind::hang: {
      std::lock_guard lock(mutex);
      hung.push_back(std::move(respond));
      return;
    }
    case standin_page::kind::page: {
      http_response res;
      if (execute) {
        res = execute_answer(page.html, url, page.site_status,
                             page.site_status >= 400 ? "http" + std::to_string(page.site_status)
                                                     : "");
      } else if (page.failing_subframe) {
        // render.html fails the whole render when any frame fails to load.
        res = network_error(3, "Host ads.example not found", "https://ads.example/frame");
      } else {
        // render.html's trap: the site's own error page comes back as a 200.
        res.content_type = "text/html; charset=utf-8";
        res.body = page.html;
      }
      {
        std::lock_guard lock(mutex);
        peak_rendering = std::max(peak_rendering, ++rendering);
      }
      return answer_later(page.delay, std::move(res),
                          [this, respond = std::move(respond)](http_response r) {
                            {
                              std::lock_guard lock(mutex);
                              --rendering;
                            }
                            respond(std::move(r));
                          });
    }
    case standin_page::kind::splash_error:
      break;
    }
    http_response res;
    switch (page.status) {
    case 400:
      res = bad_option("wait", "bad_argument", "wait time is larger than timeout");
      break;
    case 502:
      // /execute reports a page that could not load through splash:go's reason.
      res = execute ? execute_answer(blank, "about:blank", 0, "network1")
                    : network_error(
                          1, page.error_text.empty() ? "Connection refused" : page.error_text, url);
      break;
    case 504:
      res = json_error(504, {{"error", 504},
                             {"type", "GlobalTimeoutError"},
                             {"description", "Timeout exceeded rendering page"},
                             {"info", {{"timeout", *timeout}, {"remaining", -0.002}}}});
      break;
    default:
      res = json_error(
          page.status,
          {{"error", page.status}, {"type", "CancelledError"}, {"description", "cancelled"}});
    }
    answer_later(page.delay, std::move(res), std::move(respond));
  }

  void serve_origin(const std::string& name, const http_request& req, responder respond) {
    std::lock_guard lock(mutex);
    if (auto it = origin_redirects.find(name); it != origin_redirects.end()) {
      http_response res;
      res.status = it->second.second;
      res.with_header("Location", it->second.first);
      return respond(std::move(res));
    }
    if (auto it = origin_pages.find(name); it != origin_pages.end()) {
      // A validator per content, as a web server's: a poll that names it gets 304.
      const auto etag = "\"" + std::to_string(std::hash<std::string>{}(it->second)) + "\"";
      http_response res;
      if (req.header("If-None-Match") == std::optional<std::string_view>(etag)) {
        ++origin_not_modified;
        res.status = 304;
      } else {
        res.content_type =
            it->first.ends_with(".xml") ? "application/xml" : "text/html; charset=utf-8";
        res.body = it->second;
      }
      res.with_header("ETag", etag);
      return respond(std::move(res));
    }
    respond(server::text_response(404));
  }
};

splash_standin::splash_standin()
    : impl_(std::make_unique<impl>()) {}
splash_standin::~splash_standin() = default;

unsigned short splash_standin::port() const {
  return impl_->http.port();
}
std::string splash_standin::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port());
}

void splash_standin::set(const std::string& target_url, standin_page page) {
  std::lock_guard lock(impl_->mutex);
  impl_->pages[target_url] = std::move(page);
}

void splash_standin::set_lua(bool enabled) {
  std::lock_guard lock(impl_->mutex);
  impl_->lua_enabled = enabled;
}

void splash_standin::set_origin(const std::string& name, std::string html) {
  std::lock_guard lock(impl_->mutex);
  impl_->origin_pages[name] = std::move(html);
}

void splash_standin::set_origin_redirect(const std::string& name, std::string location,
                                         unsigned status) {
  std::lock_guard lock(impl_->mutex);
  impl_->origin_redirects[name] = {std::move(location), status};
}

void splash_standin::set_root_file(const std::string& path, std::string body) {
  std::lock_guard lock(impl_->mutex);
  impl_->root_files[path] = std::move(body);
}

std::size_t splash_standin::requests(const std::string& path) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->path_requests.find(path);
  return it == impl_->path_requests.end() ? 0 : it->second;
}

std::size_t splash_standin::origin_not_modified() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->origin_not_modified;
}

std::size_t splash_standin::peak_concurrent_renders() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->peak_rendering;
}

std::size_t splash_standin::renders(const std::string& target_url) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->counts.find(target_url);
  return it == impl_->counts.end() ? 0 : it->second;
}

} // namespace newsdesk::testing
