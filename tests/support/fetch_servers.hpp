// Real servers for the fetch tests, started by the test on free loopback ports and stopped by
// their destructors: nginx serving a folder as a CDN edge does (gzip_static and brotli_static:
// the .gz and .br files beside a file are sent to a client that accepts them), optionally over
// TLS with HTTP/2; and Debian's tinyproxy as the operator's HTTP(S) proxy. A missing program or
// module throws std::runtime_error naming it (the test fails; it never skips).
#pragma once

#include "tests/support/child_process.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace newsdesk::testing {

// A free TCP port on 127.0.0.1 (bound to 0, read, released: the server binds it next).
unsigned short free_loopback_port();

// Runs `command` with /bin/sh; throws naming it when it fails.
void run_or_throw(const std::string& command);

class nginx_server {
 public:
  // Serves `root` (its files, and their .gz and .br companions). With `tls`, a certificate for
  // 127.0.0.1 is made in `work` (cert_file()) and the server speaks HTTPS with HTTP/2.
  // `work` holds the configuration, logs and temporary folders.
  nginx_server(const std::filesystem::path& root, const std::filesystem::path& work,
               bool tls = false);
  ~nginx_server();
  nginx_server(const nginx_server&) = delete;
  nginx_server& operator=(const nginx_server&) = delete;

  unsigned short port() const { return port_; }
  std::string base_url() const; // http(s)://127.0.0.1:port
  std::string cert_file() const { return (work_ / "cert.pem").string(); }
  // The access log so far, one line per answer:
  //   "<request line>|<status>|<bytes sent>|<connection>|<requests on it>|<Via header>"
  // (bytes sent: the answer's header and body as they left nginx, compressed when they were).
  std::string access_log() const;

 private:
  std::filesystem::path work_;
  unsigned short port_ = 0;
  std::unique_ptr<child_process> process_;
};

class tinyproxy_server {
 public:
  // Forwards plain HTTP requests (adding "Via: ... tinyproxy-test") and tunnels CONNECT.
  explicit tinyproxy_server(const std::filesystem::path& work);
  ~tinyproxy_server();
  tinyproxy_server(const tinyproxy_server&) = delete;
  tinyproxy_server& operator=(const tinyproxy_server&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const; // http://127.0.0.1:port
  std::string log() const; // tinyproxy's own log (one line per request, CONNECT included)

 private:
  std::filesystem::path work_;
  unsigned short port_ = 0;
  std::unique_ptr<child_process> process_;
};

} // namespace newsdesk::testing
