// One fetch of http_client as libcurl runs it: the easy handle and its options, the callbacks
// that collect the answer and apply the limits, and the answer turned into an
// http_fetch_result. Internal to http_client (http_client.cpp drives it); only the fetch thread
// touches a transfer once it has been handed over.
#pragma once

#include "server/render/http_client.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <curl/curl.h>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace newsdesk::server::detail {

// The proxies the environment names (http_client.cpp reads them).
struct proxy_environment {
  std::string http;                   // for http:// URLs; empty: none
  std::string https;                  // for https:// URLs
  std::vector<std::string> addresses; // of both proxies' hosts: connections to them are allowed
  static proxy_environment read();
};

// What a fetch was asked for, as http_client::start() decided it.
struct fetch_request {
  std::string url;
  std::string host;  // the URL's, for messages
  std::string proxy; // the proxy for the URL's scheme (unless NO_PROXY says otherwise); empty: none
  std::shared_ptr<const proxy_environment> proxies;
  http_fetch_options options;
  std::optional<http_client::post_body> payload;
  std::function<void(http_fetch_result)> done;
};

class http_transfer {
 public:
  using clock_type = std::chrono::steady_clock;

  http_transfer(boost::asio::io_context& ioc, fetch_request request);
  ~http_transfer();
  http_transfer(const http_transfer&) = delete;
  http_transfer& operator=(const http_transfer&) = delete;

  // Makes the easy handle with every option set; false (and the result filled in) when libcurl
  // refuses one.
  bool prepare(const tls_options& tls);
  CURL* easy() const { return easy_; }

  // The progress floor (http_fetch_options::progress_bytes), checked by the fetch thread: when
  // the next look is due (none before the first byte), and the look itself, which returns false
  // when the answer fell under the floor (it is then cut: remove the handle and finish()).
  std::optional<clock_type::time_point> next_progress_check() const { return next_check_; }
  bool keeps_pace(clock_type::time_point now);

  // Fills in the result from libcurl's code and what the handle knows; after the handle left
  // the multi handle (or never joined it).
  void finish(CURLcode code);
  const http_fetch_result& result() const { return result_; }

  // Posts the callback with the result to the io_context. Once only.
  void call_back();

 private:
  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* self);
  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* self);
  static curl_socket_t on_open_socket(void* self, curlsocktype purpose, curl_sockaddr* address);
  static int on_connected(void* self, char* primary_ip, char* local_ip, int primary_port,
                          int local_port);
  static CURLcode on_tls_context(CURL* easy, void* tls_context, void* ca_file);

  // The answer's bytes so far as received: headers and (still encoded) body.
  std::size_t received() const;
  // Whether a connection to `ip` is allowed: any, unless the public-address rule is on; then a
  // public address, or the proxy's.
  bool may_connect_to(const std::string& ip) const;
  void fail(fetch_failure kind, std::string error);
  void fail_from(CURLcode code);
  std::string curl_error(CURLcode code) const;

  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::io_context& ioc_;
  std::string url_;
  std::string host_;
  std::string proxy_; // empty: direct, or when use_proxy is off
  std::shared_ptr<const proxy_environment> proxies_;
  http_fetch_options options_;
  std::optional<http_client::post_body> payload_;
  std::function<void(http_fetch_result)> done_;
  clock_type::time_point started_ = clock_type::now();

  CURL* easy_ = nullptr;
  curl_slist* request_headers_ = nullptr;
  std::array<char, CURL_ERROR_SIZE> error_{};

  http_fetch_result result_;
  std::size_t header_bytes_ = 0;     // of the answer being read (a 1xx's are dropped with it)
  std::size_t all_header_bytes_ = 0; // every header line received, for the progress floor
  bool headers_too_large_ = false;
  bool body_too_large_ = false;
  std::string refused_;    // an internal address left out (public_addresses_only)
  bool connected_ = false; // a connection's address passed the rules
  std::optional<clock_type::time_point> next_check_; // the progress floor's next look
  std::size_t seen_ = 0;                             // received() at the last look
  std::optional<std::size_t> too_slow_;              // bytes in the window that fell short
};

} // namespace newsdesk::server::detail
