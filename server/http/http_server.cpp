#include "server/http/http_server.hpp"

#include "server/core/log.hpp"
#include "server/http/event_loops.hpp"
#include "server/http/representation.hpp"
#include "server/http/request_reader.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace newsdesk::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {
// What stop() needs from an open connection.
struct connection_base {
  virtual ~connection_base() = default;
  // Called from any thread when the server stops.
  virtual void on_server_stop() = 0;
};

// The network an address belongs to, as stream budgets count them: its IPv4 /24 or IPv6 /64
// ("203.0.113.0/24", "2001:db8:1:2::/64"); an IPv4 address written in IPv6 form is IPv4. A
// string that is no address is its own range.
std::string range_of(const std::string& address) {
  boost::system::error_code ec;
  auto ip = net::ip::make_address(address, ec);
  if (ec)
    return address;
  if (ip.is_v6() && ip.to_v6().is_v4_mapped())
    ip = net::ip::make_address_v4(net::ip::v4_mapped, ip.to_v6());
  if (ip.is_v4()) {
    auto bytes = ip.to_v4().to_bytes();
    bytes[3] = 0;
    return net::ip::address_v4(bytes).to_string() + "/24";
  }
  auto bytes = ip.to_v6().to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return net::ip::address_v6(bytes).to_string() + "/64";
}

} // namespace

struct http_server::state {
  state(net::io_context& ioc_, request_handler h, http_server_limits l, event_loops* loops_)
      : ioc(ioc_)
      , loops(loops_)
      , handler(std::move(h))
      , limits(l)
      , acceptor(net::make_strand(ioc_))
      , retry_timer(acceptor.get_executor()) {}

  net::io_context& ioc;
  event_loops* loops; // where connections run; none: on strands of ioc
  request_handler handler;
  http_server_limits limits;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  std::chrono::milliseconds backoff{0};
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::uint64_t> refused{0};

  // What a connection holds of the budgets (http_server_limits): a plain slot, a stream slot,
  // or a refusal slot while its 503 goes out.
  enum class slot { plain, stream, refusing };
  std::mutex budget_mutex; // guards the counts and the refusal log below
  std::size_t plain = 0, streams = 0, refusing = 0;
  struct per_address {
    std::size_t plain = 0, streams = 0;
  };
  std::unordered_map<std::string, per_address> by_address;
  std::unordered_map<std::string, std::size_t> streams_by_range; // range_of(address) -> streams

  // The streams one address range may hold (http_server_limits::max_streams_per_range); 0: any.
  std::size_t streams_per_range() const {
    if (limits.max_streams_per_range != 0)
      return limits.max_streams_per_range;
    if (limits.max_streams_per_ip == 0)
      return 0;
    return std::max(limits.max_streams_per_ip, limits.max_streams / 8);
  }
  std::map<std::string, std::uint64_t> refusals_unlogged; // by reason
  std::chrono::steady_clock::time_point last_refusal_log{};

  // Takes a plain slot for `address`. Otherwise returns why not ("connections",
  // "connections_per_ip") and, in `refusing_slot`, whether a refusal slot was taken instead.
  const char* admit(const std::string& address, bool& refusing_slot) {
    std::lock_guard lock(budget_mutex);
    auto& mine = by_address[address];
    const char* reason = nullptr;
    if (plain >= limits.max_connections)
      reason = "connections";
    else if (limits.max_connections_per_ip && mine.plain >= limits.max_connections_per_ip)
      reason = "connections_per_ip";
    if (!reason) {
      ++plain;
      ++mine.plain;
      return nullptr;
    }
    refusing_slot = refusing < limits.max_refusing;
    if (refusing_slot)
      ++refusing;
    if (mine.plain == 0 && mine.streams == 0)
      by_address.erase(address);
    note_refusal_locked(reason);
    return reason;
  }

  // Moves a plain slot to a stream slot, or returns why not ("streams", "streams_per_ip",
  // "streams_per_range").
  const char* to_stream(const std::string& address, const std::string& range) {
    const auto per_range = streams_per_range();
    std::lock_guard lock(budget_mutex);
    auto& mine = by_address[address];
    const char* reason = nullptr;
    if (streams >= limits.max_streams)
      reason = "streams";
    else if (limits.max_streams_per_ip && mine.streams >= limits.max_streams_per_ip)
      reason = "streams_per_ip";
    else if (auto it = streams_by_range.find(range);
             per_range && it != streams_by_range.end() && it->second >= per_range)
      reason = "streams_per_range";
    if (reason) {
      if (auto r = streams_by_range.find(range); r != streams_by_range.end() && r->second == 0)
        streams_by_range.erase(r);
      note_refusal_locked(reason);
      return reason;
    }
    --plain;
    --mine.plain;
    ++streams;
    ++mine.streams;
    ++streams_by_range[range];
    return nullptr;
  }

