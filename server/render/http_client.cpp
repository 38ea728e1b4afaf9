#include "server/render/http_client.hpp"

#include "server/core/thread_name.hpp"
#include "server/render/http_transfer.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/url/parse.hpp>

#include <curl/curl.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace newsdesk::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using detail::http_transfer;

std::string http_fetch_result::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (iequals(key, name))
      return value;
  return {};
}

namespace {

// libcurl's global state, set up once for the process before the first handle (thread-safe in
// this libcurl: its "threadsafe" feature), and never torn down: other clients may come later.
void init_curl_once() {
  static const CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK)
    throw std::runtime_error(std::string("cannot set up libcurl: ") + curl_easy_strerror(code));
}

// The parts of a URL the client decides on before libcurl sees it.
struct target {
  bool https = false;
  std::string host; // the name, or the IP literal without brackets
  std::string port;
};

std::optional<target> split_url(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed)
    return std::nullopt;
  const auto& u = *parsed;
  target t;
  const auto scheme = u.scheme_id();
  if (scheme == boost::urls::scheme::https)
    t.https = true;
  else if (scheme != boost::urls::scheme::http)
    return std::nullopt;
  t.host = u.host_address();
  if (t.host.empty())
    return std::nullopt;
  t.port = u.has_port() ? std::string(u.port()) : (t.https ? "443" : "80");
  return t;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The first of these variables that is set and not empty.
std::string first_set(std::initializer_list<const char*> names) {
  for (const auto* name : names)
    if (auto value = environment(name); !value.empty())
      return value;
  return {};
}

// The addresses of a proxy's host ("http://proxy.corp:3128", "10.0.0.1:3128", "[::1]:8888"),
// as text; empty when it names none that resolve.
std::vector<std::string> proxy_addresses(const std::string& proxy) {
  std::vector<std::string> addresses;
  CURLU* url = curl_url();
  char* host = nullptr;
  if (url &&
      curl_url_set(url, CURLUPART_URL, proxy.c_str(),
                   CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
      curl_url_get(url, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    std::string name = host;
    if (name.size() > 2 && name.front() == '[')
      name = name.substr(1, name.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) == 0) {
      for (auto* a = found; a; a = a->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* raw = a->ai_family == AF_INET6
                              ? static_cast<const void*>(
                                    &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr)
                              : &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
        if (::inet_ntop(a->ai_family, raw, text, sizeof text))
          addresses.emplace_back(text);
      }
      ::freeaddrinfo(found);
    }
  }
  curl_free(host);
  curl_url_cleanup(url);
  return addresses;
}

} // namespace

// The environment's proxies, read once. The variables and their order are libcurl's (lib/url.c),
// and curl(1)'s, with one addition: HTTP_PROXY in upper case, which libcurl leaves out because a
// CGI program finds a request's Proxy header there ("httpoxy"); newsdesk is no CGI program, and
// container tools set the upper-case name. NO_PROXY stays libcurl's to read and match.
detail::proxy_environment detail::proxy_environment::read() {
  proxy_environment env;
  env.http = first_set({"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"});
  env.https = first_set({"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"});
  for (const auto* proxy : {&env.http, &env.https})
    if (!proxy->empty())
      for (auto& address : proxy_addresses(*proxy))
        env.addresses.push_back(std::move(address));
  return env;
}

