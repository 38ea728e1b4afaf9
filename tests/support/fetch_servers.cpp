#include "tests/support/fetch_servers.hpp"

#include "tests/support/http_get.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace newsdesk::testing {

namespace fs = std::filesystem;

namespace {

constexpr const char* brotli_module = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so";

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The path of `program` (on PATH, or in sbin where Debian puts servers); throws naming its
// package when there is none.
std::string program_path(const std::string& program, const std::string& package) {
  for (const char* dir :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"})
    if (auto path = fs::path(dir) / program; ::access(path.c_str(), X_OK) == 0)
      return path.string();
  throw std::runtime_error(program + " is missing (Debian " + package + "; scripts/setup)");
}

// Waits until something accepts on `port`; throws with `log` when nothing does within 10 s.
void wait_accepting(unsigned short port, const std::string& what, const fs::path& log) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (int fd = connect_loopback(port); fd >= 0) {
      ::close(fd);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error(what + " did not start: " + slurp(log));
}

} // namespace

unsigned short free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error("no free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

void run_or_throw(const std::string& command) {
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("failed: " + command);
}

nginx_server::nginx_server(const fs::path& root, const fs::path& work, bool tls)
    : work_(work)
    , port_(free_loopback_port()) {
  const auto nginx = program_path("nginx", "nginx");
  if (!fs::exists(brotli_module))
    throw std::runtime_error(std::string(brotli_module) +
                             " is missing (Debian libnginx-mod-http-brotli-static)");
  fs::create_directories(work_);
  const auto w = work_.string();
  std::string listen = "listen 127.0.0.1:" + std::to_string(port_);
  std::string certificate;
  if (tls) {
    program_path("openssl", "openssl");
    run_or_throw("cd " + w +
                 " && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext "
                 "subjectAltName=IP:127.0.0.1 -days 1 -keyout key.pem -out cert.pem 2>/dev/null");
    listen += " ssl http2";
    certificate = "ssl_certificate " + w + "/cert.pem; ssl_certificate_key " + w + "/key.pem;";
  }
  // One process in the foreground (no master, no workers, no change of user), so the test's
  // child_process owns it and its temporary folders are the test's.
  std::ofstream(work_ / "nginx.conf")
      << "load_module " << brotli_module << ";\n"
      << "daemon off;\nmaster_process off;\npid " << w << "/nginx.pid;\n"
      << "error_log " << w << "/error.log warn;\n"
      << "events { worker_connections 256; }\n"
      << "http {\n"
      << "  log_format fetch '$request|$status|$bytes_sent|$connection|$connection_requests|"
         "$http_via';\n"
      << "  access_log " << w << "/access.log fetch;\n"
      << "  default_type \"text/html\";\n"
      << "  keepalive_timeout 65;\n  gzip_static on;\n  brotli_static on;\n"
      << "  client_body_temp_path " << w << "/body;\n  proxy_temp_path " << w << "/proxy;\n"
      << "  fastcgi_temp_path " << w << "/fastcgi;\n  uwsgi_temp_path " << w << "/uwsgi;\n"
      << "  scgi_temp_path " << w << "/scgi;\n"
      << "  server { " << listen << "; " << certificate << " root " << root.string()
      << "; etag on; }\n"
      << "}\n";
  process_ = std::make_unique<child_process>(
      nginx, std::vector<std::string>{"-p", w, "-c", w + "/nginx.conf", "-e", w + "/error.log"},
      std::vector<std::string>{}, w + "/stderr.log");
  wait_accepting(port_, "nginx", work_ / "error.log");
}

nginx_server::~nginx_server() = default;

std::string nginx_server::base_url() const {
  return (fs::exists(work_ / "cert.pem") ? "https://127.0.0.1:" : "http://127.0.0.1:") +
         std::to_string(port_);
}

std::string nginx_server::access_log() const {
  return slurp(work_ / "access.log");
}

tinyproxy_server::tinyproxy_server(const fs::path& work)
    : work_(work)
    , port_(free_loopback_port()) {
  const auto tinyproxy = program_path("tinyproxy", "tinyproxy-bin");
  fs::create_directories(work_);
  const auto w = work_.string();
  std::ofstream(work_ / "tinyproxy.conf")
      << "Port " << port_ << "\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\n"
      << "Allow 127.0.0.1\nViaProxyName \"tinyproxy-test\"\n"
      << "LogFile \"" << w << "/tinyproxy.log\"\nLogLevel Connect\n";
  process_ = std::make_unique<child_process>(
      tinyproxy, std::vector<std::string>{"-d", "-c", w + "/tinyproxy.conf"},
      std::vector<std::string>{}, w + "/stderr.log");
  wait_accepting(port_, "tinyproxy", work_ / "stderr.log");
}

tinyproxy_server::~tinyproxy_server() = default;

std::string tinyproxy_server::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string tinyproxy_server::log() const {
  return slurp(work_ / "tinyproxy.log");
}

} // namespace newsdesk::testing