  // A stream slot taken for a request that was then answered without a stream: plain again.
  void to_plain(const std::string& address, const std::string& range) {
    std::lock_guard lock(budget_mutex);
    --streams;
    ++plain;
    if (auto it = by_address.find(address); it != by_address.end()) {
      --it->second.streams;
      ++it->second.plain;
    }
    forget_range_locked(range);
  }

  void forget_range_locked(const std::string& range) {
    if (auto r = streams_by_range.find(range); r != streams_by_range.end() && --r->second == 0)
      streams_by_range.erase(r);
  }

  void release(slot kind, const std::string& address, const std::string& range) {
    std::lock_guard lock(budget_mutex);
    if (kind == slot::refusing) {
      --refusing;
      return;
    }
    auto it = by_address.find(address);
    if (kind == slot::plain) {
      --plain;
      if (it != by_address.end())
        --it->second.plain;
    } else {
      --streams;
      if (it != by_address.end())
        --it->second.streams;
      forget_range_locked(range);
    }
    if (it != by_address.end() && it->second.plain == 0 && it->second.streams == 0)
      by_address.erase(it);
  }

  // Counts a refusal; logs what was refused at most once per interval, so a flood of
  // connections cannot turn into a flood of log lines.
  void note_refusal_locked(const char* reason) {
    ++refused;
    ++refusals_unlogged[reason];
    const auto now = std::chrono::steady_clock::now();
    if (now - last_refusal_log < refusal_log_interval)
      return;
    last_refusal_log = now;
    std::string counts;
    for (const auto& [why, n] : refusals_unlogged)
      counts += " " + why + "=" + std::to_string(n);
    refusals_unlogged.clear();
    log_warn("msg=\"over a connection budget: answering 503\"" + counts +
             " open_plain=" + std::to_string(plain) + " open_streams=" + std::to_string(streams));
  }
  static constexpr std::chrono::seconds refusal_log_interval{10};

  // A connection is accepted on a strand of ioc (an accept pending on the listener never holds
  // a socket of a loop, which may be gone first when the server is destroyed), then, when there
  // are event loops, moved to the next one. Returns false when the move failed (socket closed).
  bool move_to_loop(tcp::socket& socket) {
    if (!loops)
      return true;
    error_code ec;
    const auto protocol = socket.local_endpoint(ec).protocol();
    const int fd = ec ? -1 : socket.release(ec);
    if (ec)
      return false;
    tcp::socket moved(loops->next());
    moved.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      return false;
    }
    socket = std::move(moved);
    return true;
  }

  // Every open connection, so stop() can reach the idle ones. Weak: a connection's lifetime is
  // still its chain of pending operations; it removes itself when it ends.
  std::mutex open_mutex;
  std::list<std::weak_ptr<connection_base>> open;
};

namespace {

// An absolute-form target ("GET http://host/news", as proxies send; the scheme in any case,
// RFC 3986 3.1) split into the authority it names and the origin-form rest, "/" when empty.
struct absolute_target {
  std::string_view host;
  std::string_view rest;
};

// iequals here is http_message's, never beast::iequals: Beast 1.81's reads one byte past both
// strings when they differ only in case, and a target is stored without a terminator (a request
// for "HTTP://" read past its heap block under the fuzzer).
std::optional<absolute_target> split_absolute(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() < scheme.size() || !iequals(target.substr(0, scheme.size()), scheme))
      continue;
    const auto after = target.substr(scheme.size());
    const auto slash = std::min(after.find_first_of("/?"), after.size());
    return absolute_target{after.substr(0, slash), after.substr(slash)};
  }
  return std::nullopt;
}

http_request to_request(http::request<http::string_body>& msg) {
  http_request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.headers.reserve(static_cast<std::size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& field : msg)
    req.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  req.body = std::move(msg.body());
  // RFC 9112 3.2.2: an absolute-form target's host replaces the Host header, and the rest is
  // the usual origin-form.
  if (const auto absolute = split_absolute(msg.target())) {
    std::string host(absolute->host);
    std::string origin(absolute->rest);
    if (origin.empty() || origin.front() == '?')
      origin.insert(0, "/");
    req.target = std::move(origin);
    std::erase_if(req.headers, [](const auto& h) { return iequals(h.first, "Host"); });
    req.headers.emplace_back("Host", std::move(host));
  }
  return req;
}

// RFC 9112 3.2: an HTTP/1.1 request without exactly one Host header is answered 400 (a target
// in absolute form carries its own). HTTP/1.0 clients may omit it.
bool host_ok(const http::request<http::string_body>& msg) {
  if (msg.version() < 11 || split_absolute(msg.target()))
    return true;
  return msg.count(http::field::host) == 1;
}

