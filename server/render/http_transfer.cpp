#include "server/render/http_transfer.hpp"

#include "scrapers/text.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace newsdesk::server::detail {

namespace net = boost::asio;

namespace {

// Accept as browsers send it for a page; callers that want other types say so (feeds, icons).
constexpr const char* default_accept =
    "Accept: text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8";

// The IP address a socket is about to connect to, as text.
std::string address_text(const curl_sockaddr& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address.addr);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
  } else if (address.family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address.addr);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
  }
  return text;
}

unsigned version_of(long curl_version) {
  switch (curl_version) {
  case CURL_HTTP_VERSION_1_0:
    return 10;
  case CURL_HTTP_VERSION_1_1:
    return 11;
  case CURL_HTTP_VERSION_2_0:
    return 20;
  case CURL_HTTP_VERSION_3:
    return 30;
  default:
    return 0;
  }
}

} // namespace

http_transfer::http_transfer(net::io_context& ioc, fetch_request request)
    : work_(ioc.get_executor())
    , ioc_(ioc)
    , url_(std::move(request.url))
    , host_(std::move(request.host))
    , proxy_(std::move(request.proxy))
    , proxies_(std::move(request.proxies))
    , options_(std::move(request.options))
    , payload_(std::move(request.payload))
    , done_(std::move(request.done)) {}

http_transfer::~http_transfer() {
  if (easy_)
    curl_easy_cleanup(easy_);
  curl_slist_free_all(request_headers_);
}

bool http_transfer::prepare(const tls_options& tls) {
  easy_ = curl_easy_init();
  if (!easy_) {
    fail(fetch_failure::io, "cannot start a transfer (libcurl)");
    return false;
  }
  // Headers: ours, each replaced by the caller's of the same name.
  auto add_header = [this](const std::string& line) {
    if (auto* grown = curl_slist_append(request_headers_, line.c_str()))
      request_headers_ = grown;
  };
  auto caller_sets = [this](std::string_view name) {
    for (const auto& [key, value] : options_.headers)
      if (iequals(key, name))
        return true;
    return false;
  };
  if (!caller_sets("Accept"))
    add_header(default_accept);
  for (const auto& [name, value] : options_.headers)
    // "Name:" would tell libcurl to leave the header out; "Name;" sends it empty.
    add_header(value.empty() ? name + ";" : name + ": " + value);
  if (payload_) {
    add_header("Content-Type: " + payload_->content_type);
    add_header("Expect:"); // no 100-continue round trip before the body
  }

  const auto timeout = static_cast<long>(std::max<long long>(1, options_.timeout.count()));
  bool ok = true;
  auto set = [&](CURLoption option, auto value) {
    ok = ok && curl_easy_setopt(easy_, option, value) == CURLE_OK;
  };
  set(CURLOPT_URL, url_.c_str());
  set(CURLOPT_PRIVATE, static_cast<void*>(this));
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_ERRORBUFFER, error_.data());
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_TIMEOUT_MS, timeout);
  set(CURLOPT_CONNECTTIMEOUT_MS, timeout);
  set(CURLOPT_USERAGENT, "newsdesk/0.1");
  set(CURLOPT_HTTPHEADER, request_headers_);
  set(CURLOPT_ACCEPT_ENCODING, ""); // every coding this libcurl decodes
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  set(CURLOPT_PIPEWAIT, 1L); // a second fetch to a host waits to share its HTTP/2 connection
  // A Content-Length over the limit is refused before the body is read; the body callback
  // holds the decoded bytes to it.
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options_.max_body_bytes));
  set(CURLOPT_WRITEFUNCTION, &http_transfer::on_body);
  set(CURLOPT_WRITEDATA, static_cast<void*>(this));
  set(CURLOPT_HEADERFUNCTION, &http_transfer::on_header);
  set(CURLOPT_HEADERDATA, static_cast<void*>(this));
  set(CURLOPT_OPENSOCKETFUNCTION, &http_transfer::on_open_socket);
  set(CURLOPT_OPENSOCKETDATA, static_cast<void*>(this));
  set(CURLOPT_PREREQFUNCTION, &http_transfer::on_connected);
  set(CURLOPT_PREREQDATA, static_cast<void*>(this));
  set(CURLOPT_SSL_VERIFYPEER, tls.verify_peer ? 1L : 0L);
  set(CURLOPT_SSL_VERIFYHOST, tls.verify_peer ? 2L : 0L);
  set(CURLOPT_PROXY_SSL_VERIFYPEER, tls.verify_peer ? 1L : 0L);
  set(CURLOPT_PROXY_SSL_VERIFYHOST, tls.verify_peer ? 2L : 0L);
  if (!tls.ca_file.empty()) {
    set(CURLOPT_SSL_CTX_FUNCTION, &http_transfer::on_tls_context);
    set(CURLOPT_SSL_CTX_DATA, static_cast<void*>(const_cast<char*>(tls.ca_file.c_str())));
  }
  // NO_PROXY is left to libcurl, which reads it from the environment for every fetch.
  if (!options_.use_proxy)
    set(CURLOPT_NOPROXY, "*");
  else if (!proxy_.empty())
    set(CURLOPT_PROXY, proxy_.c_str());
  set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  if (payload_) {
    set(CURLOPT_POST, 1L);
    set(CURLOPT_POSTFIELDS, payload_->data.c_str());
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload_->data.size()));
  }
  if (!ok)
    fail(fetch_failure::io, "libcurl refused an option of the transfer");
  return ok;
}