// The fetch thread and its multi handle. Shared with the Asio handlers that resolve names for
// proxied fetches, so one that completes during destruction finds it stopped, not gone.
struct http_client::impl {
  impl(net::io_context& ioc_, tls_options tls_)
      : ioc(ioc_)
      , tls(std::move(tls_))
      , proxies(
            std::make_shared<const detail::proxy_environment>(detail::proxy_environment::read())) {
    init_curl_once();
    multi = curl_multi_init();
    if (!multi)
      throw std::runtime_error("cannot set up libcurl's multi handle");
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, max_idle_connections);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
    thread = std::thread([this] { run(); });
  }

  ~impl() {
    stop();
    curl_multi_cleanup(multi);
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      if (stopping)
        return;
      stopping = true;
    }
    curl_multi_wakeup(multi);
    if (thread.joinable())
      thread.join();
  }

  // Hands a transfer to the fetch thread; dropped (with its callback) once stopping.
  void submit(std::unique_ptr<http_transfer> t) {
    {
      std::lock_guard lock(mutex);
      if (stopping)
        return;
      incoming.push_back(std::move(t));
    }
    curl_multi_wakeup(multi);
  }

  // A fetch that failed before it reached libcurl.
  void refuse(http_fetch_result result, std::function<void(http_fetch_result)> done) {
    fetches.fetch_add(1, std::memory_order_relaxed);
    net::post(ioc, [done = std::move(done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }

  // The fetch thread: adds what arrived, lets libcurl do what its sockets allow, finishes what
  // is done, cuts what fell under its progress floor, and sleeps until a socket, a timer of
  // libcurl's, the next progress look or a new fetch wakes it.
  void run() {
    name_this_thread("nd-fetch");
    for (;;) {
      std::vector<std::unique_ptr<http_transfer>> arrived;
      {
        std::lock_guard lock(mutex);
        if (stopping)
          break;
        arrived.swap(incoming);
      }
      for (auto& t : arrived)
        add(std::move(t));
      int running = 0;
      curl_multi_perform(multi, &running);
      collect_finished();
      const auto now = http_transfer::clock_type::now();
      auto wake = now + std::chrono::seconds(30);
      for (auto it = active.begin(); it != active.end();) {
        auto& t = *it->second;
        if (!t.keeps_pace(now)) {
          curl_multi_remove_handle(multi, t.easy());
          t.finish(CURLE_ABORTED_BY_CALLBACK);
          complete(t);
          it = active.erase(it);
          continue;
        }
        if (auto next = t.next_progress_check())
          wake = std::min(wake, *next);
        ++it;
      }
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
      curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::max<long long>(wait, 1)), nullptr);
    }
    // Stopped: what is in flight is dropped, callbacks and all.
    for (auto& [easy, t] : active)
      curl_multi_remove_handle(multi, easy);
    active.clear();
    std::lock_guard lock(mutex);
    incoming.clear();
  }

  void add(std::unique_ptr<http_transfer> t) {
    if (!t->prepare(tls) || curl_multi_add_handle(multi, t->easy()) != CURLM_OK) {
      complete(*t);
      return;
    }
    auto* easy = t->easy();
    active.emplace(easy, std::move(t));
  }

  void collect_finished() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE)
        continue;
      auto it = active.find(message->easy_handle);
      if (it == active.end())
        continue;
      const auto code = message->data.result; // read before the handle leaves the multi handle
      curl_multi_remove_handle(multi, it->first);
      it->second->finish(code);
      complete(*it->second);
      active.erase(it);
    }
  }

  void complete(http_transfer& t) {
    const auto& r = t.result();
    fetches.fetch_add(1, std::memory_order_relaxed);
    if (r.reused)
      reused.fetch_add(1, std::memory_order_relaxed);
    else if (r.wire_bytes > 0)
      opened.fetch_add(1, std::memory_order_relaxed);
    wire_bytes.fetch_add(r.wire_bytes, std::memory_order_relaxed);
    body_bytes.fetch_add(r.body.size(), std::memory_order_relaxed);
    if (r.ok() && r.status == 304)
      not_modified.fetch_add(1, std::memory_order_relaxed);
    t.call_back();
  }

  net::io_context& ioc;
  const tls_options tls;
  const std::shared_ptr<const detail::proxy_environment> proxies;
  CURLM* multi = nullptr;

  std::mutex mutex; // guards incoming and stopping
  std::vector<std::unique_ptr<http_transfer>> incoming;
  bool stopping = false;

  std::map<CURL*, std::unique_ptr<http_transfer>> active; // the fetch thread's only
  std::thread thread;

  std::atomic<std::uint64_t> fetches{0}, opened{0}, reused{0}, wire_bytes{0}, body_bytes{0},
      not_modified{0};
};