// The host a request names: its absolute-form target's authority, else its Host header.
std::string_view named_host(const http::request<http::string_body>& msg) {
  if (const auto absolute = split_absolute(msg.target()))
    return absolute->host;
  return msg[http::field::host];
}

// RFC 9110 7.2: a Host with an invalid value is a 400. Its port, when it has one, must be 1 to
// 65535 in digits: anything else ("name:99999999999") would otherwise reach the feeds' links.
bool host_port_ok(std::string_view host) {
  std::string_view after_name;
  if (host.starts_with('[')) { // an IPv6 literal: its colons are not the port's
    const auto close = host.find(']');
    if (close == std::string_view::npos)
      return false;
    after_name = host.substr(close + 1);
  } else {
    after_name = host.substr(std::min(host.find(':'), host.size()));
  }
  if (after_name.empty())
    return true;
  const auto port = after_name.substr(1);
  if (after_name.front() != ':' || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const auto value = std::stoul(std::string(port));
  return value >= 1 && value <= 65535;
}

// A request refused for how it is framed or addressed: its status and text (status 0: none).
struct refusal {
  unsigned status = 0;
  std::string text;
};

// RFC 9112's rules on a request's Host and framing that the parser leaves to the server, in
// one place. Transfer-Encoding (6.1, 6.3): a list whose last coding is not chunked leaves the
// body's length unknown (the parser reads no body, and the body's bytes would be taken for the
// next request: smuggling), so it is a 400 and the connection closes; in HTTP/1.0 it is faulty
// framing; chunked twice is malformed; other codings are not implemented here (501).
refusal check_request(const http::request<http::string_body>& msg) {
  if (!host_ok(msg))
    return {400, "Bad Request: HTTP/1.1 needs one Host header"};
  if (!host_port_ok(named_host(msg)))
    return {400, "Bad Request: the Host's port must be a number from 1 to 65535"};
  if (msg.count(http::field::transfer_encoding) == 0)
    return {};
  if (msg.version() < 11)
    return {400, "Bad Request: Transfer-Encoding in an HTTP/1.0 request"};
  std::vector<std::string_view> codings; // of every Transfer-Encoding line, in order
  const auto [first, last] = msg.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    std::string_view list = field->value();
    while (!list.empty()) {
      auto comma = list.find(',');
      auto coding = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
        coding.remove_prefix(1);
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
        coding.remove_suffix(1);
      if (!coding.empty())
        codings.push_back(coding);
    }
  }
  if (codings.empty() || !iequals(codings.back(), "chunked"))
    return {400, "Bad Request: Transfer-Encoding must end with chunked"};
  codings.pop_back();
  if (std::any_of(codings.begin(), codings.end(),
                  [](std::string_view c) { return iequals(c, "chunked"); }))
    return {400, "Bad Request: chunked applied more than once"};
  if (!codings.empty())
    return {501, "Not Implemented: transfer coding " + std::string(codings.front().substr(0, 64))};
  return {};
}

// The Date header's value (RFC 9110 6.6.1: an origin server with a clock sends one), formatted
// once a second per thread.
const std::string& date_now() {
  thread_local std::time_t shown = -1;
  thread_local std::string text;
  const auto now = std::time(nullptr);
  if (now != shown) {
    text = http_date(static_cast<std::int64_t>(now) * 1000);
    shown = now;
  }
  return text;
}

// The status line and headers of `res` through the blank line, for an HTTP/1.`version % 10`
// request, into `head` (its earlier content replaced; a connection reuses one buffer, so a
// response costs no allocation here). `content_length`: the body's size, or none (a streamed
// body, or a status that has no body). A header that could split the response is left out and
// logged.
void format_head(std::string& head, const http_response& res, unsigned version, bool keep_alive,
                 std::optional<std::size_t> content_length) {
  head.clear();
  head.reserve(256 + res.content_type.size() + res.headers.size() * 64 +
               (res.header_lines ? res.header_lines->size() : 0));
  head += version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  append_decimal(head, res.status);
  head += ' ';
  head += reason_phrase(res.status);
  append_header_line(head, "Server", "newsdesk");
  append_header_line(head, "Date", date_now());
  if (!res.content_type.empty() && header_fits("Content-Type", res.content_type))
    append_header_line(head, "Content-Type", res.content_type);
  for (const auto& [name, value] : res.headers)
    append_checked_header_line(head, name, value);
  if (res.header_lines) // checked when they were formatted
    head += *res.header_lines;
  if (content_length) {
    head += "\r\nContent-Length: ";
    append_decimal(head, *content_length);
  }
  // HTTP/1.1 keeps connections open unless told; HTTP/1.0 closes them unless told.
  if (version >= 11 && !keep_alive)
    append_header_line(head, "Connection", "close");
  else if (version < 11 && keep_alive)
    append_header_line(head, "Connection", "keep-alive");
  head += "\r\n\r\n";
}

