// Async HTTP GET and POST client for http:// and https:// URLs, on libcurl's multi interface.
//
// What every fetch gets: connections kept alive and reused per host (HTTP/1.1 keep-alive, and
// HTTP/2, multiplexed, where a server offers it over TLS); bodies asked for compressed
// (Accept-Encoding: every coding this libcurl decodes: deflate, gzip, br) and decoded, with
// max_body_bytes applied to the decoded bytes, so a compression bomb is cut at the cap after a
// few KB of wire; one overall deadline covering resolve, connect, TLS, request and answer; a
// progress floor once the answer has started; the public-address rule on every connection
// (opened or reused). Proxies are the operator's environment's, read by libcurl for each fetch
// as for curl(1): https_proxy/HTTPS_PROXY for https:// URLs, http_proxy (lower case only, as
// libcurl) for http:// URLs, ALL_PROXY for both, NO_PROXY for the hosts reached directly. It does
// not follow redirects: callers that want to (the direct renderer, icons) decide per hop, so each
// hop is a fetch of its own, checked like the first.
//
// Threads: libcurl runs on one thread of the client's own ("nd-fetch"), blocked in
// curl_multi_poll between events; get() and post() may be called from any thread and wake it.
// TLS handshakes and the decoding of compressed bodies happen there, off the io_context's
// network threads. Each callback runs exactly once, posted to the io_context; a fetch in flight
// keeps the io_context's run() from returning, as an Asio operation would. The destructor stops
// the thread and drops the fetches still in flight without calling them back.
#pragma once

#include "server/http/http_message.hpp"
#include "server/render/address_rules.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
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
  // Decoded bytes of the answer's body. Rendered front pages run to ~4 MB (CNN); 16 MiB leaves
  // room and stops a runaway body, compressed or not.
  std::size_t max_body_bytes = 16 * 1024 * 1024;
  // Sent in addition to (or instead of, for the same name) Host, User-Agent, Accept and
  // Accept-Encoding.
  header_list headers;
  // Connect only to public addresses: the host's addresses that are loopback, private,
  // link-local or otherwise internal are left out, and a host with nothing else is refused
  // (refused_address). Checked on the address of every connection a fetch uses, opened or
  // reused, so a name that resolves to an internal address, or a redirect to one, cannot point
  // newsdesk at itself or its network. When the environment names a proxy for the URL's scheme,
  // the name is resolved here first and judged the same way (the proxy, which connects, is the
  // operator's choice, and its own address is allowed).
  bool public_addresses_only = false;
  // A floor under the answer's pace, so a server that trickles (60 bytes every 0.2 s) or stalls
  // gives up its slot in seconds rather than at `timeout`: once the first byte of the answer is
  // in, every `progress_window` must bring `progress_bytes` more (as sent: compressed bytes
  // count as they arrive) or the answer must be complete. 0 bytes: no floor (Splash answers
  // only when its render is done, and that may take long).
  std::size_t progress_bytes = 0;
  std::chrono::milliseconds progress_window{5000};
  // Through the environment's proxy for the URL's scheme (unless NO_PROXY covers the host). Off
  // for services the operator runs beside newsdesk (Splash), which are reached directly.
  bool use_proxy = true;
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

struct http_fetch_result {
  fetch_failure failure = fetch_failure::none;
  std::string error;   // what went wrong, for logs and notices ("Connection refused")
  unsigned status = 0; // HTTP status when failure == none, or when the failure came after it
  header_list headers; // of the final answer (not of a proxy's CONNECT, nor of a 100 Continue)
  std::string body;    // decoded
  std::chrono::milliseconds elapsed{0};
  std::size_t wire_bytes = 0; // the answer's header and body bytes as received, before decoding
  unsigned http_version = 0;  // 10, 11 or 20, as answered
  bool reused = false;        // over a connection an earlier fetch opened

  bool ok() const { return failure == fetch_failure::none; }
  std::string header(std::string_view name) const; // empty when absent
};

struct tls_options {
  bool verify_peer = true; // check the certificate chain and host name
  std::string ca_file;     // extra CA bundle (PEM); the system store is always used
};

class http_client {
 public:
  // Idle connections kept for reuse across all hosts, each one descriptor (within the budget
  // config.hpp reserves for everything but HTTP connections); the least recently used close
  // first. Servers close theirs after seconds to minutes (nginx: 75 s), which is as long as one
  // stays useful.
  static constexpr long max_idle_connections = 32;
  // The answer's header lines together: real sites send large Set-Cookie and CSP headers.
  static constexpr std::size_t max_header_bytes = 64 * 1024;

  // Throws std::runtime_error when libcurl cannot be set up.
  // Starts the fetch thread and reads the proxy variables of the environment (their hosts are
  // resolved once, here, so the public-address rule lets connections to them through).
  explicit http_client(boost::asio::io_context& ioc, const tls_options& tls = {});
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  void get(const std::string& url, http_fetch_options options,
           std::function<void(http_fetch_result)> done);
  // POSTs `body` with the given Content-Type (Splash's /execute takes a JSON body).
  void post(const std::string& url, std::string content_type, std::string body,
            http_fetch_options options, std::function<void(http_fetch_result)> done);

  // What the client has done since it started (for /metrics). Any thread.
  struct counters {
    std::uint64_t fetches = 0;            // finished, failed or not
    std::uint64_t connections_opened = 0; // new TCP connections (and TLS sessions)
    std::uint64_t connections_reused = 0; // fetches over a connection kept from an earlier one
    std::uint64_t wire_bytes = 0;         // answers' bytes as received (headers and bodies)
    std::uint64_t body_bytes = 0;         // answers' bodies decoded
    std::uint64_t not_modified = 0;       // answers 304 Not Modified
  };
  counters stats() const;

  // A POST's body and its Content-Type.
  struct post_body {
    std::string content_type;
    std::string data;
  };

  struct impl;

 private:
  void start(const std::string& url, std::optional<post_body> body, http_fetch_options options,
             std::function<void(http_fetch_result)> done);

  std::shared_ptr<impl> impl_;
};

} // namespace newsdesk::server
