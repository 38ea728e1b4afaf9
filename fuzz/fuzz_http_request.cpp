// libFuzzer target: arbitrary bytes on an HTTP connection, without a socket.
//
// The bytes go through server::read_requests(), which reads them with the connection's own
// Beast parser, limits (http_server_limits defaults, as served) and error-to-status mapping,
// arriving in reads of a fuzzed size. Every request a connection would hand to its handler is
// then routed as app::handle routes /static/ (the part after "/static/", still percent-encoded)
// into static_files::serve over a temporary folder, and asked the accessors routes use.
//
// Input: byte 0 picks the read size, the rest is what the client sends.
// Checked: nothing crashes, leaks or grows without bound; refused requests get 400, 413, 431 or
// 501 (a transfer coding other than chunked);
// no request carries more header or body bytes than the limits allow; /static never serves a
// file outside its folder (a secret beside it, a symlink pointing out), and only 200, 304 or 404.
#include "server/http/http_server.hpp"
#include "server/http/static_files.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace newsdesk::server;

void require(bool ok) {
  if (!ok)
    std::abort();
}

constexpr std::string_view secret = "SECRET-OUTSIDE-STATIC";

void write_file(const fs::path& p, std::string_view text) {
  std::ofstream(p, std::ios::binary) << text;
}

// A temporary site: <tmp>/static/{news.css, app.js, sub/a.txt, out -> ../secret.txt}, and
// <tmp>/secret.txt beside the folder. Created once per process, removed at exit.
struct fixture {
  fs::path dir;
  fs::path root;
  static_files files;

  static fs::path make() {
    auto d = fs::temp_directory_path() / ("newsdesk-fuzz-http-" + std::to_string(::getpid()));
    fs::create_directories(d / "static" / "sub");
    write_file(d / "static" / "news.css", "body { color: #111; }\n");
    write_file(d / "static" / "app.js", "console.log(1);\n");
    write_file(d / "static" / "sub" / "a.txt", "a\n");
    write_file(d / "static" / ".hidden", secret);
    write_file(d / "secret.txt", secret);
    std::error_code ec;
    fs::create_symlink(d / "secret.txt", d / "static" / "out", ec);
    return d;
  }
  fixture()
      : dir(make())
      , root(dir / "static")
      , files(root) {}
  ~fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

fixture& site() {
  static fixture f;
  return f;
}

const http_server_limits limits{}; // what newsdesk serves with unless configured otherwise

void route(const http_request& req) {
  // What the session and the routes read from every request.
  const auto path = req.path();
  (void)req.query();
  (void)req.header("If-None-Match");
  (void)req.header("host");
  require(req.body.size() <= limits.max_body_bytes);
  std::size_t header_bytes = req.method.size() + req.target.size();
  for (const auto& [name, value] : req.headers)
    header_bytes += name.size() + value.size();
  require(header_bytes <= limits.max_header_bytes);

  if (path.rfind("/static/", 0) != 0)
    return;
  const auto res = site().files.serve(path.substr(8), req);
  require(res.status == 200 || res.status == 304 || res.status == 404);
  require(res.body.find(secret) == std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1)
    return 0;
  static constexpr std::size_t read_sizes[] = {1, 3, 16, 512, 8192};
  const std::size_t chunk = read_sizes[data[0] % std::size(read_sizes)];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const unsigned status = read_requests(bytes, chunk, limits, route);
  require(status == 0 || status == 400 || status == 413 || status == 431 || status == 501);
  return 0;
}