void fail(error_code ec, const char* step) {
  log(log_level::debug,
      std::string("msg=\"http ") + step + " failed\" error=" + logfmt_quoted(ec.message()));
}

// One client connection. Its lifetime is the chain of pending operations.
class session : public connection_base, public std::enable_shared_from_this<session> {
 public:
  // `kind`: the budget slot serve() took for this connection (plain, or refusing: it reads one
  // request and answers 503).
  session(tcp::socket&& socket, std::shared_ptr<http_server::state> st, std::string address,
          std::string range, http_server::state::slot kind)
      : socket_(std::move(socket))
      , buffer_(request_reader::make_buffer(st->limits))
      , state_(std::move(st))
      , deadline_timer_(socket_.get_executor())
      , file_deadline_(socket_.get_executor())
      , address_(std::move(address))
      , range_(std::move(range))
      , slot_(kind) {
    ++state_->connections;
    // Every response ends with a flush: without this, Nagle holds a body's last partial segment
    // until the client acknowledges, and a client delaying its ACK stalls it ~40 ms.
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
  }
  ~session() override {
    if (registered_) {
      std::lock_guard lock(state_->open_mutex);
      state_->open.erase(*registered_);
    }
    state_->release(slot_, address_, range_);
    --state_->connections;
  }

  void run() {
    {
      std::lock_guard lock(state_->open_mutex);
      registered_ = state_->open.insert(state_->open.end(), weak_from_this());
    }
    net::dispatch(socket_.get_executor(),
                  beast::bind_front_handler(&session::do_read, shared_from_this()));
  }