std::size_t http_transfer::on_body(char* data, std::size_t size, std::size_t count, void* self) {
  auto& t = *static_cast<http_transfer*>(self);
  const auto bytes = size * count;
  if (t.result_.body.size() + bytes > t.options_.max_body_bytes) {
    t.body_too_large_ = true;
    return 0; // libcurl stops the transfer
  }
  t.result_.body.append(data, bytes);
  return bytes;
}

std::size_t http_transfer::on_header(char* data, std::size_t size, std::size_t count, void* self) {
  auto& t = *static_cast<http_transfer*>(self);
  const auto bytes = size * count;
  std::string_view line(data, bytes);
  if (t.all_header_bytes_ == 0 && t.options_.progress_bytes > 0)
    t.next_check_ = clock_type::now() + t.options_.progress_window; // the floor starts now
  t.all_header_bytes_ += bytes;
  if (line.starts_with("HTTP/")) { // a new answer: a 100 Continue's lines are not this one's
    t.result_.headers.clear();
    t.header_bytes_ = 0;
  }
  t.header_bytes_ += bytes;
  if (t.header_bytes_ > http_client::max_header_bytes) {
    t.headers_too_large_ = true;
    return 0;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || line.starts_with("HTTP/"))
    return bytes;
  const auto name = scrapers::trim_ascii_whitespace(line.substr(0, colon));
  const auto value = scrapers::trim_ascii_whitespace(line.substr(colon + 1));
  if (!name.empty())
    t.result_.headers.emplace_back(std::string(name), std::string(value));
  return bytes;
}