http_client::http_client(net::io_context& ioc, const tls_options& tls)
    : impl_(std::make_shared<impl>(ioc, tls)) {}

http_client::~http_client() {
  impl_->stop();
}

http_client::counters http_client::stats() const {
  const auto& i = *impl_;
  counters c;
  c.fetches = i.fetches.load(std::memory_order_relaxed);
  c.connections_opened = i.opened.load(std::memory_order_relaxed);
  c.connections_reused = i.reused.load(std::memory_order_relaxed);
  c.wire_bytes = i.wire_bytes.load(std::memory_order_relaxed);
  c.body_bytes = i.body_bytes.load(std::memory_order_relaxed);
  c.not_modified = i.not_modified.load(std::memory_order_relaxed);
  return c;
}

void http_client::get(const std::string& url, http_fetch_options options,
                      std::function<void(http_fetch_result)> done) {
  start(url, std::nullopt, std::move(options), std::move(done));
}

void http_client::post(const std::string& url, std::string content_type, std::string body,
                       http_fetch_options options, std::function<void(http_fetch_result)> done) {
  start(url, post_body{std::move(content_type), std::move(body)}, std::move(options),
        std::move(done));
}

void http_client::start(const std::string& url, std::optional<post_body> payload,
                        http_fetch_options options, std::function<void(http_fetch_result)> done) {
  auto t = split_url(url);
  if (!t) {
    http_fetch_result result;
    result.failure = fetch_failure::bad_url;
    result.error = "not an http(s) URL: " + url;
    return impl_->refuse(std::move(result), std::move(done));
  }
  std::string proxy;
  if (options.use_proxy)
    proxy = t->https ? impl_->proxies->https : impl_->proxies->http;
  // Through a proxy, the proxy resolves and connects: the public-address rule is applied to the
  // addresses the name has here, before the proxy is asked (an IP literal is judged as it
  // stands). Every one must be public, since the proxy may pick any. (When NO_PROXY covers the
  // host, the connection is direct and its socket is checked as well.)
  const bool resolve_first = !proxy.empty() && options.public_addresses_only;
  detail::fetch_request request{url,
                                t->host,
                                std::move(proxy),
                                impl_->proxies,
                                std::move(options),
                                std::move(payload),
                                std::move(done)};
  if (!resolve_first)
    return impl_->submit(std::make_unique<http_transfer>(impl_->ioc, std::move(request)));
  auto resolver = std::make_shared<tcp::resolver>(impl_->ioc);
  auto pending = std::make_shared<detail::fetch_request>(std::move(request));
  resolver->async_resolve(
      t->host, t->port,
      [impl = impl_, resolver, pending](const boost::system::error_code& ec,
                                        const tcp::resolver::results_type& results) {
        http_fetch_result refused;
        if (ec) {
          refused.failure = fetch_failure::resolve;
          refused.error = "cannot resolve " + pending->host + " (" + ec.message() + ")";
          return impl->refuse(std::move(refused), std::move(pending->done));
        }
        std::string internal;
        for (const auto& entry : results) {
          const auto ip = entry.endpoint().address().to_string();
          if (!is_public_address(ip)) {
            internal = ip;
            break;
          }
        }
        if (internal.empty())
          return impl->submit(std::make_unique<http_transfer>(impl->ioc, std::move(*pending)));
        refused.failure = fetch_failure::refused_address;
        refused.error = pending->host + " is " + internal +
                        ", an internal address: only a site whose own URL names an internal "
                        "address is fetched from one";
        impl->refuse(std::move(refused), std::move(pending->done));
      });
}

} // namespace newsdesk::server