  void on_server_stop() override {
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->notice_stop(); });
  }

 private:
  void do_read() {
    reader_.emplace(state_->limits);
    auto timeout = state_->limits.read_timeout;
    if (state_->stopping)
      timeout = std::min(timeout, state_->limits.stop_idle_grace);
    if (slot_ == http_server::state::slot::refusing) // its 503 waits only briefly for a request
      timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(2));
    set_deadline(timeout); // one deadline for the whole request, however many reads it takes
    reading_ = true;
    parse_buffered();
  }

  // Parses what has arrived; reads more while the request is incomplete.
  void parse_buffered() {
    auto ec = reader_->parse(buffer_);
    if (ec != http::error::need_more)
      return on_read(ec);
    auto space = reader_->prepare(buffer_, ec);
    if (ec)
      return on_read(ec);
    socket_.async_read_some(space,
                            beast::bind_front_handler(&session::on_read_some, shared_from_this()));
  }

  void on_read_some(error_code ec, std::size_t bytes) {
    buffer_.commit(bytes);
    if (ec == net::error::eof)
      ec = reader_->parse_eof();
    if (ec)
      return on_read(ec);
    parse_buffered();
  }

  // The server is stopping. A connection waiting for its next request, with nothing of it read
  // yet, restarts its read under the short stop_idle_grace deadline (do_read sees `stopping`);
  // a request being read, handled or written is left to finish.
  void notice_stop() {
    if (!reading_ || reader_->parser().got_some() || buffer_.size() != 0)
      return;
    restart_read_ = true;
    error_code ignored;
    socket_.cancel(ignored); // no bytes are lost: the request, if any, is still in the socket
  }

  // The request is whole (ec clear), refused, or the connection ended.
  void on_read(error_code ec) {
    reading_ = false;
    clear_deadline(); // the handler has as long as it needs; the write gets its own
    if (std::exchange(restart_read_, false) && ec == net::error::operation_aborted && !timed_out_)
      return do_read();
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof)
      return do_close();
    if (unsigned status = status_for_read_error(ec))
      return send_error(status);
    if (ec)
      return fail(ec, "read");

    auto& msg = reader_->parser().get();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    head_ = msg.method() == http::verb::head;
    if (slot_ == http_server::state::slot::refusing) {
      keep_alive_ = false;
      return do_write(over_budget());
    }
    if (auto refused = check_request(msg); refused.status != 0) {
      keep_alive_ = false; // what follows on the connection cannot be told apart from a body
      return do_write(text_response(refused.status, std::move(refused.text)));
    }

    http_request req = to_request(msg);
    if (slot_ == http_server::state::slot::plain && !head_)
      req.reserve_stream = [weak = weak_from_this()]() -> std::optional<http_response> {
        auto self = weak.lock();
        if (!self || self->slot_ != http_server::state::slot::plain)
          return std::nullopt;
        if (self->state_->to_stream(self->address_, self->range_))
          return self->over_budget();
        self->slot_ = http_server::state::slot::stream;
        return std::nullopt;
      };

    // The handler may answer from any thread; writing happens back on this connection's strand
    // or loop (at once when it answers there, before returning: no trip through the queue).
    auto self = shared_from_this();
    state_->handler(std::move(req), [self](http_response res) {
      net::dispatch(self->socket_.get_executor(),
                    [self, res = std::move(res)]() mutable { self->do_write(std::move(res)); });
    });
  }

  http_response over_budget() const {
    return text_response(503, "Service Unavailable: too many connections; try again shortly")
        .with_header("Retry-After", std::to_string(state_->limits.retry_after.count()));
  }

  void send_error(unsigned status) {
    keep_alive_ = false;
    head_ = false;
    version_ = 11;
    do_write(text_response(status));
  }

  void do_write(http_response res) {
    if (res.take_over)
      return hand_over(std::move(res.take_over));
    if (state_->stopping)
      keep_alive_ = false;
    set_deadline(state_->limits.write_timeout);
    if (res.stream && !head_ && slot_ == http_server::state::slot::stream)
      return start_stream(std::move(res)); // its slot reserved by the handler
    if (res.stream && !head_ && slot_ == http_server::state::slot::plain) {
      if (!state_->to_stream(address_, range_))
        return start_stream(std::move(res));
      res.stream->close(); // over the streams' budget: the client retries later
      res = over_budget();
      keep_alive_ = false;
    }
    if (res.stream)
      res.stream->close();
    if (slot_ == http_server::state::slot::stream) { // reserved, then answered otherwise
      state_->to_plain(address_, range_);
      slot_ = http_server::state::slot::plain;
    }
    const bool bodiless_status = res.status / 100 == 1 || res.status == 204 || res.status == 304;
    // One response is written at a time (the next request is read once it is out), so the
    // connection keeps it, and its head's buffer, in members: no allocation per response.
    format_head(head_buffer_, res, version_, keep_alive_,
                bodiless_status ? std::nullopt : std::optional(res.body_size()));
    response_ = std::move(res);
    const auto& file = response_.file_body;
    if (head_ || bodiless_status)
      return write_out({});
    if (file && file->size() > max_copied_body)
      return send_head_then_file();
    write_out(file ? file->bytes() : std::string_view(response_.body));
  }

  // An upgrade (http_response::take_over): the socket goes to whoever speaks the new protocol,
  // and this connection ends without a write (its budget slot goes with it).
  void hand_over(std::function<void(int)> take_over) {
    clear_deadline();
    if (head_ || buffer_.size() != 0 || state_->stopping) { // bytes already read would be lost
      keep_alive_ = false;
      return do_write(state_->stopping ? over_budget() : text_response(400));
    }
    error_code ec;
    const int fd = socket_.release(ec);
    if (ec)
      return fail(ec, "hand over");
    take_over(fd);
  }

  // Bodies up to this size go out with their head in one write (a copy into the socket costs
  // less than the extra system calls of sendfile); larger ones are sent from the file.
  static constexpr std::size_t max_copied_body = 64 * 1024;

  void write_out(std::string_view body) {
    const std::array<net::const_buffer, 2> buffers{net::buffer(head_buffer_),
                                                   net::buffer(body.data(), body.size())};
    net::async_write(socket_, buffers, [self = shared_from_this()](error_code ec, std::size_t n) {
      self->on_write(ec, n);
    });
  }

  // The head with MSG_MORE, so the kernel sends it in the same segments as the body's first
  // bytes, then the body with sendfile(2). The head goes out at once when the socket has room
  // (it nearly always has: a response is written only after its request was read).
  void send_head_then_file() {
    const auto& head = head_buffer_;
    auto n = ::send(socket_.native_handle(), head.data(), head.size(),
                    MSG_MORE | MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(head.size()))
      return send_file(response_.file_body, 0);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return on_write(error_code(errno, boost::system::system_category()), 0);
    const std::size_t sent = n > 0 ? static_cast<std::size_t>(n) : 0;
    net::async_write(socket_, net::buffer(head.data() + sent, head.size() - sent),
                     [self = shared_from_this()](error_code ec, std::size_t written) {
                       if (ec)
                         return self->on_write(ec, written);
                       self->send_file(self->response_.file_body, 0);
                     });
  }

  // Sends `file` from `offset` on: as much as the socket takes now, then again when it can take
  // more, each wait within the write deadline (a slow reader of a large body is fine as long as
  // it keeps reading).
  void send_file(std::shared_ptr<const memory_file> file, off_t offset) {
    clear_deadline();
    error_code ec;
    if (!socket_.native_non_blocking())
      socket_.native_non_blocking(true, ec); // sendfile must not block a network thread
    const auto size = static_cast<off_t>(file->size());
    while (!ec && offset < size) {
      auto n = ::sendfile(socket_.native_handle(), file->fd(), &offset,
                          static_cast<std::size_t>(size - offset));
      if (n > 0 || (n < 0 && errno == EINTR))
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // The deadline may fire just as the socket turns writable, its handler already queued
        // where cancel() cannot stop it: it acts only if this wait is still the current one.
        const auto wait = ++file_waits_;
        file_deadline_.expires_after(state_->limits.write_timeout);
        file_deadline_.async_wait([self = shared_from_this(), wait](error_code timer_ec) {
          error_code ignored;
          if (!timer_ec && self->file_waits_ == wait) // the client stopped reading: give up
            self->socket_.cancel(ignored);
        });
        socket_.async_wait(tcp::socket::wait_write,
                           [self = shared_from_this(), file, offset](error_code wait_ec) mutable {
                             ++self->file_waits_;
                             self->file_deadline_.cancel();
                             if (wait_ec)
                               return self->on_write(wait_ec, 0);
                             self->send_file(std::move(file), offset);
                           });
        return;
      }
      ec = n == 0 ? error_code(net::error::eof)
                  : error_code(errno, boost::system::system_category());
    }
    on_write(ec, static_cast<std::size_t>(offset));
  }

  void on_write(error_code ec, std::size_t) {
    clear_deadline();
    response_ = {}; // an idle connection holds no representation's bytes
    if (ec == net::error::operation_aborted || ec == net::error::broken_pipe ||
        ec == net::error::connection_reset)
      return;
    if (ec)
      return fail(ec, "write");
    if (!keep_alive_)
      return do_close();
    do_read();
  }

  void do_close() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  // Deadlines. A read or a write sets one; one timer per connection enforces them. The timer is
  // rearmed only when a deadline comes earlier than the one it waits for (after stop(), say):
  // otherwise it wakes at its time, finds the deadline moved on, and waits again. So a request
  // costs two stores of the time, not two reschedulings of a timer in a queue every network
  // thread shares (which is what a deadline per operation, Beast's, costs).
  using clock = std::chrono::steady_clock;

  void set_deadline(std::chrono::milliseconds after) {
    deadline_ = clock::now() + after;
    if (!timer_waiting_ || deadline_ < timer_expiry_)
      arm_deadline_timer();
  }

  void clear_deadline() { deadline_ = clock::time_point::max(); }

  void arm_deadline_timer() {
    timer_waiting_ = true;
    timer_expiry_ = deadline_;
    deadline_timer_.expires_at(deadline_); // a wait pending for a later time ends, aborted
    // Weak: the pending read or write holds the connection, not its timer.
    deadline_timer_.async_wait([weak = weak_from_this(), expiry = deadline_](error_code ec) {
      if (auto self = weak.lock())
        self->on_deadline_timer(ec, expiry);
    });
  }

  void on_deadline_timer(error_code ec, clock::time_point expiry) {
    if (expiry != timer_expiry_) // rearmed since: a newer wait is pending
      return;
    timer_waiting_ = false;
    if (ec || deadline_ == clock::time_point::max())
      return; // nothing to bound now: the next read or write arms it again
    if (clock::now() < deadline_)
      return arm_deadline_timer();
    // The read or write pending took too long: the socket is closed (a cancel could land
    // between two steps of a composed read or write and miss the next), so what is pending ends
    // with an error, and the connection with it.
    timed_out_ = true;
    error_code ignored;
    socket_.close(ignored);
  }

  // A streamed body: the headers, then whatever the event stream produces until it closes.
  void start_stream(http_response res) {
    slot_ = http_server::state::slot::stream; // to_stream() or the handler moved the slot
    keep_alive_ = false;                      // the body ends when the connection does
    events_ = std::move(res.stream);
    // A stream may stay open for hours: what reading its request took goes now (the parser
    // holds the request's headers, the buffer what the client sent).
    reader_.reset();
    buffer_ = beast::flat_buffer();
    auto head = std::make_shared<std::string>();
    format_head(*head, res, version_, false, std::nullopt);
    net::async_write(
        socket_, net::buffer(*head), [self = shared_from_this(), head](error_code ec, std::size_t) {
          self->clear_deadline(); // idle between events; each write has its own deadline
          if (ec)
            return self->events_->close();
          self->watch_stream_peer();
          // The stream holds the session while it is open; closing it releases the session.
          self->events_->on_activity([self] {
            net::post(self->socket_.get_executor(), [self] { self->do_stream_write(); });
          });
        });
  }

  // A streaming client sends nothing more: a read ends only when it leaves (or sends what it
  // should not), and the stream closes then rather than at the next event or heartbeat, so a
  // client gone frees its slot and memory at once.
  void watch_stream_peer() {
    socket_.async_read_some(net::buffer(peer_byte_),
                            [self = shared_from_this()](error_code, std::size_t) {
                              self->peer_gone_ = true;
                              self->events_->close();
                            });
  }

  void do_stream_write() {
    if (writing_events_)
      return;
    auto chunks = std::make_shared<std::vector<event_stream::chunk>>(events_->take());
    if (chunks->empty()) {
      if (!events_->closed())
        return;
      error_code ignored;
      if (peer_gone_)
        return socket_.close(ignored); // nothing to tell a client that left
      // Ended here: the client is told (FIN) and has the write deadline to close its side, while
      // watch_stream_peer's read holds the connection.
      set_deadline(state_->limits.write_timeout);
      do_close();
      return;
    }
    std::vector<net::const_buffer> buffers;
    buffers.reserve(chunks->size());
    for (const auto& c : *chunks)
      buffers.push_back(net::buffer(*c));
    writing_events_ = true;
    set_deadline(state_->limits.write_timeout);
    net::async_write(socket_, buffers,
                     [self = shared_from_this(), chunks](error_code ec, std::size_t) {
                       self->writing_events_ = false;
                       self->clear_deadline();
                       if (ec)
                         return self->events_->close(); // the client left or stopped reading
                       self->do_stream_write();
                     });
  }

  tcp::socket socket_;
  beast::flat_buffer buffer_; // bounded: see request_reader
  std::optional<request_reader> reader_;
  std::shared_ptr<http_server::state> state_;
  net::steady_timer deadline_timer_;                      // enforces deadline_ (see set_deadline)
  clock::time_point deadline_ = clock::time_point::max(); // for the read or write pending
  clock::time_point timer_expiry_{};                      // when the timer's pending wait ends
  bool timer_waiting_ = false;
  bool timed_out_ = false;          // a deadline passed: the connection is ending
  net::steady_timer file_deadline_; // bounds each wait while sending a file body
  std::uint64_t file_waits_ = 0;    // which wait the deadline belongs to
  bool keep_alive_ = false;
  bool head_ = false;
  unsigned version_ = 11;
  std::string head_buffer_;              // the response being written: its head, formatted here
  http_response response_;               // and what owns its body's bytes until they are sent
  std::shared_ptr<event_stream> events_; // set while streaming a body
  bool writing_events_ = false;
  bool reading_ = false;      // reading a request
  bool restart_read_ = false; // notice_stop() cancelled that read to restart it
  std::optional<std::list<std::weak_ptr<connection_base>>::iterator> registered_;
  const std::string address_;       // the client's, for the per-address budgets
  const std::string range_;         // its address range, for the streams' per-range budget
  std::array<char, 1> peer_byte_{}; // what watch_stream_peer reads into
  bool peer_gone_ = false;          // that read ended: the client left
  http_server::state::slot slot_;   // the budget slot this connection holds
};