curl_socket_t http_transfer::on_open_socket(void* self, curlsocktype, curl_sockaddr* address) {
  auto& t = *static_cast<http_transfer*>(self);
  if (auto ip = address_text(*address); !t.may_connect_to(ip)) {
    // Left out: libcurl tries the host's next address, and fails to connect when none is left.
    if (t.refused_.empty())
      t.refused_ = std::move(ip);
    return CURL_SOCKET_BAD;
  }
  t.connected_ = true;
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

// Called for every transfer once its connection is ready, opened or reused: a connection an
// internal site opened may not carry a public-only fetch to the same host and port.
int http_transfer::on_connected(void* self, char* primary_ip, char*, int, int) {
  auto& t = *static_cast<http_transfer*>(self);
  if (!t.may_connect_to(primary_ip)) {
    t.refused_ = primary_ip;
    t.connected_ = false;
    return CURL_PREREQFUNC_ABORT;
  }
  t.connected_ = true;
  return CURL_PREREQFUNC_OK;
}

// Adds the extra CA bundle to the store libcurl filled with the system's.
CURLcode http_transfer::on_tls_context(CURL*, void* tls_context, void* ca_file) {
  return SSL_CTX_load_verify_locations(static_cast<SSL_CTX*>(tls_context),
                                       static_cast<const char*>(ca_file), nullptr) == 1
             ? CURLE_OK
             : CURLE_SSL_CACERT_BADFILE;
}

bool http_transfer::may_connect_to(const std::string& ip) const {
  if (!options_.public_addresses_only || is_public_address(ip))
    return true;
  return !proxy_.empty() && std::find(proxies_->addresses.begin(), proxies_->addresses.end(), ip) !=
                                proxies_->addresses.end();
}

std::size_t http_transfer::received() const {
  curl_off_t body = 0;
  curl_easy_getinfo(easy_, CURLINFO_SIZE_DOWNLOAD_T, &body);
  return all_header_bytes_ + static_cast<std::size_t>(body);
}

bool http_transfer::keeps_pace(clock_type::time_point now) {
  if (!next_check_ || now < *next_check_)
    return true;
  const auto so_far = received();
  if (so_far - seen_ < options_.progress_bytes) {
    too_slow_ = so_far - seen_;
    return false;
  }
  seen_ = so_far;
  next_check_ = *next_check_ + options_.progress_window;
  return true;
}

void http_transfer::fail(fetch_failure kind, std::string error) {
  result_.failure = kind;
  result_.error = std::move(error);
  result_.body.clear(); // what came of a failed answer is not kept (it may be 16 MiB)
  result_.body.shrink_to_fit();
}

std::string http_transfer::curl_error(CURLcode code) const {
  return error_[0] ? std::string(error_.data()) : std::string(curl_easy_strerror(code));
}

void http_transfer::finish(CURLcode code) {
  long status = 0, version = 0, connects = 0, header_size = 0;
  curl_off_t body = 0;
  char* primary_ip = nullptr;
  curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(easy_, CURLINFO_HTTP_VERSION, &version);
  curl_easy_getinfo(easy_, CURLINFO_NUM_CONNECTS, &connects);
  curl_easy_getinfo(easy_, CURLINFO_HEADER_SIZE, &header_size);
  curl_easy_getinfo(easy_, CURLINFO_SIZE_DOWNLOAD_T, &body);
  curl_easy_getinfo(easy_, CURLINFO_PRIMARY_IP, &primary_ip);
  result_.status = static_cast<unsigned>(status);
  result_.http_version = version_of(version);
  result_.wire_bytes = static_cast<std::size_t>(header_size) + static_cast<std::size_t>(body);
  result_.reused = connects == 0 && connected_ && primary_ip && *primary_ip;
  if (code != CURLE_OK || too_slow_)
    fail_from(code);
  result_.elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started_);
}

void http_transfer::fail_from(CURLcode code) {
  if (too_slow_)
    return fail(fetch_failure::too_slow,
                "the answer came too slowly: " + std::to_string(*too_slow_) + " bytes in " +
                    std::to_string(options_.progress_window.count()) + " ms (at least " +
                    std::to_string(options_.progress_bytes) + " needed)");
  if (body_too_large_ || code == CURLE_FILESIZE_EXCEEDED)
    return fail(fetch_failure::too_large,
                "response larger than " + std::to_string(options_.max_body_bytes) + " bytes");
  if (headers_too_large_)
    return fail(fetch_failure::protocol, "response headers larger than " +
                                             std::to_string(http_client::max_header_bytes) +
                                             " bytes");
  if (!refused_.empty() && !connected_)
    return fail(fetch_failure::refused_address,
                host_ + " is " + refused_ +
                    ", an internal address: only a site whose own URL names an internal address "
                    "is fetched from one");
  long os_error = 0;
  curl_easy_getinfo(easy_, CURLINFO_OS_ERRNO, &os_error);
  const auto detail = curl_error(code);
  switch (code) {
  case CURLE_OPERATION_TIMEDOUT:
    return fail(fetch_failure::timeout,
                "no answer within " + std::to_string(options_.timeout.count()) + " ms");
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    return fail(fetch_failure::bad_url, "not an http(s) URL: " + url_);
  case CURLE_COULDNT_RESOLVE_HOST:
    return fail(fetch_failure::resolve, "cannot resolve " + host_ + " (" + detail + ")");
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
    return fail(
        fetch_failure::connect,
        detail + (os_error ? " (" + std::system_category().message(static_cast<int>(os_error)) + ")"
                           : std::string()));
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
    return fail(fetch_failure::tls, "TLS handshake failed (" + detail + ")");
  case CURLE_BAD_CONTENT_ENCODING:
    return fail(fetch_failure::protocol,
                "the body's Content-Encoding could not be decoded (" + detail + ")");
  case CURLE_WEIRD_SERVER_REPLY:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return fail(fetch_failure::protocol, "malformed HTTP response (" + detail + ")");
  default:
    return fail(fetch_failure::io, "reading the response failed (" + detail + ")");
  }
}

void http_transfer::call_back() {
  net::post(ioc_, [done = std::move(done_), result = std::move(result_)]() mutable {
    done(std::move(result));
  });
}

} // namespace newsdesk::server::detail
