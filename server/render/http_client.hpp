// Async HTTP/1.1 GET and POST client for http:// and https:// URLs (Boost.Beast + OpenSSL).
//
// One connection per request, one overall deadline covering resolve, connect, TLS handshake,
// write and read, and a cap on the response body. It does not follow redirects: callers that
// want to (the direct renderer) decide per hop. Thread-safe: get() and post() may be called from
// any thread; the callback runs on an io_context thread, exactly once.
#pragma once

#include "server/http/http_message.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace boost::asio {
class io_context;
}

namespace newsdesk::server {

struct http_fetch_options {
  std::chrono::milliseconds timeout{30'000};
  // Rendered front pages run to ~4 MB (CNN); 16 MiB leaves room and stops a runaway body.
  std::size_t max_body_bytes = 16 * 1024 * 1024;
  header_list headers; // sent in addition to Host, User-Agent and Connection
  // Connect only to public addresses: the host's addresses that are loopback, private,
  // link-local or otherwise internal are left out, and a host with nothing else is refused
  // (refused_address). Checked on the addresses connected to, so a name that resolves to an
  // internal address, or a redirect to one, cannot point newsdesk at itself or its network.
  bool public_addresses_only = false;
  // A floor under the answer's pace, so a server that trickles (60 bytes every 0.2 s) or stalls
  // gives up its slot in seconds rather than at `timeout`: once the first byte of the answer is
  // in, every `progress_window` must bring `progress_bytes` more or the answer must be complete.
  // 0 bytes: no floor (Splash answers only when its render is done, and that may take long).
  std::size_t progress_bytes = 0;
  std::chrono::milliseconds progress_window{5000};
};

enum class fetch_failure {
  none,
  bad_url,
  resolve,
  refused_address,
  connect,
  tls,
  timeout,
  too_large,
  too_slow, // under http_fetch_options' progress floor
  protocol,
  io
};

// Whether `url`'s host is an IP literal that is not public (127.0.0.1, 10.0.0.5, [::1]): the
// operator named an internal address for a site, so its fetches may go to internal addresses.
bool names_internal_address(std::string_view url);

struct http_fetch_result {
  fetch_failure failure = fetch_failure::none;
  std::string error;   // what went wrong, for logs and notices ("Connection refused")
  unsigned status = 0; // HTTP status when failure == none, or when the failure came after it
  header_list headers;
  std::string body;
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return failure == fetch_failure::none; }
  std::string header(std::string_view name) const; // empty when absent
};

struct tls_options {
  bool verify_peer = true; // check the certificate chain and host name
  std::string ca_file;     // extra CA bundle (PEM); the system store is always used
};

class http_client {
 public:
  explicit http_client(boost::asio::io_context& ioc, const tls_options& tls = {});
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  void get(const std::string& url, http_fetch_options options,
           std::function<void(http_fetch_result)> done);
  // POSTs `body` with the given Content-Type (Splash's /execute takes a JSON body).
  void post(const std::string& url, std::string content_type, std::string body,
            http_fetch_options options, std::function<void(http_fetch_result)> done);

  // A POST's body and its Content-Type.
  struct post_body {
    std::string content_type;
    std::string data;
  };

 private:
  void start(const std::string& url, std::optional<post_body> body, http_fetch_options options,
             std::function<void(http_fetch_result)> done);

  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace newsdesk::server