void do_accept(const std::shared_ptr<http_server::state>& st);

// Starts a session for an accepted connection: a plain one within the budgets, one that answers
// 503 past them, or none (the socket is closed) when even the refusals' budget is spent.
void serve(const std::shared_ptr<http_server::state>& st, tcp::socket socket) {
  error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec)
    return; // the client left before it was accepted
  auto address = endpoint.address().to_string();
  auto range = range_of(address);
  if (!st->move_to_loop(socket))
    return;
  bool refusing = false;
  if (!st->admit(address, refusing))
    return std::make_shared<session>(std::move(socket), st, std::move(address), std::move(range),
                                     http_server::state::slot::plain)
        ->run();
  if (!refusing) {
    socket.close(ec);
    return;
  }
  std::make_shared<session>(std::move(socket), st, std::move(address), std::move(range),
                            http_server::state::slot::refusing)
      ->run();
}

void on_accept(const std::shared_ptr<http_server::state>& st, error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted)
    return;
  if (!ec) {
    // Served even when stop() has closed the listener since: the client is connected and may
    // have sent its request, and dropping the socket would reset it unanswered.
    st->backoff = std::chrono::milliseconds{0};
    serve(st, std::move(socket));
  }
  if (!st->acceptor.is_open())
    return;
  if (ec) {
    // Out of descriptors (EMFILE/ENFILE) or a transient network error: wait and retry, with
    // back-off, so the loop neither spins nor dies.
    st->backoff = std::min(std::max(st->backoff * 2, std::chrono::milliseconds{10}),
                           std::chrono::milliseconds{1000});
    log_warn("msg=\"accept failed, retrying\" error=" + logfmt_quoted(ec.message()) +
             " retry_ms=" + std::to_string(st->backoff.count()));
    st->retry_timer.expires_after(st->backoff);
    st->retry_timer.async_wait([st](error_code wait_ec) {
      if (!wait_ec)
        do_accept(st);
    });
    return;
  }
  do_accept(st);
}

void do_accept(const std::shared_ptr<http_server::state>& st) {
  st->acceptor.async_accept(net::make_strand(st->ioc), [st](error_code ec, tcp::socket socket) {
    on_accept(st, ec, std::move(socket));
  });
}

// A socket stand-in for read_requests(): hands out at most `chunk` bytes per read, then EOF.
class memory_stream {
 public:
  memory_stream(std::string_view bytes, std::size_t chunk)
      : rest_(bytes)
      , chunk_(std::max<std::size_t>(chunk, 1)) {}
  template <class Buffers> std::size_t read_some(const Buffers& buffers, error_code& ec) {
    if (rest_.empty()) {
      ec = net::error::eof;
      return 0;
    }
    ec = {};
    auto n = net::buffer_copy(buffers, net::buffer(rest_.data(), std::min(rest_.size(), chunk_)));
    rest_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view rest_;
  std::size_t chunk_;
};

} // namespace

unsigned read_requests(std::string_view bytes, std::size_t chunk, const http_server_limits& limits,
                       const std::function<void(http_request)>& on_request) {
  memory_stream stream(bytes, chunk);
  auto buffer = request_reader::make_buffer(limits);
  for (;;) {
    request_reader reader(limits);
    error_code ec;
    while ((ec = reader.parse(buffer)) == http::error::need_more) { // the session's read loop
      auto space = reader.prepare(buffer, ec);
      if (ec)
        break;
      buffer.commit(stream.read_some(space, ec));
      if (ec == net::error::eof)
        ec = reader.parse_eof();
      if (ec)
        break;
    }
    if (ec)
      return status_for_read_error(ec);
    auto& msg = reader.parser().get();
    if (auto refused = check_request(msg); refused.status != 0)
      return refused.status;
    const bool keep_alive = msg.keep_alive();
    on_request(to_request(msg));
    if (!keep_alive)
      return 0;
  }
}

http_server::http_server(net::io_context& ioc, request_handler handler, http_server_limits limits,
                         event_loops* loops)
    : state_(std::make_shared<state>(ioc, std::move(handler), limits, loops)) {}

http_server::~http_server() {
  stop();
}

void http_server::listen(const std::string& address, unsigned short port) {
  auto where = address + ":" + std::to_string(port);
  error_code ec;
  auto ip = net::ip::make_address(address, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + where + ": '" + address +
                             "' is not an IP address");
  tcp::endpoint endpoint{ip, port};
  auto& acc = state_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec)
    acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    acc.bind(endpoint, ec);
  if (!ec)
    acc.listen(net::socket_base::max_listen_connections, ec);
  if (!ec)
    return;
  error_code ignored;
  acc.close(ignored);
  throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
}

unsigned short http_server::port() const {
  error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

void http_server::start() {
  net::dispatch(state_->acceptor.get_executor(), [st = state_] { do_accept(st); });
}

void http_server::stop() {
  state_->stopping = true;
  net::dispatch(state_->acceptor.get_executor(), [st = state_] {
    // Closing a listener resets the connections the kernel has completed but nobody accepted
    // yet, whose clients may already have sent a request: accept and serve those first.
    error_code ec;
    if (st->acceptor.is_open())
      st->acceptor.non_blocking(true, ec);
    while (!ec && st->acceptor.is_open()) {
      tcp::socket socket(net::make_strand(st->ioc));
      st->acceptor.accept(socket, ec); // would_block once the backlog is empty
      if (!ec)
        serve(st, std::move(socket));
    }
    error_code ignored;
    st->acceptor.close(ignored);
    st->retry_timer.cancel();
  });
  // Connections idle between requests would otherwise keep shutdown waiting for read_timeout.
  std::vector<std::shared_ptr<connection_base>> open;
  {
    std::lock_guard lock(state_->open_mutex);
    for (auto& weak : state_->open)
      if (auto c = weak.lock())
        open.push_back(std::move(c));
  }
  for (auto& c : open)
    c->on_server_stop();
}

std::size_t http_server::open_connections() const {
  return state_->connections.load();
}

std::size_t http_server::open_streams() const {
  std::lock_guard lock(state_->budget_mutex);
  return state_->streams;
}

std::uint64_t http_server::refused() const {
  return state_->refused.load();
}

} // namespace newsdesk::server
